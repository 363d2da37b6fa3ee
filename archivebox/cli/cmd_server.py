"""Run the web UI (admin, snapshot pages, task monitor) and, by default, both worker pools.

ADDR:PORT defaults to 127.0.0.1:8000. The server is waitress (multi-threaded WSGI). With
--no-workers only the web UI runs: start workers elsewhere (`archivebox worker`, or
`huey_consumer` on archivebox.pools.ticks and archivebox.pools.sideeffects). Log in with a
user made by `archivebox manage createsuperuser`. GET /health/ needs no login.
"""

from __future__ import annotations

import signal
import threading

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connections
from django.db.migrations.executor import MigrationExecutor

from archivebox.cli import CommandError
from archivebox.cli.cmd_worker import pool_sizes
from archivebox.cli.common import setup_django
from archivebox.pools import EmbeddedWorkers
from archivebox.web.server import BadAddress, WebServer, allowed_hosts, parse_bind


def register(parser) -> None:
    parser.add_argument("bind", nargs="?", metavar="ADDR:PORT", help="where to listen (default 127.0.0.1:8000)")
    parser.add_argument("--no-workers", action="store_true", help="serve the web UI only; run the worker pools elsewhere")
    parser.add_argument("--threads", type=int, default=8, help="HTTP worker threads (default 8)")
    parser.add_argument("--ticks", type=int, default=None,
                        help="tick worker threads of the embedded pool (default: $TICKS_WORKERS, else 4)")
    parser.add_argument("--sideeffects", type=int, default=None,
                        help="side-effect worker threads of the embedded pool (default: $SIDEEFFECTS_WORKERS, else 16)")


def run(args) -> int:
    try:
        host, port = parse_bind(args.bind)
    except BadAddress as err:
        raise CommandError(str(err), code=2) from None
    pool_sizes(args)
    for name in ("threads", "ticks", "sideeffects"):
        if getattr(args, name) < 1:
            raise CommandError(f"--{name} must be at least 1, got {getattr(args, name)}", code=2)
    setup_django()
    if not settings.ALLOWED_HOSTS_SET:
        settings.ALLOWED_HOSTS = allowed_hosts(host)
    # The monitor's own database file may be newer than the collection: create its tables.
    for alias in settings.DATABASES:
        if alias != "default":
            call_command("migrate", database=alias, verbosity=0, interactive=False)
    executor = MigrationExecutor(connections["default"])
    if executor.migration_plan(executor.loader.graph.leaf_nodes()):
        raise CommandError(f"the collection in {settings.DATA_DIR} is older than this version: run `archivebox init` to upgrade it")
    try:
        web = WebServer(host, port, threads=args.threads)
    except OSError as err:
        raise CommandError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    workers = None if args.no_workers else EmbeddedWorkers(tick_workers=args.ticks, sideeffect_workers=args.sideeffects)
    stop = threading.Event()
    if workers is not None:
        workers.start()
    else:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda signum, frame: stop.set())
    web.start()
    bound_host, bound_port = web.address
    shown = f"[{bound_host}]" if ":" in str(bound_host) else bound_host
    print(f"Serving http://{shown}:{bound_port}/ (admin /admin/, health /health/) for {settings.DATA_DIR}; "
          f"{'worker pools embedded' if workers else 'no workers in this process'}. Ctrl-C to stop.", flush=True)
    if not get_user_model().objects.filter(is_superuser=True).exists():
        print("No admin user yet: create one with `archivebox manage createsuperuser`.", flush=True)
    try:
        if workers is not None:
            workers.run_until(lambda: False)
        else:
            while not stop.wait(1.0):
                pass
    finally:
        web.stop()
        if workers is not None:
            workers.stop(graceful=True)
    print("Server stopped.", flush=True)
    return 0
