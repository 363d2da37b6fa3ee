"""Plugin configuration: each plugin's ``config.json`` is a JSONSchema of env var keys.

Supported per key: ``type`` (boolean, integer, number, string, array, object, null, or a
list of them), ``default``, ``x-aliases`` (other names accepted for the key) and
``x-fallback`` (a more general key, such as ``TIMEOUT``, used when this one is not set),
and these checks, enforced on every value (defaults included): ``enum``, ``const``,
``minimum``/``maximum``, ``exclusiveMinimum``/``exclusiveMaximum``, ``multipleOf``
(numbers); ``minLength``/``maxLength``, ``pattern`` (strings, a regex searched as
JSONSchema says); ``minItems``/``maxItems``, ``uniqueItems``, ``items`` (arrays: each item
checked against that schema). Other keywords (``description``, ``format``, ``x-...``)
are documentation to the engine. A check's own value is checked when config.json is read.

A value is looked up in layers, most specific first: per-snapshot config, per-crawl
config, the environment, the data dir's ``ArchiveBox.conf``. For one key the order is:
the key (or an alias) in any layer, then its fallback key in any layer, then the key's
default, then the fallback's default. Values reach hooks as env vars: booleans as
``true``/``false``, lists and objects as JSON.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archivebox.config import ConfigError

logger = logging.getLogger(__name__)

# Keys every plugin may fall back to, with their defaults.
GLOBAL_SCHEMA: dict[str, dict[str, Any]] = {
    "TIMEOUT": {"type": "integer", "default": 60, "minimum": 1, "description": "Default hook timeout in seconds"},
    "PLUGINS": {"type": "string", "default": "", "description": "Comma-separated allow-list of plugins; empty means all"},
    "USER_AGENT": {"type": "string", "default": "Mozilla/5.0 (compatible; ArchiveBox/0.1; +https://archivebox.io)"},
    "CHECK_SSL_VALIDITY": {"type": "boolean", "default": True},
    "COOKIES_FILE": {"type": "string", "default": "",
                     "description": "Netscape cookies.txt sent by the hooks that fetch pages (a persona sets it)"},
    "URL_ALLOWLIST": {"type": "string", "default": "", "description": "Regex: only discovered links matching it become snapshots"},
    "URL_DENYLIST": {"type": "string", "default": "", "description": "Regex: discovered links matching it never become snapshots"},
    "ONLY_NEW": {"type": "boolean", "default": False, "description": "Skip URLs that already have a snapshot in another crawl"},
    "INDEX_ONLY": {"type": "boolean", "default": False,
                   "description": "Add the URLs to the index without archiving them (archivebox update archives them later)"},
    "MAX_URLS": {"type": "integer", "default": 0, "minimum": 0, "description": "At most this many snapshots per crawl (0 = no limit)"},
    "CRAWL_TIMEOUT": {"type": "integer", "default": 0, "minimum": 0,
                      "description": "Seconds a crawl may run before its unfinished snapshots are cancelled (0 = no limit)"},
    "SNAPSHOT_MAX_SIZE": {"type": "integer", "default": 0, "minimum": 0,
                          "description": "Bytes; once a snapshot's folder is larger, its hooks not yet started are skipped (0 = no limit)"},
    # Politeness (archivebox/hostrules.py): how hard one site is hit, per crawl.
    "PER_HOST_SNAPSHOTS": {"type": "integer", "default": 4, "minimum": 1,
                           "description": "Snapshots of one host archived at once (a host: the URL's host name)"},
    "PER_HOST_DELAY": {"type": "number", "default": 0, "minimum": 0,
                       "description": "Seconds between the starts of two snapshots of one host"},
    "PER_HOST_LIMITS": {"type": "object", "default": {},
                        "description": 'Limits of host patterns, e.g. {"*.example.com": {"snapshots": 1, "delay": 5}}'},
    "ROBOTS_TXT": {"type": "boolean", "default": False,
                   "description": "Crawls with depth > 0 skip outlinks robots.txt disallows and honour its Crawl-delay"},
}

_MISSING = object()


def load_schema(plugin_dir: Path) -> dict[str, dict[str, Any]]:
    """The ``properties`` of a plugin's config.json (empty if it has none)."""
    path = plugin_dir / "config.json"
    if not path.exists():
        return {}
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ConfigError(f"{path}: invalid config.json: {err}") from err
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
    if not isinstance(properties, dict):
        raise ConfigError(f"{path}: 'properties' must be an object")
    for key, spec in properties.items():
        check_spec(f"{path}: {key}", spec)
    return properties


