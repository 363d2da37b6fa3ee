"""How a third-party hook runs: the way its file says.

Built-in hooks keep the engine's fast path (a fork of the pre-warmed interpreter). Any
other hook is read first (:func:`archivebox.hooks.scripts.read_launch`):

* ``#!/usr/bin/env -S abxpkg run --script [--deps-from=...] INTERPRETER`` (abx-plugins):
  the binaries its ``--deps-from`` files declare are provisioned once per machine
  (:func:`archivebox.binaries.provision.ensure`), each resolved path is put in the
  environment under its config key (``TRAFILATURA_BINARY=/.../trafilatura``) with its
  provider's PATH, PYTHONPATH and NODE_PATH entries, and the script runs under
  INTERPRETER: the hooks' Python runtime (abxpkg and abx-plugins installed, the hook's
  ``requires-python`` met) for ``python3``, the provisioned Node.js for ``node``. This is
  what ``abxpkg run --script`` would exec, without starting abxpkg's CLI for every hook.
* A Python hook whose ``requires-python`` the engine's interpreter does not meet runs
  under the hooks' runtime.
* Any other shebang runs as written (``#!/bin/bash``, ``#!/usr/bin/env -S uv run --script``).
* A Python hook that asks for nothing special (a plain ``python3`` shebang or none) keeps
  the fast path: the engine's interpreter is what it asks for.

A hook in an ``abx_plugins/plugins/<plugin>/`` source folder also gets that source on its
``PYTHONPATH``, so ``import abx_plugins...`` works without the package installed.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from archivebox.binaries import provision
from archivebox.binaries.provision import Runtime, Unavailable
from archivebox.binaries.requests import BinaryRequest, RequestError, read_deps_from
from archivebox.config import EngineConfig
from archivebox.core.models import Machine
from archivebox.hooks.discovery import BUILTIN_PLUGINS_DIR, HookScript
from archivebox.hooks.pythons import NoPython, parse_spec, running_version
from archivebox.hooks.scripts import Launch, ScriptError, read_launch

PATHLIKE = ("PATH", "PYTHONPATH", "NODE_PATH")


@dataclass(frozen=True)
class Plan:
    """The command prefix (interpreter and its flags) and the environment of a hook run."""

    prefix: tuple[str, ...]
    env: dict[str, str]


def is_builtin(hook: HookScript) -> bool:
    return hook.path.is_relative_to(BUILTIN_PLUGINS_DIR)


def plan(hook: HookScript, env: dict[str, str], machine: Machine, config: EngineConfig) -> Plan | None:
    """How to run ``hook`` if not on the fast path (None: as before, by its extension).
    Raises :class:`Unavailable` when what it needs cannot be had, saying why."""
    if is_builtin(hook):
        return None
    try:
        launch = read_launch(hook.path)
    except (OSError, ScriptError) as err:
        raise Unavailable(f"cannot read how to run {hook.path.name}: {err}") from None
    if launch.via_abxpkg:
        return _abxpkg_plan(hook, launch, env, machine, config)
    if launch.is_python and hook.ext == "py":
        if not launch.requires_python or _met_by_engine(launch.requires_python):
            if not launch.shebang or Path(launch.interpreter).name in ("python", "python3"):
                return None
        runtime = provision.ensure_runtime(machine, config, launch.requires_python)
        return Plan((str(runtime.python),), _with_runtime(hook, env, runtime))
    if launch.shebang:
        return Plan(launch.shebang, dict(env))
    return None


def _met_by_engine(requires: str) -> bool:
    try:
        return parse_spec(requires).contains(running_version(), prereleases=True)
    except NoPython as err:
        raise Unavailable(str(err)) from None


def requests_for(hook: HookScript, env: dict[str, str], config: EngineConfig) -> list[BinaryRequest]:
    """The binaries ``hook`` declares through an abxpkg shebang's ``--deps-from`` (none
    for a built-in or any other hook). Raises :class:`Unavailable` if they cannot be read."""
    if is_builtin(hook):
        return []
    try:
        launch = read_launch(hook.path)
        return read_deps_from(launch.deps_from, hook.path.parent, env, config.binaries_dir) if launch.via_abxpkg else []
    except (OSError, ScriptError, RequestError) as err:
        raise Unavailable(f"{hook.plugin}/{hook.hook_name}: {err}") from None


def _abxpkg_plan(hook: HookScript, launch: Launch, env: dict[str, str], machine: Machine, config: EngineConfig) -> Plan:
    runtime = provision.ensure_runtime(machine, config, launch.requires_python or provision.RUNTIME_REQUIRES)
    try:
        requests = read_deps_from(launch.deps_from, hook.path.parent, env, config.binaries_dir)
    except RequestError as err:
        raise Unavailable(str(err)) from None
    env = _with_runtime(hook, env, runtime)
    interpreter = ""
    for request in requests:
        row = provision.ensure(request, machine, config, runtime)
        env = merge_env(env, row.env or {})
        env["PATH"] = _prepend(str(Path(row.abspath).parent), env.get("PATH", ""))
        if request.env_key:
            env[request.env_key] = row.abspath
        if Path(request.name).name == Path(launch.interpreter).name or request.env_key == f"{Path(launch.interpreter).name.upper()}_BINARY":
            interpreter = row.abspath
    if launch.is_python:
        interpreter = str(runtime.python)
    interpreter = interpreter or shutil.which(launch.interpreter, path=env.get("PATH")) or ""
    if not interpreter:
        raise Unavailable(f"{launch.interpreter}: not found on this machine (the hook's shebang runs it)")
    return Plan((interpreter,), env)


def _with_runtime(hook: HookScript, env: dict[str, str], runtime: Runtime) -> dict[str, str]:
    """The hook's environment with the runtime's bin folder first on PATH (its python3,
    abxpkg, uv), abxpkg's lib dir, and an abx-plugins source folder on PYTHONPATH."""
    env = dict(env)
    env["PATH"] = _prepend(str(runtime.bin_dir), env.get("PATH", ""))
    env["ABXPKG_LIB_DIR"] = str(runtime.lib_dir)  # where its binaries are: one lib dir per machine
    source = abx_plugins_source(hook.path)
    if source is not None:
        env["PYTHONPATH"] = _prepend(str(source), env.get("PYTHONPATH", ""))
    return env


def abx_plugins_source(path: Path) -> Path | None:
    """The folder holding an ``abx_plugins`` package the hook at ``path`` belongs to, if any
    (``.../abx_plugins/plugins/<plugin>/<hook>``: the package is importable from its parent)."""
    plugin_dir = path.resolve().parent
    package = plugin_dir.parent.parent
    if plugin_dir.parent.name == "plugins" and package.name == "abx_plugins" and (package / "__init__.py").is_file():
        return package.parent
    return None


def merge_env(env: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """``extra`` over ``env``: path-like values are prepended (without repeats), others set.
    (A PATH starting with ':' is appended, as abxpkg writes it.)"""
    merged = dict(env)
    for key, value in extra.items():
        if key in PATHLIKE:
            if value.startswith(os.pathsep):
                merged[key] = _prepend(merged.get(key, ""), value[1:]) if merged.get(key) else value[1:]
            else:
                merged[key] = _prepend(value, merged.get(key, ""))
        elif key != "VIRTUAL_ENV":  # abxpkg's installer venv: not the hook's interpreter
            merged[key] = value
    return merged


def _prepend(first: str, rest: str) -> str:
    parts = [p for p in first.split(os.pathsep) + rest.split(os.pathsep) if p]
    return os.pathsep.join(dict.fromkeys(parts))
