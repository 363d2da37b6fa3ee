"""The side-effects pool: ``huey_consumer archivebox.sideeffects.huey -w 8``.

Importing this module sets up Django and registers every side effect on the
``sideeffects`` queue (and the tick task that wakes rows dispatch).
"""

from archivebox import boot

boot.setup()

from archivebox.process.worker import listener_for  # noqa: E402
from archivebox.sideeffects import crawl, hooks, index, results, snapshot, wake  # noqa: E402,F401
from archivebox.sideeffects.queue import huey  # noqa: E402
from archivebox.tasks import actor_types  # noqa: E402,F401

huey.consumer_hooks[:] = [listener_for("sideeffects")]

__all__ = ["huey"]
