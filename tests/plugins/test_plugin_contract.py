"""Rules every built-in plugin follows: layout, config schema, argv/env handling, cheap start-up."""
import glob
import json
import os
import re
import subprocess
import sys

import pytest

from plugintools import PLUGINS_DIR, config_env, hook_script

PLUGINS = sorted(
    name for name in os.listdir(PLUGINS_DIR)
    if not name.startswith(("_", ".")) and os.path.isfile(os.path.join(PLUGINS_DIR, name, "config.json"))
)
EXPECTED = {
    "headers": 20, "wget": 21, "favicon": 22, "chrome": 30, "screenshot": 51, "pdf": 52, "dom": 53, "title": 54,
    "readability": 55, "mhtml": 56, "htmltotext": 57, "parse_html_urls": 70, "parse_txt_urls": 71, "parse_rss_urls": 72,
    "search": 90, "hashes": 93,
}
HOOK_RE = re.compile(r"^on_Snapshot__(\d{2})_([a-z0-9_]+)(\.[a-z0-9_.]+)?\.(py|sh|js)$")
# The captures the chrome plugin makes for other plugins: it reads their switches, and they
# read its own.
CAPTURE_PLUGINS = ("screenshot", "pdf", "dom", "mhtml")
SHARED_KEYS = {
    "chrome": {f"{p.upper()}_ENABLED" for p in (*CAPTURE_PLUGINS, "title")} | {"SCREENSHOT_FULL_PAGE"},
    **{p: {"CHROME_ENABLED"} for p in CAPTURE_PLUGINS},
}
HEAVY = ("urllib.request", "http.client", "ssl", "html.parser", "sqlite3", "hashlib", "subprocess",
         "readability", "lxml", "xml.etree.ElementTree", "socket", "email")


def test_all_expected_plugins_exist():
    assert set(PLUGINS) == set(EXPECTED)


@pytest.mark.parametrize("plugin", sorted(EXPECTED))
def test_hook_file_name_and_step(plugin):
    hooks = [n for n in os.listdir(os.path.join(PLUGINS_DIR, plugin)) if n.startswith("on_")]
    assert len(hooks) == 1, hooks
    m = HOOK_RE.match(hooks[0])
    assert m, hooks[0]
    assert int(m.group(1)) == EXPECTED[plugin]
    assert ".bg" not in (m.group(3) or "")
    assert not os.path.exists(os.path.join(PLUGINS_DIR, plugin, "__init__.py"))


