"""The programs the built-in plugins run from this machine (wget, Chromium, ...).

A built-in plugin names its program in a ``*_BINARY`` config key (``WGET_BINARY=wget``,
``CHROME_BINARY`` empty for the first Chromium on ``PATH``) and runs what ``PATH`` gives:
nothing is provisioned for it, so it has no Binary row. ``archivebox install`` and
``archivebox status`` list these beside the provisioned ones, so that "which wget is used"
has an answer there too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from archivebox.hooks import config as plugin_config
from archivebox.hooks.catalog import PluginCatalog
from archivebox.process.browser import find_binary

VERSION_TIMEOUT = 10.0


@dataclass
class SystemBinary:
    """One program a built-in plugin runs: its config key, what it is set to, where it was found."""

    key: str
    name: str
    plugins: list[str] = field(default_factory=list)
    path: str | None = None
    problem: str = ""

    def version(self) -> str:
        """Its ``--version``'s first line ('' when it has none or does not answer in time)."""
        if not self.path:
            return ""
        try:
            done = subprocess.run([self.path, "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT,
                                  stdin=subprocess.DEVNULL, env={"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/")})
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return next((line.strip() for line in done.stdout.splitlines() if line.strip()), "")[:80]


def used(cat: PluginCatalog, layers: Sequence[Mapping[str, Any]], enabled: set[str]) -> list[SystemBinary]:
    """The programs the enabled plugins name in their ``*_BINARY`` keys, found on this machine's PATH."""
    found: dict[str, SystemBinary] = {}
    for plugin in sorted(enabled):
        # Only these keys are resolved (as cat.resolved would: a plugin's own keys win over the
        # shared ones), so no other key's value is checked (and jsonschema is not imported).
        keys = {key: spec for key, spec in cat.schema(plugin).items() if key.endswith("_BINARY")}
        for key, spec in keys.items():
            value = str(plugin_config.resolve_key(key, spec, layers, plugin=plugin) or "").strip()
            entry = found.get(key)
            if entry is None:
                entry = found[key] = locate(key, value)
            entry.plugins.append(plugin)
    return sorted(found.values(), key=lambda b: b.name)


def locate(key: str, value: str) -> SystemBinary:
    if key == "CHROME_BINARY":
        path, why = find_binary(value)
        return SystemBinary(key, os.path.basename(path) if path else (value or "chromium"), path=path, problem="" if path else why)
    if not value:
        return SystemBinary(key, key.removesuffix("_BINARY").lower(), problem=f"{key} is empty")
    path = shutil.which(value)
    return SystemBinary(key, os.path.basename(value), path=path, problem="" if path else f"{value} not found on PATH")