@dataclass(frozen=True)
class PluginMeta:
    """What a plugin's config.json says about running it, besides its keys (abx-plugins 1.13):
    the plugins it needs (``required_plugins``: selecting it with ``PLUGINS`` selects them
    too), and what its hooks wait for before they start: every background hook of their
    snapshot ordered before them to end (``wait_for_background_cleanup``: services are
    stopped, finite ones awaited), or the results of named plugins to be final
    (``wait_for_plugins``)."""

    required_plugins: tuple[str, ...] = ()
    wait_for_background_cleanup: bool = False
    wait_for_plugins: tuple[str, ...] = ()


def load_meta(plugin_dir: Path) -> PluginMeta:
    """The :class:`PluginMeta` of a plugin's config.json (defaults if it has none)."""
    path = plugin_dir / "config.json"
    if not path.exists():
        return PluginMeta()
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ConfigError(f"{path}: invalid config.json: {err}") from err
    if not isinstance(schema, dict):
        return PluginMeta()
    names = {}
    for key in ("required_plugins", "wait_for_plugins"):
        value = schema.get(key) or []
        if not isinstance(value, list) or not all(isinstance(name, str) and name.strip() for name in value):
            raise ConfigError(f"{path}: {key!r} must be a list of plugin names, got {value!r}")
        names[key] = tuple(name.strip() for name in value)
    wait = schema.get("wait_for_background_cleanup", False)
    if not isinstance(wait, bool):
        raise ConfigError(f"{path}: 'wait_for_background_cleanup' must be true or false, got {wait!r}")
    return PluginMeta(names["required_plugins"], wait, names["wait_for_plugins"])


_NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_COUNT_KEYWORDS = ("minLength", "maxLength", "minItems", "maxItems")


def check_spec(where: str, spec: Any) -> None:
    """Raise ConfigError if a key's schema is unusable (a check with a value of the wrong kind)."""
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: the key's schema must be an object")
    for keyword in _NUMBER_KEYWORDS:
        if keyword in spec and (isinstance(spec[keyword], bool) or not isinstance(spec[keyword], (int, float))):
            raise ConfigError(f"{where}: {keyword!r} must be a number, got {spec[keyword]!r}")
    if spec.get("multipleOf", 1) <= 0:
        raise ConfigError(f"{where}: 'multipleOf' must be > 0, got {spec['multipleOf']!r}")
    for keyword in _COUNT_KEYWORDS:
        if keyword in spec and (isinstance(spec[keyword], bool) or not isinstance(spec[keyword], int) or spec[keyword] < 0):
            raise ConfigError(f"{where}: {keyword!r} must be a non-negative integer, got {spec[keyword]!r}")
    if "enum" in spec and not isinstance(spec["enum"], list):
        raise ConfigError(f"{where}: 'enum' must be a list, got {spec['enum']!r}")
    if "pattern" in spec:
        if not isinstance(spec["pattern"], str):
            raise ConfigError(f"{where}: 'pattern' must be a string, got {spec['pattern']!r}")
        try:
            re.compile(spec["pattern"])
        except re.error as err:
            raise ConfigError(f"{where}: 'pattern' {spec['pattern']!r} is not a valid regular expression: {err}") from None
    if isinstance(spec.get("items"), dict):
        check_spec(f"{where} items", spec["items"])


def enabled_key(plugin: str) -> str:
    return f"{plugin.upper()}_ENABLED"


def timeout_key(plugin: str) -> str:
    return f"{plugin.upper()}_TIMEOUT"


def plugin_schema(plugin: str, properties: Mapping[str, dict]) -> dict[str, dict[str, Any]]:
    """The plugin's schema, completed with ``<PLUGIN>_ENABLED`` and ``<PLUGIN>_TIMEOUT``."""
    schema = dict(properties)
    schema.setdefault(enabled_key(plugin), {"type": "boolean", "default": True})
    schema.setdefault(timeout_key(plugin), {"type": "integer", "x-fallback": "TIMEOUT", "minimum": 1})
    return schema


