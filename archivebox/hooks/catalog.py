"""What plugins exist, which are enabled, and the environment each hook run gets.

The catalog re-reads plugin folders only when one of them (or a plugin's config.json)
changed, by mtime, and the process-wide catalog looks at most once a second: ticks can ask
"which hooks should this snapshot run?" on every pass for nearly nothing.
"""

from __future__ import annotations

import difflib
import logging
import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archivebox import hostrules
from archivebox.config import ConfigError
from archivebox.hooks import config as plugin_config
from archivebox.hooks.discovery import HookScript, find_hooks, find_plugins, plugin_dirs
from archivebox.hooks.runtime import BASE_PLUGIN

logger = logging.getLogger(__name__)


# How often the process-wide catalog looks at the plugin folders again: a change to them
# (a plugin added or removed, a hook renamed, a config.json edited) is seen within this.
RECHECK_EVERY = 1.0


@dataclass(frozen=True)
class _State:
    """One consistent reading of the plugin folders."""

    signature: tuple
    plugins: dict[str, Path]
    schemas: dict[str, dict[str, dict]]
    metas: dict[str, plugin_config.PluginMeta] = field(default_factory=dict)
    hooks: dict[str, list[HookScript]] = field(default_factory=dict)  # filled per model on first use


class PluginCatalog:
    def __init__(self, dirs: Sequence[Path], recheck_every: float = 0.0, checked: bool = True):
        self.dirs = list(dirs)
        self.recheck_every = recheck_every
        self.checked = checked  # each config.json checked against its meta-schema when read
        self._lock = threading.Lock()
        self._state = _State((), {}, {})
        self._next_check = float("-inf")

    def _current(self) -> _State:
        """The state of the folders, read again if one changed (looked at most every ``recheck_every`` s)."""
        now = time.monotonic()
        if now < self._next_check:
            return self._state
        with self._lock:
            state = self._state
            signature = tuple(_mtime(d) for d in self.dirs)
            plugins = state.plugins if signature == state.signature[: len(self.dirs)] else find_plugins(self.dirs)
            signature += tuple(_mtime(p) for p in plugins.values())
            signature += tuple(_mtime(p / "config.json") for p in plugins.values())
            if signature != state.signature:
                schemas = {name: plugin_config.plugin_schema(name, plugin_config.load_schema(path, self.checked))
                           for name, path in plugins.items()}
                metas = {name: plugin_config.load_meta(path) for name, path in plugins.items()}
                state = self._state = _State(signature, plugins, schemas, metas)
            self._next_check = now + self.recheck_every
            return state

    @property
    def plugins(self) -> dict[str, Path]:
        return self._current().plugins

    def schema(self, plugin: str) -> dict[str, dict]:
        return self._current().schemas[plugin]

    def meta(self, plugin: str) -> plugin_config.PluginMeta:
        return self._current().metas.get(plugin, plugin_config.PluginMeta())

    def with_requirements(self, names: set[str]) -> set[str]:
        """``names`` (lower case) and, transitively, every plugin they require (``required_plugins``),
        as ArchiveBox selects plugins: choosing mercury brings in what mercury needs."""
        metas = {name.lower(): meta for name, meta in self._current().metas.items()}
        selected, todo = set(), list(names)
        while todo:
            name = todo.pop()
            if name not in selected:
                selected.add(name)
                todo.extend(required.lower() for required in (metas[name].required_plugins if name in metas else ()))
        return selected

    def all_hooks(self, owner: str) -> list[HookScript]:
        """Every hook an owner (``Crawl`` or ``Snapshot``) runs, ordered by step then name."""
        state = self._current()
        hooks = state.hooks.get(owner)
        if hooks is None:
            hooks = state.hooks[owner] = find_hooks(state.plugins, owner)
        return hooks

    def chosen(self, layers: Sequence[Mapping[str, Any]]) -> set[str]:
        """The plugins named by ``PLUGINS`` (``add --plugins``) and those they require, lower-cased;
        empty means all."""
        allow = plugin_config.resolve_key("PLUGINS", plugin_config.GLOBAL_SCHEMA["PLUGINS"], layers)
        return self.with_requirements({p.strip().lower() for p in (allow or "").split(",") if p.strip()})

    def enabled_plugins(self, layers: Sequence[Mapping[str, Any]]) -> set[str]:
        """Without ``PLUGINS``, every plugin its ``<PLUGIN>_ENABLED`` leaves on. With it, exactly
        the plugins it names, each of them on even when disabled by default or in the
        config, as ArchiveBox's ``--plugins`` does (it sets their ``<PLUGIN>_ENABLED``)."""
        allowed = self.chosen(layers)
        state = self._current()
        if allowed:
            return {name for name in state.plugins if name.lower() in allowed}
        enabled = set()
        for name in state.plugins:
            key = plugin_config.enabled_key(name)
            try:
                on = plugin_config.resolve_key(key, state.schemas[name][key], layers, plugin=name)
            except ConfigError as err:
                # Run it anyway: its result then fails naming the bad key, and nothing else does.
                logger.warning("%s; treating %s as enabled so that its result reports the error", err, name)
                on = True
            if on:
                enabled.add(name)
        return enabled

    def hooks_for(self, model: str, layers: Sequence[Mapping[str, Any]]) -> list[HookScript]:
        """The enabled hooks of ``model``, ordered by step then name."""
        enabled = self.enabled_plugins(layers)
        return [h for h in self.all_hooks(model) if h.plugin in enabled]

    def resolved(self, plugin: str, layers: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """A hook's config: the shared base keys, the engine's global keys, its plugin's keys
        (a later group wins where they share a key)."""
        values = self.base_values(layers)
        values.update(plugin_config.resolve(plugin_config.GLOBAL_SCHEMA, layers))
        values.update(plugin_config.resolve(self.schema(plugin), layers, plugin=plugin))
        if plugin.lower() in self.chosen(layers):
            values[plugin_config.enabled_key(plugin)] = True  # chosen by name: it runs, and it knows it may
        return values

    def base_values(self, layers: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The keys of the ``base`` plugin's config.json (abx-plugins' shared keys), resolved
        for every hook when that plugin is on the plugin path; empty ones are left out."""
        schemas = self._current().schemas
        if BASE_PLUGIN not in schemas:
            return {}
        own = (plugin_config.enabled_key(BASE_PLUGIN), plugin_config.timeout_key(BASE_PLUGIN))
        schema = {key: spec for key, spec in schemas[BASE_PLUGIN].items() if key not in own}
        values = plugin_config.resolve(schema, layers, plugin=BASE_PLUGIN)
        return {key: value for key, value in values.items() if value not in ("", None)}

    def timeout(self, plugin: str, layers: Sequence[Mapping[str, Any]]) -> int:
        key = plugin_config.timeout_key(plugin)
        return int(plugin_config.resolve_key(key, self.schema(plugin)[key], layers, plugin=plugin))

    def known_keys(self) -> set[str]:
        """Every key a crawl's config may set: the global keys and each plugin's keys with
        their aliases."""
        return set(self.specs())

    def specs(self) -> dict[str, dict]:
        """Every key a crawl's config may set (aliases included), with its JSON-Schema spec."""
        specs = dict(plugin_config.GLOBAL_SCHEMA)
        for schema in self._current().schemas.values():
            for key, spec in schema.items():
                specs.setdefault(key, spec)
                for alias in spec.get("x-aliases") or ():
                    specs.setdefault(alias, spec)
        return specs

    def check_keys(self, keys: Iterable[str]) -> None:
        """Raise ConfigError naming the first unknown key and the nearest known one."""
        known = self.known_keys()
        for key in keys:
            if key not in known:
                near = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
                hint = f" (did you mean {near[0]}?)" if near else ""
                raise ConfigError(f"unknown config key {key}{hint}")

    def validate(self, layers: Sequence[Mapping[str, Any]]) -> None:
        """Raise ConfigError (naming the key) if any enabled plugin's value is invalid."""
        values = plugin_config.resolve(plugin_config.GLOBAL_SCHEMA, layers)
        hostrules.parse_limits(values["PER_HOST_LIMITS"])
        plugin_config.url_filter(layers)
        for plugin in self.enabled_plugins(layers):
            plugin_config.resolve(self.schema(plugin), layers, plugin=plugin)


def _mtime(path: Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


_CATALOGS: dict[tuple, PluginCatalog] = {}
_BY_SETTINGS: dict[tuple, PluginCatalog] = {}  # the same catalogs, by the arguments that named them


def catalog(data_dir: Path, extra_dirs: str = "", checked: bool = True) -> PluginCatalog:
    """The process-wide catalog for a data dir and ``PLUGIN_DIRS`` value (asked for several
    times per hook run: the folders are worked out once per pair of values). ``checked=False``:
    the config.json files are not checked against their meta-schema (jsonschema's import and
    the checks are a tenth of ``status``, which runs no hook and validates no value)."""
    found = _BY_SETTINGS.get((data_dir, extra_dirs, checked))
    if found is None:
        dirs = tuple(plugin_dirs(data_dir, extra_dirs))
        if (dirs, checked) not in _CATALOGS:
            _CATALOGS[dirs, checked] = PluginCatalog(dirs, recheck_every=RECHECK_EVERY, checked=checked)
        found = _BY_SETTINGS[(data_dir, extra_dirs, checked)] = _CATALOGS[dirs, checked]
    return found


def layers(*, snapshot_config: Mapping | None = None, crawl_config: Mapping | None = None,
           environ: Mapping[str, str] | None = None, file_values: Mapping[str, str] | None = None) -> list[Mapping[str, Any]]:
    """The lookup layers, most specific first."""
    environ = os.environ if environ is None else environ
    return [snapshot_config or {}, crawl_config or {}, environ, file_values or {}]
