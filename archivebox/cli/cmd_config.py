"""Show, search and change the collection's configuration (ArchiveBox.conf).

`archivebox config` prints every key with its current value; `--get KEY...` prints those
keys; `--set KEY=VALUE...` checks each key and value against the engine's and the plugins'
schemas and writes them all to ArchiveBox.conf (or none, if one is invalid), keeping the
file's comments; `--search WORD` finds keys by name, alias, description or value;
`--reset KEY...` removes keys from the file so their defaults apply again. The environment
overrides the file: a key set in both is reported.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from django.conf import settings

from archivebox.cli import CommandError
from archivebox.config import CONFIG_FILENAME, ConfigError, read_config_file
from archivebox.hooks import config as plugin_config
from archivebox.hooks import keys as config_keys
from archivebox.core.reads import plugin_catalog


def register(parser) -> None:
    actions = parser.add_mutually_exclusive_group()
    actions.add_argument("--get", action="store_true", help="print the values of the given KEYs")
    actions.add_argument("--set", action="store_true", help="write the given KEY=VALUE pairs to ArchiveBox.conf")
    actions.add_argument("--search", action="store_true", help="find keys whose name, description or value contain the given WORDs")
    actions.add_argument("--reset", action="store_true", help="remove the given KEYs from ArchiveBox.conf (their defaults apply)")
    parser.add_argument("items", nargs="*", metavar="KEY[=VALUE]")


def render(value) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    return "" if value is None else str(value)


def current_values(known: dict, file_values: dict) -> dict[str, str]:
    """What each key is now: the environment, else ArchiveBox.conf, else its fallback key
    (a plugin's ``<PLUGIN>_TIMEOUT`` falls back to ``TIMEOUT``), else its default."""
    layers = [os.environ, file_values]
    values = {}
    for name, key in known.items():
        if key.owner == "engine":
            values[name] = next((layer[name] for layer in layers if layer.get(name, "") != ""), render(key.default))
            continue
        try:
            values[name] = render(plugin_config.resolve_key(name, key.spec, layers))
        except ConfigError as err:  # shown as it is, with why it is invalid
            values[name] = f"{next((layer[name] for layer in layers if layer.get(name, '') != ''), '')}  # invalid: {err}"
    return values


def run(args) -> int:
    path = settings.DATA_DIR / CONFIG_FILENAME
    known = config_keys.all_keys(plugin_catalog())
    if args.set:
        return set_values(path, known, args.items)
    if args.reset:
        return reset_values(path, known, args.items)
    values = current_values(known, read_config_file(settings.DATA_DIR))
    if args.search:
        if not args.items:
            raise CommandError("--search needs a word", code=2)
        found = sorted({key.name for word in args.items for key in config_keys.search(word, known, values)})
        for name in found:
            print(f"{name}={values[name]}")
        return 0 if found else 1
    if args.get:
        if not args.items:
            raise CommandError("--get needs at least one KEY", code=2)
        chosen = [lookup(known, item) for item in args.items]
        for key in chosen:
            print(f"{key.name}={values[key.name]}")
        return 0
    if args.items:
        raise CommandError("pass --get, --set, --search or --reset with KEYs (or no arguments to print every key)", code=2)
    for name in sorted(known):
        print(f"{name}={values[name]}")
    return 0


def lookup(known: dict, name: str):
    try:
        return config_keys.lookup(name, known)
    except ConfigError as err:
        raise CommandError(str(err), code=2) from None


def set_values(path: Path, known: dict, items: list[str]) -> int:
    if not items:
        raise CommandError("--set needs at least one KEY=VALUE", code=2)
    updates: dict[str, tuple[str, str]] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            raise CommandError(f"--set expects KEY=VALUE, got {item!r}", code=2)
        key = lookup(known, name)
        try:
            config_keys.check_value(key, raw.strip())
        except ConfigError as err:
            raise CommandError(f"invalid value: {err}", code=2) from None
        updates[key.name] = (key.section, raw.strip())
    write_config(path, updates)
    for name, (_section, value) in updates.items():
        print(f"{name}={value}")
        if os.environ.get(name, "") != "":
            print(f"archivebox config: warning: {name} is also set in the environment ({os.environ[name]!r}), which wins",
                  file=sys.stderr)
    return 0


def reset_values(path: Path, known: dict, items: list[str]) -> int:
    if not items:
        raise CommandError("--reset needs at least one KEY", code=2)
    names = {lookup(known, item).name for item in items}
    write_config(path, {name: (known[name].section, None) for name in names})
    for name in sorted(names):
        print(f"{name}={render(known[name].default)}")
    return 0


KEY_LINE = re.compile(r"^\s*([A-Za-z0-9_]+)\s*[=:]")
SECTION_LINE = re.compile(r"^\s*\[([^\]]+)\]\s*$")


def write_config(path: Path, updates: dict[str, tuple[str, str | None]]) -> None:
    """Set (or, with None, remove) keys in ArchiveBox.conf, line by line so that comments
    and layout stay; written to a temporary file and renamed over the old one."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    pending = dict(updates)
    out: list[str] = []
    for line in lines:
        match = KEY_LINE.match(line)
        name = match.group(1).upper() if match and not line.lstrip().startswith(("#", ";")) else None
        if name in updates:
            value = pending.pop(name, None) and updates[name][1]
            if value is not None:
                out.append(f"{name} = {value}")
            continue  # removed, or a repeat of a key already written
        out.append(line)
    for name, (section, value) in pending.items():
        if value is None:
            continue
        header = next((i for i, line in enumerate(out) if (m := SECTION_LINE.match(line)) and m.group(1).strip() == section), None)
        if header is None:
            out += ["", f"[{section}]"]
            header = len(out) - 1
        out.insert(header + 1, f"{name} = {value}")
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        temporary.write_text("\n".join(out) + "\n", encoding="utf-8")
        os.replace(temporary, path)
    except OSError as err:
        raise CommandError(f"cannot write {path}: {err.strerror}") from None
