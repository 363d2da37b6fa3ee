"""Plugin config: config.json JSONSchema, layers and their precedence, env vars a hook sees, errors."""

from __future__ import annotations

import json

import pytest
from django.conf import settings

from archivebox.config import ConfigError
from archivebox.hooks.config import GLOBAL_SCHEMA, coerce, plugin_schema, resolve, resolve_key, to_env

from .util import collection, make_snapshot, results, run_attempt, run_pools, snapshot_dir, started_result

SCHEMA = plugin_schema("demo", {
    "DEMO_FLAG": {"type": "boolean", "default": False},
    "DEMO_COUNT": {"type": "integer", "default": 3, "minimum": 0, "maximum": 10, "x-aliases": ["DEMO_N", "DEMO_NUM"]},
    "DEMO_RATIO": {"type": "number", "default": 0.5},
    "DEMO_NAME": {"type": "string", "default": "plain"},
    "DEMO_LIST": {"type": "array", "default": ["a"]},
    "DEMO_OBJ": {"type": "object", "default": {"k": 1}},
    "DEMO_MODE": {"type": "string", "enum": ["fast", "slow"], "default": "fast"},
    "DEMO_AGENT": {"type": "string", "x-fallback": "USER_AGENT"},
    "DEMO_NODEFAULT": {"type": "string"},
})


def value(key, *layers):
    return resolve_key(key, SCHEMA[key], list(layers))


# Schema: default, type, aliases, fallback --------------------------------------------

def test_defaults_apply_when_no_layer_sets_a_key():
    values = resolve(SCHEMA, [{}, {}, {}, {}])
    assert values == {
        "DEMO_FLAG": False, "DEMO_COUNT": 3, "DEMO_RATIO": 0.5, "DEMO_NAME": "plain", "DEMO_LIST": ["a"], "DEMO_OBJ": {"k": 1},
        "DEMO_MODE": "fast", "DEMO_AGENT": GLOBAL_SCHEMA["USER_AGENT"]["default"], "DEMO_NODEFAULT": None,
        "DEMO_ENABLED": True, "DEMO_TIMEOUT": 60,
    }


@pytest.mark.parametrize("key, raw, expected", [
    ("DEMO_FLAG", "true", True), ("DEMO_FLAG", "Yes", True), ("DEMO_FLAG", "1", True), ("DEMO_FLAG", "on", True),
    ("DEMO_FLAG", "false", False), ("DEMO_FLAG", "NO", False), ("DEMO_FLAG", "0", False), ("DEMO_FLAG", True, True),
    ("DEMO_COUNT", "7", 7), ("DEMO_COUNT", " 7 ", 7), ("DEMO_COUNT", 7.0, 7),
    ("DEMO_RATIO", "0.25", 0.25), ("DEMO_RATIO", "3", 3.0),
    ("DEMO_LIST", "x, y ,z", ["x", "y", "z"]), ("DEMO_LIST", '["x", 2, {"k": null}]', ["x", 2, {"k": None}]), ("DEMO_LIST", ["q"], ["q"]),
    ("DEMO_OBJ", '{"a": [1, 2]}', {"a": [1, 2]}), ("DEMO_OBJ", {"b": True}, {"b": True}),
    ("DEMO_NAME", "with spaces and 'quotes'", "with spaces and 'quotes'"), ("DEMO_NAME", 42, "42"),
    ("DEMO_MODE", "slow", "slow"),
])
def test_values_are_coerced_to_the_declared_type(key, raw, expected):
    got = value(key, {key: raw})
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("key, raw, fragment", [
    ("DEMO_FLAG", "maybe", "expected true or false"),
    ("DEMO_COUNT", "abc", "expected an integer"),
    ("DEMO_COUNT", "1.5", "expected an integer"),
    ("DEMO_COUNT", True, "expected an integer"),
    ("DEMO_COUNT", "-1", "must be >= 0"),
    ("DEMO_COUNT", "11", "must be <= 10"),
    ("DEMO_RATIO", "half", "expected a finite number"),
    ("DEMO_LIST", "[1, 2", "expected a list"),
    ("DEMO_OBJ", "[1]", "expected a JSON object"),
    ("DEMO_OBJ", "{bad json", "expected a JSON object"),
    ("DEMO_MODE", "medium", "must be one of"),
    ("DEMO_NAME", ["a"], "expected a string"),
])
def test_an_invalid_value_is_a_config_error_naming_the_key(key, raw, fragment):
    with pytest.raises(ConfigError) as err:
        value(key, {key: raw})
    assert str(err.value).startswith(f"{key}: ") and fragment in str(err.value), str(err.value)
    assert "\n" not in str(err.value)


