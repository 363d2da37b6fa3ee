"""What plugins exist, which are enabled, and the environment each hook run gets.

The catalog re-reads plugin folders only when one of them changed (by mtime), so ticks
can ask "which hooks should this snapshot run?" on every pass for the price of a few
``stat`` calls.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from archivebox.config import ConfigError
from archivebox.hooks import config as plugin_config
from archivebox.hooks.discovery import HookScript, find_hooks, find_plugins, plugin_dirs

logger = logging.getLogger(__name__)


class PluginCatalog:
    def __init__(self, dirs: Sequence[Path]):
        self.dirs = list(dirs)
        self._lock = threading.Lock()
        self._signature: tuple = ()
        self._plugins: dict[str, Path] = {}
        self._hooks: dict[str, list[HookScript]] = {}
        self._schemas: dict[str, dict[str, dict]] = {}

    def _current(self) -> None:
        signature = tuple(_mtime(d) for d in self.dirs)
        plugins = self._plugins if signature == self._signature[: len(self.dirs)] else find_plugins(self.dirs)
        signature += tuple(_mtime(p) for p in plugins.values())
        if signature == self._signature:
            return
        with self._lock:
            self._plugins = plugins
            self._hooks = {}
            self._schemas = {name: plugin_config.plugin_schema(name, plugin_config.load_schema(path)) for name, path in plugins.items()}
            self._signature = signature

    @property
    def plugins(self) -> dict[str, Path]:
        self._current()
        return self._plugins

    def schema(self, plugin: str) -> dict[str, dict]:
        self._current()
        return self._schemas[plugin]

    def all_hooks(self, model: str) -> list[HookScript]:
        self._current()
        hooks = self._hooks.get(model)
        if hooks is None:
            hooks = self._hooks[model] = find_hooks(self._plugins, model)
        return hooks

    def enabled_plugins(self, layers: Sequence[Mapping[str, Any]]) -> set[str]:
        allow = plugin_config.resolve_key("PLUGINS", plugin_config.GLOBAL_SCHEMA["PLUGINS"], layers)
        allowed = {p.strip().lower() for p in (allow or "").split(",") if p.strip()}
        enabled = set()
        for name in self.plugins:
            if allowed and name.lower() not in allowed:
                continue
            key = plugin_config.enabled_key(name)
            try:
                on = plugin_config.resolve_key(key, self.schema(name)[key], layers)
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
        values = plugin_config.resolve(plugin_config.GLOBAL_SCHEMA, layers)
        values.update(plugin_config.resolve(self.schema(plugin), layers))
        return values

    def timeout(self, plugin: str, layers: Sequence[Mapping[str, Any]]) -> int:
        key = plugin_config.timeout_key(plugin)
        return int(plugin_config.resolve_key(key, self.schema(plugin)[key], layers))

    def validate(self, layers: Sequence[Mapping[str, Any]]) -> None:
        """Raise ConfigError (naming the key) if any enabled plugin's value is invalid."""
        plugin_config.resolve(plugin_config.GLOBAL_SCHEMA, layers)
        plugin_config.url_filter(layers)
        for plugin in self.enabled_plugins(layers):
            plugin_config.resolve(self.schema(plugin), layers)


def _mtime(path: Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


_CATALOGS: dict[tuple, PluginCatalog] = {}


def catalog(data_dir: Path, extra_dirs: str = "") -> PluginCatalog:
    """The process-wide catalog for a data dir and ``PLUGIN_DIRS`` value."""
    dirs = tuple(plugin_dirs(data_dir, extra_dirs))
    if dirs not in _CATALOGS:
        _CATALOGS[dirs] = PluginCatalog(dirs)
    return _CATALOGS[dirs]


def layers(*, snapshot_config: Mapping | None = None, crawl_config: Mapping | None = None,
           environ: Mapping[str, str] | None = None, file_values: Mapping[str, str] | None = None) -> list[Mapping[str, Any]]:
    """The lookup layers, most specific first."""
    environ = os.environ if environ is None else environ
    return [snapshot_config or {}, crawl_config or {}, environ, file_values or {}]
