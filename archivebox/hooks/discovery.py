"""Finding hook scripts: ``<plugin dir>/<plugin>/on_<Event>__<NN>_<name>[.<labels>].<ext>``.

Each owner runs the hooks of its events (:data:`OWNER_EVENTS`): a snapshot its
``Snapshot`` hooks; a crawl, before any of its snapshots starts, its ``CrawlSetup`` hooks
(abx-plugins 1.13, such as the browser launch) and its ``Crawl`` hooks (abx-plugins 1.11),
together, in step order.

The first digit of ``NN`` is the step (0-9); hooks without a number run in step 9 (with a
warning). A ``bg`` label anywhere among the labels (``.bg.py``, ``.finite.bg.py``) marks a
background hook. Plugin directories are searched in order (built-in, then the data
dir's ``plugins/``, then ``PLUGIN_DIRS``); a plugin folder found later replaces one of
the same name found earlier. The result is ordered by step, then hook name.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

BUILTIN_PLUGINS_DIR = Path(__file__).resolve().parent.parent / "plugins"

HOOK_NAME = re.compile(
    r"^on_(?P<model>[A-Za-z]+)__(?:(?P<order>\d{2})_)?(?P<name>[A-Za-z0-9_-]+)(?P<labels>(?:\.[A-Za-z0-9_-]+)*)\.(?P<ext>[A-Za-z0-9]+)$"
)


@dataclass(frozen=True)
class HookScript:
    path: Path
    plugin: str
    model: str
    hook_name: str
    step: int
    order: int
    background: bool
    labels: tuple[str, ...]
    ext: str

    @property
    def sort_key(self) -> tuple[int, str]:
        return (self.step, self.hook_name)


def parse_hook_name(path: Path, plugin: str) -> HookScript | None:
    """The hook described by a file name, or None if the name is not a hook's."""
    match = HOOK_NAME.match(path.name)
    if match is None:
        return None
    order = match["order"]
    if order is None:
        logger.warning("hook %s/%s has no step number; it runs in step 9", plugin, path.name)
    labels = tuple(filter(None, match["labels"].split(".")))
    return HookScript(
        path=path,
        plugin=plugin,
        model=match["model"],
        hook_name=path.name,
        step=int(order[0]) if order else 9,
        order=int(order) if order else 99,
        background="bg" in labels,
        labels=labels,
        ext=match["ext"],
    )


def hook_order(hook_name: str) -> tuple[int, str]:
    """Where a hook comes in its owner's order: its full ``NN`` (99 without one), then its name,
    as abx-dl orders hooks."""
    match = HOOK_NAME.match(hook_name)
    return (int(match["order"]) if match and match["order"] else 99, hook_name)


def is_background(hook_name: str) -> bool:
    match = HOOK_NAME.match(hook_name)
    return bool(match) and "bg" in match["labels"].split(".")


def is_finite(hook_name: str) -> bool:
    """A ``.finite.bg`` hook: in the background, but its owner waits for it before it ends
    (a plain or ``.daemon.bg`` hook is stopped when its owner ends)."""
    match = HOOK_NAME.match(hook_name)
    return bool(match) and "finite" in match["labels"].split(".")


def is_daemon(hook_name: str) -> bool:
    """A ``.daemon.bg`` hook: a service with no wall-clock timeout, stopped at its owner's
    cleanup (a crawl's at the crawl's end, so that its snapshots' hooks can use it; a
    snapshot's once its other hooks are done). A plain ``.bg`` hook is stopped there too if
    it still runs, but its timeout holds."""
    match = HOOK_NAME.match(hook_name)
    return bool(match) and {"daemon", "bg"} <= set(match["labels"].split("."))


def stopped_at_cleanup(hook_name: str) -> bool:
    """A background hook its owner stops when its other hooks are done (``.daemon.bg`` and
    plain ``.bg``), rather than awaits (``.finite.bg``)."""
    return is_background(hook_name) and not is_finite(hook_name)


def plugin_dirs(data_dir: Path, extra: str = "") -> list[Path]:
    """Where plugins live, in increasing precedence."""
    dirs = [BUILTIN_PLUGINS_DIR, data_dir / "plugins"]
    dirs += [Path(p).expanduser() for p in extra.split(os.pathsep) if p.strip()]
    return dirs


def find_plugins(dirs: Iterable[Path]) -> dict[str, Path]:
    """``{plugin name: folder}``; a later directory overrides an earlier one."""
    plugins: dict[str, Path] = {}
    for root in dirs:
        try:
            entries = sorted(os.scandir(root), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            if entry.is_dir() and not entry.name.startswith((".", "_")):
                plugins[entry.name] = Path(entry.path)
    return plugins


# The hook events an owner (a crawl or a snapshot) runs.
OWNER_EVENTS: dict[str, tuple[str, ...]] = {"Crawl": ("CrawlSetup", "Crawl"), "Snapshot": ("Snapshot",)}


# Extensions run through an interpreter; any other hook file must be executable itself.
INTERPRETED = ("py", "sh", "js")


def runnable(path: Path, ext: str) -> bool:
    return ext in INTERPRETED or os.access(path, os.X_OK)


def find_hooks(plugins: dict[str, Path], owner: str) -> list[HookScript]:
    """Every hook an owner runs (``Crawl`` or ``Snapshot``, see :data:`OWNER_EVENTS`; any other
    name is one event) in the given plugin folders, ordered by step then name."""
    events = OWNER_EVENTS.get(owner, (owner,))
    prefixes = tuple(f"on_{event}__" for event in events)
    hooks = []
    for plugin, folder in plugins.items():
        for entry in os.scandir(folder):
            if entry.is_file() and entry.name.startswith(prefixes):
                hook = parse_hook_name(Path(entry.path), plugin)
                if hook is not None and hook.model in events and runnable(hook.path, hook.ext):
                    hooks.append(hook)
    return sorted(hooks, key=lambda h: h.sort_key)