CHECKED = plugin_schema("checked", {
    "CHECKED_SLUG": {"type": "string", "default": "abc", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 8},
    "CHECKED_STEP": {"type": "number", "default": 0.5, "exclusiveMinimum": 0, "exclusiveMaximum": 1, "multipleOf": 0.25},
    "CHECKED_TAGS": {"type": "array", "default": [], "minItems": 0, "maxItems": 2, "uniqueItems": True,
                     "items": {"type": "integer", "minimum": 1}},
    "CHECKED_MODE": {"type": "string", "const": "only"},
})


@pytest.mark.parametrize("key, raw, fragment", [
    ("CHECKED_SLUG", "Has-Caps", "must match the pattern '^[a-z]+$'"),
    ("CHECKED_SLUG", "a", "must be at least 2 characters long"),
    ("CHECKED_SLUG", "abcdefghi", "must be at most 8 characters long"),
    ("CHECKED_STEP", "0", "must be > 0"),
    ("CHECKED_STEP", "1", "must be < 1"),
    ("CHECKED_STEP", "0.3", "must be a multiple of 0.25"),
    ("CHECKED_TAGS", "1,2,3", "must have at most 2 items"),
    ("CHECKED_TAGS", "[1, 1]", "must not repeat an item"),
    ("CHECKED_TAGS", "1,x", "CHECKED_TAGS[1]: expected an integer"),
    ("CHECKED_TAGS", "[0]", "CHECKED_TAGS[0]: must be >= 1"),
    ("CHECKED_MODE", "other", "must be 'only'"),
])
def test_every_keyword_the_loader_accepts_is_enforced_in_one_line_naming_plugin_key_and_value(key, raw, fragment):
    with pytest.raises(ConfigError) as err:
        resolve(CHECKED, [{key: raw}], plugin="checked")
    message = str(err.value)
    named = repr(raw) if "[" not in fragment else ", got "  # an item's error names the item
    assert message.startswith(f"checked: {key}") and fragment in message and named in message, message
    assert "\n" not in message


@pytest.mark.parametrize("key, raw, expected", [
    ("CHECKED_SLUG", "fine", "fine"),
    ("CHECKED_STEP", "0.75", 0.75),
    ("CHECKED_TAGS", "2, 3", [2, 3]),
    ("CHECKED_MODE", "only", "only"),
])
def test_values_that_pass_every_keyword_are_kept(key, raw, expected):
    assert resolve(CHECKED, [{key: raw}], plugin="checked")[key] == expected


@pytest.mark.parametrize("spec, fragment", [
    ({"type": "string", "pattern": "(unclosed"}, "'pattern' must be a valid regular expression, got '(unclosed'"),
    ({"type": "string", "maxLength": -1}, "'maxLength' must be >= 0, got -1"),
    ({"type": "integer", "minimum": "1"}, "'minimum' must be a number"),
    ({"type": "number", "multipleOf": 0}, "'multipleOf' must be > 0"),
    ({"type": "string", "enum": "a"}, "'enum' must be a list"),
    ({"type": "array", "items": {"type": "string", "pattern": "["}}, "BAD_KEY items: 'pattern'"),
    ({"type": "tuple"}, "'type' is invalid: 'tuple' is not valid under any of the given schemas"),
    ({"type": "object", "required": "k"}, "'required' must be a list, got 'k'"),
    (True, "the key's schema must be an object, got True"),
])
def test_an_unusable_keyword_in_config_json_is_refused_when_read(tmp_path, spec, fragment):
    from archivebox.hooks.config import load_schema
    (tmp_path / "config.json").write_text(json.dumps({"properties": {"BAD_KEY": spec}}))
    with pytest.raises(ConfigError) as err:
        load_schema(tmp_path)
    assert str(err.value).startswith(f"{tmp_path / 'config.json'}: BAD_KEY") and fragment in str(err.value), str(err.value)


