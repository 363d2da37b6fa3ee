"""Finding a Python interpreter that satisfies a hook's ``requires-python``.

The engine itself runs on Python 3.11; abx-plugins 1.13 asks for >= 3.12. Hooks then run
under an interpreter found on the machine, in this order: the ``HOOK_PYTHON`` setting (a
path or a command name), ``python3.N`` commands on ``PATH`` (newest first), then pyenv's
installed versions (``$PYENV_ROOT/versions/*/bin/python3``). An interpreter's version is
read from where it lives (its ``pyvenv.cfg``, its ``lib/python3.N`` folder, its name), so
looking costs no subprocess.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

VERSIONED_NAME = re.compile(r"^python(\d+)\.(\d+)$")
VERSION_DIR = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")


class NoPython(LookupError):
    """No interpreter on this machine satisfies the specifier (the message says what was looked at)."""


def parse_spec(requires: str) -> SpecifierSet:
    try:
        return SpecifierSet(requires)
    except InvalidSpecifier:
        raise NoPython(f"invalid requires-python {requires!r}") from None


def running_version() -> Version:
    return Version(".".join(map(str, sys.version_info[:3])))


def version_of(executable: Path) -> Version | None:
    """The version of the interpreter at ``executable``, read from the files around it."""
    real = executable.resolve()
    for folder in (executable.parent.parent, real.parent.parent):
        cfg = folder / "pyvenv.cfg"
        if cfg.is_file():
            for line in cfg.read_text(errors="replace").splitlines():
                key, _, value = line.partition("=")
                if key.strip() in ("version", "version_info") and VERSION_DIR.match(value.strip()):
                    return Version(value.strip())
        match = VERSION_DIR.match(folder.name)  # pyenv: versions/3.12.1/bin/python3
        if match:
            return Version(folder.name)
    for name in (executable.name, real.name):
        match = VERSIONED_NAME.match(name)
        if match:
            return Version(f"{match[1]}.{match[2]}")
    libs = sorted((real.parent.parent / "lib").glob("python3.*"))
    for lib in reversed(libs):
        match = re.fullmatch(r"python(\d+)\.(\d+)", lib.name)
        if match:
            return Version(f"{match[1]}.{match[2]}")
    return None


def candidates(environ: Mapping[str, str]) -> Iterable[Path]:
    """Interpreters on this machine, most preferred first (newest first within each place)."""
    path = environ.get("PATH", "")
    seen: set[str] = set()
    found: list[tuple[Version, Path]] = []
    for folder in path.split(os.pathsep):
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        for name in names:
            match = VERSIONED_NAME.match(name)
            if match and f"{match[1]}.{match[2]}" not in seen:
                exe = Path(folder) / name
                if _runnable(exe):
                    seen.add(f"{match[1]}.{match[2]}")
                    found.append((Version(f"{match[1]}.{match[2]}"), exe))
    yield from (exe for _, exe in sorted(found, reverse=True))
    pyenv_root = Path(environ.get("PYENV_ROOT") or Path(environ.get("HOME", "~")).expanduser() / ".pyenv")
    versions = []
    try:
        entries = os.listdir(pyenv_root / "versions")
    except OSError:
        entries = []
    for name in entries:
        if VERSION_DIR.match(name) and _runnable(pyenv_root / "versions" / name / "bin" / "python3"):
            versions.append((Version(name), pyenv_root / "versions" / name / "bin" / "python3"))
    yield from (exe for _, exe in sorted(versions, reverse=True))


def _runnable(exe: Path) -> bool:
    """A real interpreter (pyenv's shims name versions that may not be selected: skip them)."""
    return exe.is_file() and os.access(exe, os.X_OK) and "shims" not in exe.parts


def find_python(requires: str, configured: str = "", environ: Mapping[str, str] | None = None) -> tuple[Path, Version]:
    """An interpreter satisfying ``requires`` (e.g. ``>=3.12``): ``configured`` (HOOK_PYTHON)
    if set (it must satisfy it), else the newest found. Raises NoPython saying why."""
    environ = os.environ if environ is None else environ
    spec = parse_spec(requires)
    if configured:
        exe = Path(configured) if os.sep in configured else Path(shutil.which(configured, path=environ.get("PATH")) or configured)
        version = version_of(exe) if exe.is_file() else None
        if version is None:
            raise NoPython(f"HOOK_PYTHON={configured} is not a Python interpreter this machine has")
        if version not in spec:
            raise NoPython(f"HOOK_PYTHON={configured} is Python {version}, the hook requires-python {requires}")
        return exe, version
    looked = []
    for exe in candidates(environ):
        version = version_of(exe)
        if version is not None and spec.contains(version, prereleases=True):
            return exe, version
        looked.append(f"{exe} ({version})")
    where = ", ".join(looked) if looked else "none on PATH or in pyenv"
    raise NoPython(f"no Python satisfying requires-python {requires} on this machine (found: {where}); "
                   f"install one or set HOOK_PYTHON")


SITE_FOLDERS = ("site-packages", "dist-packages")


def environment_of(path: Path) -> tuple[Path, Version] | None:
    """The interpreter of the Python environment whose ``site-packages`` holds ``path`` (a
    plugin folder installed as a package: ``<env>/lib/python3.12/site-packages/...``), and
    its version; None if ``path`` is not inside one. Raises NoPython if it is, but the
    environment has no interpreter this machine can run."""
    real = path.resolve()
    site = next((parent for parent in real.parents if parent.name in SITE_FOLDERS), None)
    if site is None:
        return None
    lib = site.parent  # lib/python3.12 (or Debian's lib/python3)
    prefix = lib.parent.parent
    match = VERSIONED_NAME.match(lib.name)
    names = [f"python{match[1]}.{match[2]}"] if match else []
    for name in (*names, "python3", "python"):
        exe = prefix / "bin" / name
        if _runnable(exe):
            version = version_of(exe)
            if version is not None and (not match or (version.major, version.minor) == (int(match[1]), int(match[2]))):
                return exe, version
    if match:  # a user site (~/.local/lib/python3.12/site-packages): that version's interpreter
        return find_python(f"=={match[1]}.{match[2]}.*")
    raise NoPython(f"{site} belongs to no Python interpreter this machine can run (looked in {prefix / 'bin'})")
