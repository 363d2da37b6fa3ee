"""docker-compose.yml: checked against the code it runs, then run on loopback without Docker.

No Docker engine runs here. The file is parsed (with Compose's ``${VAR:-default}``
interpolation); every service's command is checked against the real ``archivebox``
argument parser and ``huey_consumer``'s option parser, and its Huey instance imported.
Then the same commands run as local processes against a real Postgres and Redis on
127.0.0.1 (one data dir standing in for the shared volume, one MACHINE_ID per
"container"), and archive a generated local web site with the real built-in hooks.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from huey.consumer_options import ConsumerConfig, OptionParserHandler

from archivebox import fulltext
from archivebox.cli import build_parser
from archivebox.settings import database_from_url
from helpers import REPO, VENV_BIN, Collection, wait_until
from localsite import local_site
from scaletools import database_connections
from servers import free_port

COMPOSE = REPO / "docker-compose.yml"
ARCHIVEBOX_SERVICES = ("init", "web", "ticks", "sideeffects")
LONG_RUNNING = ("postgres", "redis", "web", "ticks", "sideeffects")
SCALABLE = ("ticks", "sideeffects")
# The built-in hooks that need neither Chromium nor the network beyond 127.0.0.1.
OFFLINE_PLUGINS = "headers,wget,title,favicon,htmltotext,parse_html_urls,hashes,search"

VARIABLE = re.compile(r"\$\$|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)")


def interpolate(value, env: dict):
    """Compose's variable interpolation: ``$$``, ``$VAR``, ``${VAR}``, ``${VAR:-default}``, ``${VAR-default}``, ``${VAR:?err}``."""
    if isinstance(value, dict):
        return {key: interpolate(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, env) for item in value]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group("name") or match.group("bare")
        op, arg = match.group("op"), match.group("arg")
        current = env.get(name)
        if op in (":-", "-"):
            return arg if (current is None or (op == ":-" and current == "")) else current
        if op in (":?", "?") and (current is None or (op == ":?" and current == "")):
            raise ValueError(f"compose variable {name} is required: {arg}")
        return current or ""

    return VARIABLE.sub(substitute, value)


@pytest.fixture(scope="module")
def compose() -> dict:
    """The compose file as Compose sees it with an empty environment (every default applied)."""
    return interpolate(yaml.safe_load(COMPOSE.read_text()), {})


def argv(command) -> list[str]:
    return list(command) if isinstance(command, list) else shlex.split(command)