def test_a_command_that_runs_no_hook_reads_an_unusable_config_json_unchecked(tmp_path):
    """``status`` reads the plugins' keys (for the binaries they name) without checking each
    config.json against its meta-schema (jsonschema's import and the checks were a tenth of
    it): it answers on a collection with a broken plugin, which ``add`` refuses in one line."""
    from archivebox.hooks.catalog import catalog
    from archivebox.hooks.config import load_schema

    (tmp_path / "config.json").write_text(json.dumps({"properties": {"BAD_KEY": {"type": "string", "pattern": "(unclosed"}}}))
    assert load_schema(tmp_path, check=False) == {"BAD_KEY": {"type": "string", "pattern": "(unclosed"}}
    assert catalog(tmp_path, checked=False) is not catalog(tmp_path) and not catalog(tmp_path, checked=False).checked
    coll = collection(tmp_path, "h_env,broken")
    broken = coll.root / "plugins" / "broken"
    broken.mkdir(parents=True)
    (broken / "config.json").write_text(json.dumps({"properties": {"BROKEN_BINARY": {"type": "string", "default": "sh"},
                                                                   "BROKEN_SLUG": {"type": "string", "pattern": "(unclosed"}}}))
    (broken / "on_Snapshot__50_broken.py").write_text("print('never run')\n")
    status = coll.cli("status")
    assert "- sh from PATH: " in status.stdout and "(broken)" in status.stdout, status.stdout
    refused = coll.cli("add", "https://example.com/broken", check=False)
    assert refused.returncode == 2 and "BROKEN_SLUG" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1, refused.stderr


LIBRARY = plugin_schema("library", {
    "LIBRARY_OBJ": {"type": "object", "default": {"k": 1}, "required": ["k"], "additionalProperties": {"type": "integer"}},
    "LIBRARY_ANY": {"type": ["integer", "string"], "default": 1, "anyOf": [{"type": "integer", "minimum": 1}, {"type": "string", "pattern": "^auto$"}]},
    "LIBRARY_NOT": {"type": "string", "default": "x", "not": {"enum": ["root"]}},
})


@pytest.mark.parametrize("key, raw, fragment", [
    ("LIBRARY_OBJ", '{"j": 2}', "LIBRARY_OBJ: is invalid: 'k' is a required property, got '{\"j\": 2}'"),
    ("LIBRARY_OBJ", '{"k": "one"}', "LIBRARY_OBJ[k]: must be an integer, got 'one'"),
    ("LIBRARY_ANY", "0", "LIBRARY_ANY: must be >= 1, got '0'"),
    ("LIBRARY_NOT", "root", "LIBRARY_NOT: is invalid: "),
])
def test_every_json_schema_keyword_is_enforced_not_only_a_subset(key, raw, fragment):
    """jsonschema validates the typed value: keywords the engine has no words of its own for
    are reported in jsonschema's, still one line naming plugin, key and value."""
    with pytest.raises(ConfigError) as err:
        resolve(LIBRARY, [{key: raw}], plugin="library")
    message = str(err.value)
    assert message.startswith("library: ") and fragment in message and "\n" not in message, message
    assert resolve(LIBRARY, [{"LIBRARY_ANY": "auto", "LIBRARY_OBJ": '{"k": 3, "j": 4}'}])["LIBRARY_ANY"] == "auto"


def test_aliases_are_accepted_and_a_more_specific_layer_wins_over_the_name_used():
    assert value("DEMO_COUNT", {"DEMO_N": "4"}) == 4
    assert value("DEMO_COUNT", {"DEMO_NUM": "5"}) == 5
    # within one layer the canonical name beats an alias
    assert value("DEMO_COUNT", {"DEMO_N": "4", "DEMO_COUNT": "6"}) == 6
    # an alias in a more specific layer beats the canonical name in a less specific one
    assert value("DEMO_COUNT", {}, {"DEMO_N": "4"}, {"DEMO_COUNT": "6"}) == 4


