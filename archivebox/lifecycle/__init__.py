"""The pluggy plugin manager: lifecycle hooks for Python plugins.

Plugins are modules named in ``LIFECYCLE_PLUGINS`` (comma-separated import paths, read
into the engine config like every key) or published under the ``archivebox`` setuptools
entry-point group. :func:`notify` fires a hook, e.g.
``notify("on_actor_tick_start", actor_type=..., obj=...)``.
"""

from __future__ import annotations

import functools
import importlib
import logging

import pluggy
from django.conf import settings

from archivebox.lifecycle import hookspecs

logger = logging.getLogger(__name__)

hookimpl = pluggy.HookimplMarker("archivebox")


def build_plugin_manager(module_paths: list[str]) -> pluggy.PluginManager:
    """The one factory for plugin managers: specs, entry points, then named modules."""
    pm = pluggy.PluginManager("archivebox")
    pm.add_hookspecs(hookspecs)
    pm.load_setuptools_entrypoints("archivebox")
    for path in module_paths:
        pm.register(importlib.import_module(path), name=path)
    return pm


@functools.cache
def plugin_manager() -> pluggy.PluginManager:
    return build_plugin_manager(list(settings.ENGINE.lifecycle_plugins))


def notify(hook_name: str, /, **kwargs) -> None:
    """Fire hook ``hook_name``; an observer's exception is logged, never propagated."""
    caller = getattr(plugin_manager().hook, hook_name)
    if not caller.get_hookimpls():
        return
    try:
        caller(**kwargs)
    except Exception:
        logger.exception("lifecycle plugin failed in %s", hook_name)