def _lookup(names: Sequence[str], layers: Sequence[Mapping[str, Any]]) -> Any:
    for layer in layers:
        for name in names:
            if name in layer and layer[name] is not None and layer[name] != "":
                return layer[name]
    return _MISSING


def resolve_key(key: str, spec: Mapping[str, Any], layers: Sequence[Mapping[str, Any]],
                schemas: Mapping[str, Mapping[str, Any]] = GLOBAL_SCHEMA, plugin: str | None = None) -> Any:
    """The typed value of one key, or None if nothing sets it and it has no default.

    An invalid value raises ConfigError, one line naming ``plugin`` (when given), the key
    and the value."""
    names = [key, *spec.get("x-aliases", [])]
    raw, source_key = _lookup(names, layers), key
    fallback = spec.get("x-fallback")
    fallback_spec = schemas.get(fallback, {}) if fallback else {}
    if raw is _MISSING and fallback:
        raw = _lookup([fallback, *fallback_spec.get("x-aliases", [])], layers)
        source_key = fallback  # an error names the key the user actually set
    if raw is _MISSING:
        raw, source_key = spec.get("default", _MISSING), key
    if raw is _MISSING and fallback:
        raw = fallback_spec.get("default", _MISSING)
    if raw is _MISSING or raw is None:
        return None
    try:
        return coerce(source_key, spec, raw)
    except ConfigError as err:
        if plugin and source_key == key:
            raise ConfigError(f"{plugin}: {err}") from None
        raise


def coerce(key: str, spec: Mapping[str, Any], raw: Any) -> Any:
    """Convert ``raw`` (a string from the environment, or a JSON value) to the key's type and
    check it against the key's schema (see the module docstring for the keywords)."""
    kinds = spec.get("type", "string")
    kinds = list(kinds) if isinstance(kinds, list) else [kinds]
    unknown = [k for k in kinds if k not in _COERCE]
    if unknown or not kinds:
        raise ConfigError(f"{key}: unsupported type {', '.join(map(repr, unknown)) or repr(kinds)} in config.json")
    value = _MISSING
    for kind in kinds:  # a union type ("type": ["integer", "null"]) takes the first that fits
        try:
            value = _COERCE[kind](raw)
            break
        except (TypeError, ValueError):
            continue
    if value is _MISSING:
        expected = " or ".join(_ARTICLE[k] for k in kinds)
        raise ConfigError(f"{key}: expected {expected}, got {raw!r}")
    if value is None:
        return None
    if isinstance(value, list) and isinstance(spec.get("items"), dict):
        value = [coerce(f"{key}[{i}]", spec["items"], item) for i, item in enumerate(value)]
    problem = _violation(spec, value)
    if problem:
        raise ConfigError(f"{key}: {problem}, got {raw!r}")
    return value


def _violation(spec: Mapping[str, Any], value: Any) -> str | None:
    """What ``value`` (already of the key's type) breaks in ``spec``, or None."""
    if "enum" in spec and value not in spec["enum"]:
        return f"must be one of {spec['enum']}"
    if "const" in spec and value != spec["const"]:
        return f"must be {spec['const']!r}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in spec and value < spec["minimum"]:
            return f"must be >= {spec['minimum']}"
        if "maximum" in spec and value > spec["maximum"]:
            return f"must be <= {spec['maximum']}"
        if "exclusiveMinimum" in spec and value <= spec["exclusiveMinimum"]:
            return f"must be > {spec['exclusiveMinimum']}"
        if "exclusiveMaximum" in spec and value >= spec["exclusiveMaximum"]:
            return f"must be < {spec['exclusiveMaximum']}"
        if "multipleOf" in spec and not math.isclose(value / spec["multipleOf"], round(value / spec["multipleOf"]), abs_tol=1e-9):
            return f"must be a multiple of {spec['multipleOf']}"
    if isinstance(value, str):
        if "minLength" in spec and len(value) < spec["minLength"]:
            return f"must be at least {spec['minLength']} characters long"
        if "maxLength" in spec and len(value) > spec["maxLength"]:
            return f"must be at most {spec['maxLength']} characters long"
        if "pattern" in spec and not re.search(spec["pattern"], value):
            return f"must match the pattern {spec['pattern']!r}"
    if isinstance(value, list):
        if "minItems" in spec and len(value) < spec["minItems"]:
            return f"must have at least {spec['minItems']} items"
        if "maxItems" in spec and len(value) > spec["maxItems"]:
            return f"must have at most {spec['maxItems']} items"
        if spec.get("uniqueItems") and len({json.dumps(v, sort_keys=True) for v in value}) < len(value):
            return "must not repeat an item"
    return None