def test_a_fallback_key_is_used_when_the_key_itself_is_set_nowhere():
    assert value("DEMO_AGENT", {}, {}, {"USER_AGENT": "env-agent"}) == "env-agent"
    assert value("DEMO_AGENT", {}, {}, {"USER_AGENT": "env-agent"}, {"DEMO_AGENT": "file-agent"}) == "file-agent"
    # <PLUGIN>_TIMEOUT falls back to TIMEOUT, then to TIMEOUT's default
    assert value("DEMO_TIMEOUT", {}, {}, {}, {}) == 60
    assert value("DEMO_TIMEOUT", {}, {"TIMEOUT": "7"}) == 7
    assert value("DEMO_TIMEOUT", {"TIMEOUT": "7"}, {}, {"DEMO_TIMEOUT": "9"}) == 9
    assert value("DEMO_TIMEOUT", {}, {}, {}, {"TIMEOUT": "11"}) == 11
    assert value("DEMO_NODEFAULT", {}, {}) is None


def test_precedence_is_snapshot_then_crawl_then_environment_then_config_file_then_default():
    layers = [{"DEMO_NAME": "snapshot"}, {"DEMO_NAME": "crawl"}, {"DEMO_NAME": "env"}, {"DEMO_NAME": "file"}]
    for skip in range(4):
        assert value("DEMO_NAME", *([{}] * skip + layers[skip:])) == ["snapshot", "crawl", "env", "file"][skip]
    assert value("DEMO_NAME", {}, {}, {}, {}) == "plain"
    # an empty string means "not set here"
    assert value("DEMO_NAME", {"DEMO_NAME": ""}, {"DEMO_NAME": "crawl"}) == "crawl"


def test_values_become_env_vars_booleans_lowercase_and_json_for_lists_and_objects():
    env = to_env({"B1": True, "B0": False, "I": 3, "F": 0.5, "S": "x y", "L": ["a", 1], "O": {"k": [1, None]}, "N": None})
    assert env == {"B1": "true", "B0": "false", "I": "3", "F": "0.5", "S": "x y", "L": '["a", 1]', "O": '{"k": [1, null]}'}


def test_coerce_reports_an_unsupported_schema_type_as_a_config_error():
    with pytest.raises(ConfigError, match="^DEMO_X: unsupported type 'tuple'"):
        coerce("DEMO_X", {"type": "tuple"}, "1")


# What a real hook receives -------------------------------------------------------------

def read_env_json(coll, url):
    return json.loads((snapshot_dir(coll, url) / "h_env" / "env.json").read_text())


