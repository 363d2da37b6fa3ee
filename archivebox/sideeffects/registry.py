"""Every module that carries out side effects, imported once at start-up by :mod:`archivebox.apps`.

Each registers its functions with ``@sideeffect(<Effect class>)`` as it is imported;
:func:`check` then refuses to start an engine in which a declared side effect has no
function to carry it out.
"""

from archivebox.sideeffects import crawl, hooks, results, robots, snapshot, wake  # noqa: F401 - their @sideeffect functions register
from archivebox.sideeffects.queue import unhandled


class Unhandled(RuntimeError):
    """A side effect is declared (``transitions.effects``) with nothing to carry it out."""


def check() -> None:
    missing = unhandled()
    if missing:
        raise Unhandled(f"side effects without a function to carry them out: {', '.join(missing)}")