def _to_bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(raw)


def _to_int(raw: Any) -> int:
    if isinstance(raw, bool):
        raise ValueError(raw)
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    return int(str(raw).strip())


def _to_number(raw: Any) -> float:
    if isinstance(raw, bool):
        raise ValueError(raw)
    value = float(str(raw).strip()) if not isinstance(raw, (int, float)) else raw
    if not math.isfinite(value):
        raise ValueError(raw)
    return value


def _to_null(raw: Any) -> None:
    if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("", "null", "none")):
        return None
    raise ValueError(raw)


def _to_list(raw: Any) -> list:
    if isinstance(raw, list):
        return raw
    text = str(raw).strip()
    if text.startswith("["):
        value = json.loads(text)
        if not isinstance(value, list):
            raise ValueError(raw)
        return value
    return [part.strip() for part in text.split(",") if part.strip()]


def _to_object(raw: Any) -> dict:
    value = raw if isinstance(raw, dict) else json.loads(str(raw))
    if not isinstance(value, dict):
        raise ValueError(raw)
    return value


def _to_str(raw: Any) -> str:
    if isinstance(raw, (dict, list)):
        raise ValueError(raw)
    return str(raw)


_COERCE = {"boolean": _to_bool, "integer": _to_int, "number": _to_number, "string": _to_str, "array": _to_list,
           "object": _to_object, "null": _to_null}
_ARTICLE = {"boolean": "true or false", "integer": "an integer", "number": "a finite number", "string": "a string",
            "array": "a list", "object": "a JSON object", "null": "null"}


def resolve(schema: Mapping[str, dict], layers: Sequence[Mapping[str, Any]], plugin: str | None = None) -> dict[str, Any]:
    """Every key of ``schema`` resolved against ``layers``; raises ConfigError naming the plugin
    (when given), the bad key and its value."""
    return {key: resolve_key(key, spec, layers, plugin=plugin) for key, spec in schema.items()}


def url_filter(layers: Sequence[Mapping[str, Any]]) -> Callable[[str], bool]:
    """URL_ALLOWLIST / URL_DENYLIST (regexes) as a predicate on discovered links."""
    allow = resolve_key("URL_ALLOWLIST", GLOBAL_SCHEMA["URL_ALLOWLIST"], layers)
    deny = resolve_key("URL_DENYLIST", GLOBAL_SCHEMA["URL_DENYLIST"], layers)
    try:
        allowed, denied = (re.compile(allow) if allow else None), (re.compile(deny) if deny else None)
    except re.error as err:
        raise ConfigError(f"URL_ALLOWLIST/URL_DENYLIST: invalid regular expression: {err}") from None
    return lambda url: (allowed is None or bool(allowed.search(url))) and (denied is None or not denied.search(url))


# The engine's own secrets: never handed to a hook, even one whose config.json names them
# (a hook could read the whole index, or the queue, with them).
ENGINE_SECRETS = frozenset({"DATABASE_URL", "REDIS_URL", "SECRET_KEY"})


def to_env(values: Mapping[str, Any]) -> dict[str, str]:
    """Render resolved values as environment variables (None values and the engine's own
    secrets are left out)."""
    env = {}
    for key, value in values.items():
        if value is None or key in ENGINE_SECRETS:
            continue
        if isinstance(value, bool):
            env[key] = "true" if value else "false"
        elif isinstance(value, (list, dict)):
            env[key] = json.dumps(value)
        else:
            env[key] = str(value)
    return env