def test_a_real_hook_sees_its_config_as_env_vars_from_every_layer(tmp_path):
    """ArchiveBox.conf < environment < ``add -c``: checked from inside the hook."""
    coll = collection(tmp_path, "h_env", H_ENV_LAYER="env", H_ENV_MODE="slow", TIMEOUT="7", H_ENV_OBJ='{"x": [1, 2]}',
                      H_ENV_API_KEY="s3cr3t-value", H_UNRELATED_SECRET="leak-me-not")
    conf = coll.root / "ArchiveBox.conf"
    conf.write_text(conf.read_text() + "\n[PLUGINS]\nH_ENV_LAYER = file\nH_ENV_MODE = fast\nH_ENV_RATIO = 0.25\nUSER_AGENT = conf-agent\n")
    url = "https://example.com/env"
    coll.cli("add", "-c", "H_ENV_LAYER=crawl", "-c", "h_env_n=7", "-c", "H_ENV_FLAG=true", url)
    seen = read_env_json(coll, url)
    env = seen["env"]
    assert env["H_ENV_LAYER"] == "crawl"          # -c beats the environment and the file
    assert env["H_ENV_MODE"] == "slow"            # the environment beats the file
    assert env["H_ENV_RATIO"] == "0.25"           # the file beats the default
    assert env["H_ENV_COUNT"] == "7"              # via its alias, given lower-case on the command line
    assert env["H_ENV_FLAG"] == "true"
    assert env["H_ENV_LIST"] == '["a", "b"]'      # default list, as JSON
    assert json.loads(env["H_ENV_OBJ"]) == {"x": [1, 2]}
    assert env["H_ENV_AGENT"] == "conf-agent"     # x-fallback to USER_AGENT, set in the file
    assert env["H_ENV_TIMEOUT"] == "7"            # <PLUGIN>_TIMEOUT falls back to TIMEOUT
    assert env["H_ENV_ENABLED"] == "true"
    assert env["TIMEOUT"] == "7" and env["USER_AGENT"] == "conf-agent" and env["CHECK_SSL_VALIDITY"] == "true"
    assert env["H_ENV_API_KEY"] == "s3cr3t-value"  # the hook gets the secret...
    snap = snapshot_dir(coll, url)
    assert env["DATA_DIR"] == str(coll.root) and env["SNAP_DIR"] == str(snap)
    crawl_id = coll.scalar("SELECT crawl_id FROM core_snapshot")
    assert env["CRAWL_DIR"].startswith(str(coll.root / "crawls")) and env["CRAWL_DIR"].replace("-", "").endswith(crawl_id.replace("-", ""))
    # only allow-listed variables of the worker's own environment are passed on
    assert "H_UNRELATED_SECRET" not in env and "DJANGO_SETTINGS_MODULE" not in env and "PLUGIN_DIRS" not in env
    assert seen["cwd"] == str(snap / "h_env") and seen["stdin"] == ""
    # ...but its Process row stores it redacted, and nothing outside the allow-list
    [row] = coll.query("SELECT env, pwd, cmd, timeout FROM core_process WHERE kind='hook'")
    stored = json.loads(row["env"])
    assert stored["H_ENV_API_KEY"] == "***" and "s3cr3t-value" not in row["env"]
    assert stored["H_ENV_LAYER"] == "crawl" and "H_UNRELATED_SECRET" not in stored
    assert row["pwd"] == str(snap / "h_env") and row["timeout"] == 7
    assert json.loads(row["cmd"])[2:] == seen["argv"]  # [python, -I, script, flags...]


def test_per_snapshot_config_beats_every_other_layer_in_a_real_hook(use_plugins, monkeypatch):
    use_plugins("h_env", H_ENV_LAYER="env", H_ENV_MODE="slow")
    monkeypatch.setattr(settings, "CONFIG_FILE_VALUES", {"H_ENV_LAYER": "file", "H_ENV_COUNT": "9", "H_ENV_FLAG": "yes"})
    snapshot = make_snapshot(crawl_config={"H_ENV_LAYER": "crawl", "H_ENV_MODE": "fast"},
                             snapshot_config={"H_ENV_LAYER": "snapshot"})
    process = run_attempt(started_result(snapshot, "h_env", "on_Snapshot__10_env.py"))
    assert process.exit_code == 0, process.result_json
    env = json.loads((snapshot.output_dir / "h_env" / "env.json").read_text())["env"]
    assert (env["H_ENV_LAYER"], env["H_ENV_MODE"], env["H_ENV_COUNT"], env["H_ENV_FLAG"]) == ("snapshot", "fast", "9", "true")


# Invalid values: at ``add`` time, and at run time ----------------------------------------

@pytest.fixture(scope="module")
def env_collection(tmp_path_factory):
    return collection(tmp_path_factory.mktemp("config"), "h_env")


@pytest.mark.parametrize("pair, key", [
    ("H_ENV_COUNT=abc", "H_ENV_COUNT"),
    ("H_ENV_MODE=medium", "H_ENV_MODE"),
    ("H_ENV_FLAG=maybe", "H_ENV_FLAG"),
    ("H_ENV_OBJ=[1]", "H_ENV_OBJ"),
    ("H_ENV_TIMEOUT=0", "H_ENV_TIMEOUT"),
    ("TIMEOUT=soon", "TIMEOUT"),
    ("H_ENV_SLUG=No-Slug", "H_ENV_SLUG"),
])
def test_an_invalid_value_on_the_command_line_is_one_line_naming_the_key_and_exit_2(env_collection, pair, key):
    coll = env_collection
    result = coll.cli("add", "-c", pair, "https://example.com/bad", check=False)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f" {key}: " in lines[0], result.stderr
    assert coll.scalar("SELECT COUNT(*) FROM core_crawl") == 0


