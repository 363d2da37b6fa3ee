"""How a hook file asks to be run: its shebang line and its PEP 723 ``# /// script`` block.

abx-plugins hooks start with ``#!/usr/bin/env -S abxpkg run --script
--deps-from=./config.json:required_binaries python3`` and declare ``requires-python =
">=3.12"``: "provision the binaries this config declares, then run me with python3". The
engine honours that itself (:mod:`archivebox.binaries.hookrun`) rather than starting
abxpkg's CLI for every hook: it provisions the declared binaries once per machine (Binary
rows, one install at a time per binary) and execs the interpreter directly with the same
environment ``abxpkg run --script`` would give. Any other shebang is executed as written.

This module only reads files; it starts nothing and knows nothing of Django.
"""

from __future__ import annotations

import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

# Only the head of a hook is read: the shebang and the metadata block sit at the top.
HEAD_BYTES = 8192
# ``abxpkg run`` options that take a value (``--opt=value`` or ``--opt value``).
ABXPKG_VALUE_OPTIONS = {"--lib", "--binproviders", "--deps-from", "--overrides", "--min-version", "--max-version",
                        "--install-args", "--packages", "--abspath", "--version"}


class ScriptError(ValueError):
    """A hook's shebang or metadata block cannot be understood (the message says which)."""


@dataclass(frozen=True)
class Launch:
    """What a hook file says about how to run it.

    ``interpreter`` is the program named last in an ``abxpkg run --script`` shebang (``python3``,
    ``node``) or the program of any other shebang; ``shebang`` is the whole shebang argv;
    ``deps_from`` are abxpkg's ``--deps-from`` specs (``./config.json:required_binaries``)."""

    shebang: tuple[str, ...] = ()
    interpreter: str = ""
    via_abxpkg: bool = False
    deps_from: tuple[str, ...] = ()
    binproviders: str = ""
    requires_python: str = ""
    metadata: dict = field(default_factory=dict)

    @property
    def is_python(self) -> bool:
        name = Path(self.interpreter).name
        return name.startswith("python") or (not self.interpreter and not self.shebang)


def parse_shebang(line: str) -> tuple[str, ...]:
    """``#!/usr/bin/env -S abxpkg run x`` -> ``("/usr/bin/env", "-S", "abxpkg", "run", "x")``.

    The kernel passes everything after the program as one argument; ``env -S`` splits it
    again. Splitting with shell rules gives what ``env -S`` would for every shebang seen
    in practice."""
    if not line.startswith("#!"):
        return ()
    try:
        return tuple(shlex.split(line[2:].strip()))
    except ValueError as err:
        raise ScriptError(f"unreadable shebang line {line.strip()!r}: {err}") from None


def command_of(shebang: tuple[str, ...]) -> tuple[str, ...]:
    """The command a shebang runs, without ``/usr/bin/env`` and its ``-S``/``-i`` flags."""
    argv = list(shebang)
    if argv and Path(argv[0]).name == "env":
        argv = argv[1:]
        while argv and argv[0].startswith("-") and argv[0] != "--":
            argv = argv[1:]
        if argv and argv[0] == "--":
            argv = argv[1:]
    return tuple(argv)


def parse_abxpkg_run(command: tuple[str, ...]) -> tuple[dict[str, str], str] | None:
    """``abxpkg run --script [options] INTERPRETER`` -> (options, interpreter); None for any other command."""
    if len(command) < 2 or Path(command[0]).name != "abxpkg" or command[1] != "run" or "--script" not in command:
        return None
    options: dict[str, str] = {}
    rest = [part for part in command[2:] if part != "--script"]
    i = 0
    while i < len(rest) and rest[i].startswith("--"):
        name, sep, value = rest[i].partition("=")
        if not sep and name in ABXPKG_VALUE_OPTIONS and i + 1 < len(rest):
            value, i = rest[i + 1], i + 1
        options[name] = value
        i += 1
    if i >= len(rest):
        raise ScriptError(f"abxpkg run --script names no interpreter: {' '.join(command)!r}")
    return options, rest[i]


def script_metadata(text: str) -> dict:
    """The TOML of a PEP 723 ``# /// script`` block, or {} if there is none."""
    lines = text.splitlines()
    for start, line in enumerate(lines):
        if line.strip() == "# /// script":
            break
    else:
        return {}
    body = []
    for line in lines[start + 1:]:
        if line.strip() == "# ///":
            break
        if not line.startswith("#"):
            raise ScriptError("unterminated '# /// script' block")
        body.append(line[2:] if line.startswith("# ") else line[1:])
    else:
        raise ScriptError("unterminated '# /// script' block")
    try:
        return tomllib.loads("\n".join(body))
    except tomllib.TOMLDecodeError as err:
        raise ScriptError(f"invalid TOML in its '# /// script' block: {err}") from None


def read_launch(path: Path) -> Launch:
    """What ``path`` says about how to run it (raises ScriptError for a malformed head)."""
    with open(path, "rb") as script:
        head = script.read(HEAD_BYTES).decode("utf-8", errors="replace")
    first = head.split("\n", 1)[0]
    shebang = parse_shebang(first)
    metadata = script_metadata(head)
    requires = str(metadata.get("requires-python") or "")
    command = command_of(shebang)
    abxpkg = parse_abxpkg_run(command)
    if abxpkg is not None:
        options, interpreter = abxpkg
        deps = tuple(spec for spec in options.get("--deps-from", "").split(",") if spec.strip())
        return Launch(shebang, interpreter, True, deps, options.get("--binproviders", ""), requires, metadata)
    return Launch(shebang, command[0] if command else "", False, (), "", requires, metadata)