def test_step_order():
    steps = {p: n // 10 for p, n in EXPECTED.items()}
    fetchers, extractors = ("headers", "wget", "favicon"), ("screenshot", "pdf", "dom", "title", "readability", "htmltotext", "mhtml")
    assert max(steps[p] for p in fetchers) < steps["chrome"] < min(steps[p] for p in extractors)
    parsers, indexers = ("parse_html_urls", "parse_txt_urls", "parse_rss_urls"), ("search", "hashes")
    assert max(steps[p] for p in fetchers) < min(steps[p] for p in extractors)
    assert max(steps[p] for p in extractors) < min(steps[p] for p in parsers)
    assert max(steps[p] for p in parsers) < min(steps[p] for p in indexers) == 9


@pytest.mark.parametrize("plugin", sorted(EXPECTED))
def test_config_schema(plugin):
    with open(os.path.join(PLUGINS_DIR, plugin, "config.json")) as f:
        schema = json.load(f)
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert schema["type"] == "object"
    props = schema["properties"]
    prefix = plugin.upper()
    enabled, timeout = props[f"{prefix}_ENABLED"], props[f"{prefix}_TIMEOUT"]
    assert enabled["type"] == "boolean" and enabled["default"] is True
    assert timeout["type"] == "integer" and timeout["x-fallback"] == "TIMEOUT" and timeout["minimum"] >= 1
    for key, prop in props.items():
        assert key == key.upper() and re.match(r"^[A-Z][A-Z0-9_]*$", key)
        assert key.startswith(prefix + "_") or key in SHARED_KEYS.get(plugin, ()), key
        assert prop.get("description"), key
        assert "type" in prop and "default" in prop, key
        kind = {"boolean": bool, "integer": int, "number": (int, float), "string": str, "array": list, "object": dict}[prop["type"]]
        assert type(prop["default"]) in (kind if isinstance(kind, tuple) else (kind,)), key
        if "minimum" in prop:
            assert prop["default"] >= prop["minimum"], key
        if "enum" in prop:
            assert prop["default"] in prop["enum"], key
    if plugin in CAPTURE_PLUGINS:
        assert "CHROME_ENABLED" in props


@pytest.mark.parametrize("plugin", sorted(EXPECTED))
def test_disabled_unknown_flags_and_lazy_imports(plugin, tmp_path):
    cwd = tmp_path / "snap" / plugin
    cwd.mkdir(parents=True)
    env = {"PATH": os.environ["PATH"], **config_env(plugin), f"{plugin.upper()}_ENABLED": "false"}
    cmd = [sys.executable, "-I", "-X", "importtime", hook_script(plugin), "--url=http://127.0.0.1:9/",
           "--snapshot-id=x", "--future-flag=1", "--another", "positional"]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr.decode()
    record = json.loads(proc.stdout)
    assert record["type"] == "ArchiveResult" and record["status"] == "skipped"
    assert "disabled" in record["output_str"]
    imported = {line.split("|")[-1].strip() for line in proc.stderr.decode().splitlines() if line.startswith("import time:")}
    heavy = sorted(m for m in imported if m in HEAVY or m.split(".")[0] in ("readability", "lxml", "email"))
    assert heavy == [], f"{plugin} imports heavy modules at start-up: {heavy}"
    assert list(cwd.iterdir()) == []


@pytest.mark.parametrize("plugin", sorted(EXPECTED))
def test_missing_url_is_a_failure_not_a_crash(plugin, tmp_path):
    cwd = tmp_path / "snap" / plugin
    cwd.mkdir(parents=True)
    proc = subprocess.run([sys.executable, "-I", hook_script(plugin)], cwd=cwd,
                          env={"PATH": os.environ["PATH"]}, capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr.decode()
    record = json.loads(proc.stdout)
    assert record["status"] == "failed" and "--url" in record["output_str"]


def test_standalone_without_engine_env(site, tmp_path):
    """Without SNAP_DIR/DATA_DIR/TIMEOUT a hook uses the parent of its CWD as the snapshot."""
    snap = tmp_path / "archive" / "abc"
    (snap / "title").mkdir(parents=True)
    proc = subprocess.run([sys.executable, "-I", hook_script("title"), "--url", site.url("/page-02.html")],
                          cwd=snap / "title", env={"PATH": os.environ["PATH"]}, capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr.decode()
    lines = [json.loads(l) for l in proc.stdout.splitlines()]
    assert lines[-1]["output_str"] == site.info.pages[1].title
    assert (snap / "title" / "title.txt").exists()


def test_pluginkit_is_cheap_to_import():
    """Importing the kit loads only its own modules (each function imports what it needs)."""
    code = "from archivebox import pluginkit"
    proc = subprocess.run([sys.executable, "-I", "-X", "importtime", "-c", code], capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr.decode()
    imported = [line.split("|")[-1].strip() for line in proc.stderr.decode().splitlines() if line.startswith("import time:")]
    own = imported[imported.index("archivebox"):]
    assert own and {name.strip() for name in own} <= {"archivebox"} | {
        f"archivebox.pluginkit{suffix}" for suffix in
        ("", ".output", ".env", ".markup", ".net", ".files", ".procs", ".chrome")}, own


def test_hooks_use_no_sys_path_tricks():
    """Built-in hooks import the kit as an installed package, as a plugin in <data>/plugins does."""
    offenders = [path for path in glob.glob(os.path.join(PLUGINS_DIR, "*", "*.py"))
                 if "sys.path" in open(path).read()]
    assert offenders == []


def test_no_python_package_markers_in_plugins():
    stray = [p for p in glob.glob(os.path.join(PLUGINS_DIR, "*", "__init__.py"))]
    assert stray == []
