"""A hook's inputs: its argv (``--url=... --snapshot-id=...``) and its config as env vars.

The engine passes every key of the plugin's ``config.json`` (and the global keys such as
``TIMEOUT``, ``USER_AGENT``, ``CHECK_SSL_VALIDITY``) as environment variables, already
checked against the schema; these helpers read them with a default, so a hook also runs
standalone. An empty value counts as unset.
"""

import os
import sys

from .output import finish, log

DEFAULT_USER_AGENT = "Mozilla/5.0 (compatible; ArchiveBox/0.1; +self-hosted web archiver)"


def parse_args(argv=None):
    """Parse ``--key=value`` / ``--key value`` / ``--flag`` argv into a dict.

    Dashes in keys become underscores (``--snapshot-id`` -> ``snapshot_id``).
    Unknown flags are kept (callers ignore what they do not need); positional
    arguments are ignored.
    """
    args = {}
    items = sys.argv[1:] if argv is None else list(argv)
    i = 0
    while i < len(items):
        item = items[i]
        i += 1
        if not item.startswith("--") or item == "--":
            continue
        key, sep, value = item[2:].partition("=")
        key = key.replace("-", "_")
        if not sep:
            if i < len(items) and not items[i].startswith("--"):
                value = items[i]
                i += 1
            else:
                value = True
        args[key] = value
    return args


def _env_raw(name, fallbacks=()):
    for key in (name,) + tuple(fallbacks):
        value = os.environ.get(key)
        if value is not None and value.strip() != "":
            return value
    return None


def env_str(name, default=None, fallbacks=()):
    """String env var ``name`` (then each of ``fallbacks``), else ``default``."""
    value = _env_raw(name, fallbacks)
    return default if value is None else value


_TRUE = {"1", "true", "yes", "on", "y", "t"}
_FALSE = {"0", "false", "no", "off", "n", "f", "none", "null"}


def env_bool(name, default=False, fallbacks=()):
    """Boolean env var (true/false, 1/0, yes/no, on/off; case-insensitive)."""
    value = _env_raw(name, fallbacks)
    if value is None:
        return default
    value = value.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    log(f"WARNING: {name}={value!r} is not a boolean, using {default}")
    return default


def env_int(name, default, fallbacks=("TIMEOUT",), minimum=None):
    """Integer env var with fallbacks (``TIMEOUT`` by default) and a lower bound."""
    value = _env_raw(name, fallbacks)
    result = default
    if value is not None:
        try:
            result = int(float(value.strip()))
        except ValueError:
            log(f"WARNING: {name}={value!r} is not a number, using {default}")
    if minimum is not None and result < minimum:
        result = minimum
    return result


def env_float(name, default, fallbacks=()):
    """Number env var (``default`` when unset or not a number)."""
    value = _env_raw(name, fallbacks)
    if value is None:
        return default
    try:
        return float(value.strip())
    except ValueError:
        log(f"WARNING: {name}={value!r} is not a number, using {default}")
        return default


def env_list(name, default=(), fallbacks=()):
    """List env var: a JSON array, or a comma/newline separated string."""
    value = _env_raw(name, fallbacks)
    if value is None:
        return list(default)
    value = value.strip()
    if value.startswith("["):
        import json
        try:
            parsed = json.loads(value)
        except ValueError:
            log(f"WARNING: {name} is not a valid JSON list, using the default")
            return list(default)
        if isinstance(parsed, list):
            return [str(v) for v in parsed]
        return list(default)
    return [part.strip() for part in value.replace("\n", ",").split(",") if part.strip()]


def timeout_for(plugin, default=60):
    """The plugin's timeout in seconds: ``<PLUGIN>_TIMEOUT``, else ``TIMEOUT``, else default."""
    return env_int(f"{plugin.upper()}_TIMEOUT", default, fallbacks=("TIMEOUT",), minimum=1)


def is_enabled(plugin, default=True):
    """``<PLUGIN>_ENABLED`` as a boolean."""
    return env_bool(f"{plugin.upper()}_ENABLED", default)


def net_options(plugin):
    """``(user_agent, check_ssl)`` from ``<PLUGIN>_USER_AGENT`` / ``<PLUGIN>_CHECK_SSL_VALIDITY``."""
    prefix = plugin.upper()
    user_agent = env_str(f"{prefix}_USER_AGENT", DEFAULT_USER_AGENT, fallbacks=("USER_AGENT",))
    check_ssl = env_bool(f"{prefix}_CHECK_SSL_VALIDITY", True, fallbacks=("CHECK_SSL_VALIDITY",))
    return user_agent, check_ssl


def start(plugin, default_enabled=True):
    """Common hook prologue: parse argv, check ``--url`` and ``<PLUGIN>_ENABLED``.

    Returns the parsed args dict. Exits with a ``skipped`` result when the plugin
    is disabled and with a ``failed`` result when ``--url`` is missing.
    """
    args = parse_args()
    if not is_enabled(plugin, default_enabled):
        finish("skipped", f"disabled ({plugin.upper()}_ENABLED=false)")
    url = args.get("url")
    if not isinstance(url, str) or not url.strip():
        finish("failed", "missing --url argument")
    args["url"] = url.strip()
    return args


def is_http_url(url):
    return url.lower().startswith(("http://", "https://"))


def import_third_party(name):
    """Import an installed package, or raise ImportError (the hook then reports ``skipped``).

    Imported on first use rather than at the top of the hook, so hooks that never need
    it do not pay for it.
    """
    import importlib
    return importlib.import_module(name)