def test_services_volumes_and_dependencies(compose):
    services = compose["services"]
    assert set(services) == {"postgres", "redis", *ARCHIVEBOX_SERVICES}
    for name in LONG_RUNNING:
        assert services[name]["restart"] in ("always", "unless-stopped"), name
        assert services[name]["healthcheck"]["test"][0] in ("CMD", "CMD-SHELL"), name
    assert services["init"]["restart"] == "on-failure"  # a one-shot job: retried until the database answers
    for name in ARCHIVEBOX_SERVICES:
        service = services[name]
        # One data dir, shared by every container: hooks write the archive, the web UI reads it.
        assert service["volumes"] == ["archivebox-data:/data"] and service["environment"]["DATA_DIR"] == "/data"
        assert service["init"] is True  # tini as PID 1 reaps the hooks' orphans
        assert "MACHINE_ID" not in service["environment"] and "hostname" not in service
    assert {"archivebox-data", "postgres-data"} <= set(compose["volumes"])
    for name in ("web", *SCALABLE):
        assert services[name]["depends_on"] == {"postgres": {"condition": "service_healthy"},
                                                "redis": {"condition": "service_healthy"},
                                                "init": {"condition": "service_completed_successfully"}}, name
    assert services["init"]["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    for name in SCALABLE:
        # `docker compose up --scale` needs services without a fixed name or host port.
        assert not {"container_name", "ports", "hostname"} & set(services[name]), name
        assert int(str(services[name]["stop_grace_period"]).rstrip("s")) >= 10


def test_environment_wiring(compose):
    services = compose["services"]
    postgres_env = services["postgres"]["environment"]
    for name in ARCHIVEBOX_SERVICES:
        env = services[name]["environment"]
        database = database_from_url(env["DATABASE_URL"], Path("/data"))
        assert database["ENGINE"] == "django.db.backends.postgresql"
        assert (database["HOST"], database["PORT"]) == ("postgres", "5432")
        assert (database["USER"], database["PASSWORD"], database["NAME"]) == (
            postgres_env["POSTGRES_USER"], postgres_env["POSTGRES_PASSWORD"], postgres_env["POSTGRES_DB"])
        redis = re.fullmatch(r"redis://(?P<host>[^:/]+):(?P<port>\d+)/(?P<db>\d+)", env["REDIS_URL"])
        assert redis and redis["host"] == "redis" and redis["port"] == "6379"
        # An empty value would hide the same key in ArchiveBox.conf (environment wins over the file).
        assert all(str(value) != "" for value in env.values()), env
    # The password is one variable for both sides.
    raw = yaml.safe_load(COMPOSE.read_text())
    with_password = interpolate(raw, {"POSTGRES_PASSWORD": "pa55"})["services"]
    assert with_password["postgres"]["environment"]["POSTGRES_PASSWORD"] == "pa55"
    assert "archivebox:pa55@postgres" in with_password["ticks"]["environment"]["DATABASE_URL"]


def test_pool_sizes_come_from_the_environment(compose):
    raw = yaml.safe_load(COMPOSE.read_text())
    sized = interpolate(raw, {"TICKS_WORKERS": "7", "SIDEEFFECTS_WORKERS": "33"})["services"]
    assert huey_options(sized["ticks"]["command"])[0]["workers"] == 7
    assert huey_options(sized["sideeffects"]["command"])[0]["workers"] == 33
    assert sized["ticks"]["environment"]["TICKS_WORKERS"] == "7"  # `archivebox worker` in the container agrees
    assert huey_options(compose["services"]["ticks"]["command"])[0]["workers"] == 4
    assert huey_options(compose["services"]["sideeffects"]["command"])[0]["workers"] == 16


def huey_options(command) -> tuple[dict, str]:
    args = argv(command)
    assert args[0] == "huey_consumer"
    options, positional = OptionParserHandler().get_option_parser().parse_args(args[1:])
    assert len(positional) == 1
    values = {k: v for k, v in options.__dict__.items() if v is not None}
    ConsumerConfig(**values).validate()
    return values, positional[0]


def test_commands_match_the_cli(compose, tmp_path):
    services = compose["services"]
    parser = build_parser()
    init = parser.parse_args(argv(services["init"]["command"])[1:])
    assert init.command == "init"
    web = parser.parse_args(argv(services["web"]["command"])[1:])
    assert (web.command, web.bind, web.no_workers) == ("server", "0.0.0.0:8000", True)
    assert services["web"]["ports"] == ["8000:8000"]
    queues = {}
    for name in SCALABLE:
        options, path = huey_options(services[name]["command"])
        assert options["workers"] >= 1 and options.get("worker_type", "thread") == "thread"
        assert not options.get("flush_locks")  # -f would drop the locks of live workers on other hosts
        queues[name] = path
    assert queues == {"ticks": "archivebox.pools.ticks", "sideeffects": "archivebox.pools.sideeffects"}
    # Each module path is what huey_consumer imports: a Huey instance of the right queue, on Redis.
    code = ("import sys\nfrom huey.utils import load_class\n"
            "for path in sys.argv[1:]:\n    h = load_class(path)\n    print(path, type(h).__name__, h.name)\n")
    env = {**os.environ, "DATA_DIR": str(tmp_path), "REDIS_URL": "redis://127.0.0.1:9/0"}
    env.pop("DATABASE_URL", None)
    done = subprocess.run([sys.executable, "-c", code, *queues.values()], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["archivebox.pools.ticks RedisQueue ticks", "archivebox.pools.sideeffects RedisQueue sideeffects"]
    for name in SCALABLE:
        assert services[name]["healthcheck"]["test"][1:] == ["python", "-m", "archivebox.healthcheck", name]


def test_image_installs_the_postgres_driver():
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "'.[postgres]'" in dockerfile  # DATABASE_URL is a postgres URL: psycopg must be there
    assert ".venv" in (REPO / ".dockerignore").read_text().split()


# Running the services on loopback -------------------------------------------------------------

class Service:
    """One "container": a compose service's command as a local process, with its environment."""

    def __init__(self, name: str, args: list[str], env: dict, root: Path, log: Path):
        self.name, self.args, self.env, self.log = name, args, env, log
        with open(log, "wb") as out:
            self.proc = subprocess.Popen([resolve(args[0]), *args[1:]], cwd=root, env=env, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        """What `docker stop` does: SIGTERM, then SIGKILL after the grace period."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        return self.proc.returncode


def resolve(program: str) -> str:
    """The program a container's PATH finds: our venv's ``archivebox``, ``huey_consumer`` and ``python``."""
    return sys.executable if program == "python" else str(VENV_BIN / program)


def healthy(service: dict, env: dict, root: Path, replace: tuple[str, str] | None = None) -> subprocess.CompletedProcess:
    test = argv(service["healthcheck"]["test"])
    assert test[0] == "CMD"
    args = [arg.replace(*replace) if replace else arg for arg in test[1:]]
    return subprocess.run([resolve(args[0]), *args[1:]], cwd=root, env=env, capture_output=True, text=True, timeout=30)


@pytest.mark.skipif(shutil.which("wget") is None, reason="GNU wget is not installed (Debian package wget; .ci/run installs it)")
def test_compose_services_archive_a_local_site(compose, tmp_path, database_url, redis_url):
    services = compose["services"]
    data = tmp_path / "data"
    data.mkdir()
    # The container environment, with the addresses of this machine's servers and data dir.
    base = {key: value for key, value in os.environ.items() if key not in ("DJANGO_SETTINGS_MODULE", "PLUGIN_DIRS")}

    def container_env(service: str, replica: int = 1) -> dict:
        env = {**base, **services[service]["environment"], "DATA_DIR": str(data), "DATABASE_URL": database_url,
               "REDIS_URL": redis_url, "PLUGINS": OFFLINE_PLUGINS, "LOG_LEVEL": "INFO", "PYTHONUNBUFFERED": "1",
               # Each container is a machine of its own (its hostname, in Docker).
               "MACHINE_ID": f"{service}-{replica}"}
        return env

    init = subprocess.run([resolve(a) if i == 0 else a for i, a in enumerate(argv(services["init"]["command"]))], cwd=data,
                          env=container_env("init"), capture_output=True, text=True, timeout=120)
    assert init.returncode == 0, init.stderr
    port = free_port()
    web_args = [arg.replace("0.0.0.0:8000", f"127.0.0.1:{port}") for arg in argv(services["web"]["command"])]
    running = [Service("web", web_args, container_env("web"), data, tmp_path / "web.log"),
               Service("ticks", argv(services["ticks"]["command"]), container_env("ticks"), data, tmp_path / "ticks-1.log"),
               *(Service("sideeffects", argv(services["sideeffects"]["command"]), container_env("sideeffects", n), data,
                         tmp_path / f"sideeffects-{n}.log") for n in (1, 2))]  # --scale sideeffects=2
    collection = Collection(data, plugins=OFFLINE_PLUGINS, extra_env={**container_env("web"), "MACHINE_ID": "cli"})
    try:
        web_env = container_env("web")
        wait_until(lambda: healthy(services["web"], web_env, data, ("127.0.0.1:8000", f"127.0.0.1:{port}")).returncode == 0,
                   timeout=60, interval=0.2, message="the web container's health check")
        for service, replica in (("ticks", 1), ("sideeffects", 1), ("sideeffects", 2)):
            env = container_env(service, replica)
            wait_until(lambda: healthy(services[service], env, data).returncode == 0, timeout=60, interval=0.2,
                       message=f"the {service}-{replica} container's health check")
        refused = healthy(services["ticks"], container_env("ticks", 9), data)
        assert refused.returncode == 1 and "no ticks pool with a fresh heartbeat on machine ticks-9" in refused.stderr

        with local_site(tmp_path / "site", pages=6) as site:
            # `docker compose exec web archivebox add --depth 1 …`
            collection.cli("add", "--bg", "--depth", "1", site.url(site.info.index_path))
            wait_until(lambda: unfinished(collection) == 0, timeout=180, interval=0.25, message="the crawl to finish")
            requested = {request.path for request in site.server.requests}
        status, health = get_json(f"http://127.0.0.1:{port}/health/")
        snapshots = collection.list_json()
        # The web server holds at most one connection per HTTP thread (--threads, 8 by default),
        # plus its main thread and the task monitor's writer.
        web_connections = database_connections(running[0].proc.pid, database_url)
    finally:
        exit_codes = {f"{s.name}:{s.proc.pid}": s.stop() for s in running}
    logs = "\n".join(path.read_text(errors="replace") for path in sorted(tmp_path.glob("*.log")))
    assert exit_codes and set(exit_codes.values()) == {0}, (exit_codes, logs[-4000:])  # `docker stop` is a graceful stop

    assert status == 200 and health["healthy"], health
    assert 1 <= web_connections <= 8 + 2
    assert (len(health["pools"]["ticks"]), len(health["pools"]["sideeffects"])) == (1, 2)
    pools = collection_rows(collection, "SELECT m.guid, p.label FROM core_process p JOIN core_machine m ON m.id = p.machine_id "
                                        "WHERE p.kind = 'worker' ORDER BY m.guid")
    assert pools == [("sideeffects-1", "sideeffects pool (16 workers)"), ("sideeffects-2", "sideeffects pool (16 workers)"),
                     ("ticks-1", "ticks pool (4 workers)")]
    pages = {page.url: page for page in site.info.pages}
    by_url = {snapshot["url"]: snapshot for snapshot in snapshots}
    assert set(pages) <= set(by_url) and all(s["status"] == "sealed" for s in snapshots)
    assert {url: by_url[url]["title"] for url in pages} == {url: page.title for url, page in pages.items()}
    assert {page.path for page in site.info.pages} <= requested
    for snapshot in snapshots:
        index = data / "archive" / snapshot["id"] / "index.json"
        assert json.loads(index.read_text())["id"] == snapshot["id"]
    # Hooks on both side-effect "containers" wrote into the one shared data dir.
    ran_on = {row[0] for row in collection_rows(collection, "SELECT m.guid FROM core_process p JOIN core_machine m "
                                                            "ON m.id = p.machine_id WHERE p.kind = 'hook'")}
    assert ran_on == {"sideeffects-1", "sideeffects-2"}
    # Every built-in hook succeeded on every page (the feeds and the URL list are not HTML: some skip or fail).
    page_results = collection_rows(collection, "SELECT s.url, r.plugin, r.status FROM core_archiveresult r "
                                               "JOIN core_snapshot s ON s.id = r.snapshot_id")
    assert {(url, plugin, status) for url, plugin, status in page_results if url in pages} == {
        (url, plugin, "succeeded") for url in pages for plugin in OFFLINE_PLUGINS.split(",")}
    assert all(status in ("succeeded", "skipped", "noresults", "failed") for _, _, status in page_results)
    # The search index in the shared data dir finds each page by its unique word.
    for url, page in pages.items():
        assert [hit["snapshot_id"] for hit in fulltext.search(str(data / "search.sqlite3"), page.word)] == [by_url[url]["id"]]


def get_json(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def collection_rows(collection: Collection, sql: str) -> list[tuple]:
    import psycopg  # noqa: PLC0415 - the test extra has it

    with psycopg.connect(collection.env["DATABASE_URL"], autocommit=True) as conn:
        return conn.execute(sql).fetchall()


def unfinished(collection: Collection) -> int:
    return sum(row[0] for row in collection_rows(collection, """
        SELECT COUNT(*) FROM core_crawl WHERE retry_at IS NOT NULL
        UNION ALL SELECT COUNT(*) FROM core_snapshot WHERE retry_at IS NOT NULL
        UNION ALL SELECT COUNT(*) FROM core_archiveresult WHERE retry_at IS NOT NULL"""))