def test_a_value_against_the_plugins_pattern_is_refused_naming_plugin_key_and_value(env_collection):
    """``pattern`` in a plugin's config.json is enforced: ``add`` refuses the crawl in one line."""
    result = env_collection.cli("add", "-c", "H_ENV_SLUG=No-Slug", "https://example.com/bad", check=False)
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert "h_env: H_ENV_SLUG: must match the pattern '^[a-z]+$', got 'No-Slug'" in line, line
    assert env_collection.scalar("SELECT COUNT(*) FROM core_crawl") == 0


def test_an_invalid_value_in_the_config_file_is_refused_at_add_time_too(tmp_path):
    coll = collection(tmp_path, "h_env")
    conf = coll.root / "ArchiveBox.conf"
    conf.write_text(conf.read_text() + "\n[PLUGINS]\nH_ENV_RATIO = 2\n")
    result = coll.cli("add", "https://example.com/bad", check=False)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "H_ENV_RATIO: must be <= 1" in result.stderr, result.stderr


def test_an_invalid_value_appearing_after_the_crawl_was_queued_fails_the_result_naming_the_key(tmp_path):
    """The crawl is valid when added; the config file goes bad before the pools run it."""
    coll = collection(tmp_path, "h_env,h_args")
    url = "https://example.com/late-bad-config"
    coll.cli("add", "--bg", url)
    conf = coll.root / "ArchiveBox.conf"
    conf.write_text(conf.read_text() + "\n[PLUGINS]\nH_ENV_COUNT = -5\n")
    run_pools(coll)
    got = results(coll)
    bad = got[(url, "on_Snapshot__10_env.py")]
    assert bad["status"] == "failed" and "H_ENV_COUNT" in bad["output_str"] and "-5" in bad["output_str"], bad
    # the other plugin is unaffected, and the snapshot and crawl still finish
    assert got[(url, "on_Snapshot__10_args.py")]["status"] == "succeeded"
    assert coll.counts("snapshot") == {"sealed": 1} and coll.counts("crawl") == {"sealed": 1}
    assert "Traceback" not in coll.log_text()
    [process] = coll.query("SELECT status, reason, exit_code, cmd FROM core_process WHERE kind='hook' AND label LIKE 'h_env/%'")
    assert process["status"] == "exited" and "H_ENV_COUNT" in process["reason"] and json.loads(process["cmd"]) == []


def test_the_engines_secrets_never_reach_a_hook_and_urls_are_stored_without_credentials(tmp_path):
    """A plugin that names DATABASE_URL/REDIS_URL/SECRET_KEY in its config.json gets none of
    them; a URL with a password in a value it does get is stored masked in its Process row."""
    coll = collection(tmp_path, "h_greedy")
    url = "https://example.com/greedy"
    coll.cli("add", "-c", "REDIS_URL=redis://:hunter2@127.0.0.1:1/0", "-c", "SECRET_KEY=engine-secret-key",
             "-c", "DATABASE_URL=postgres://u:dbpass@127.0.0.1/x", "-c", "H_GREEDY_PROXY=http://proxyuser:proxypass@127.0.0.1:3128", url)
    env = json.loads((snapshot_dir(coll, url) / "h_greedy" / "env.json").read_text())
    assert not {"DATABASE_URL", "REDIS_URL", "SECRET_KEY"} & set(env)
    assert env["H_GREEDY_PROXY"] == "http://proxyuser:proxypass@127.0.0.1:3128"  # the hook needs its own credentials
    stored = coll.scalar("SELECT env FROM core_process WHERE kind='hook'")
    assert "proxypass" not in stored and "hunter2" not in stored and "dbpass" not in stored
    assert json.loads(stored)["H_GREEDY_PROXY"] == "http://proxyuser:***@127.0.0.1:3128"
