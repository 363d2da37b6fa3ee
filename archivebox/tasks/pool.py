"""The ticks pool: ``huey_consumer archivebox.tasks.huey -w 4``.

Importing this module sets up Django and registers every tick task, the orchestrator
and the actor types on the ``ticks`` queue.
"""

from archivebox import boot

boot.setup()

import threading  # noqa: E402

from archivebox.lifecycle import notify  # noqa: E402
from archivebox.process.worker import listener_for  # noqa: E402
from archivebox.tasks import actor_types, orchestrator, ticks  # noqa: E402,F401
from archivebox.tasks.queue import huey  # noqa: E402
from archivebox.tasks.registry import ACTOR_TYPES  # noqa: E402


class OrchestratorListener:
    """Starts this consumer's orchestrator loop (standby unless it wins the lease).

    It starts on the consumer's first loop, once the workers run and the signal handlers
    are installed, so a signal can never find a dispatching orchestrator without them.
    """

    def __init__(self, consumer):
        self.consumer = consumer
        self.started = False

    def on_start(self) -> None:
        pass

    def on_loop(self) -> None:
        if not self.started:
            self.started = True
            orchestrator.start_in_this_process()

    def on_stop(self, graceful: bool) -> None:
        orchestrator.LOOP.stop()


@huey.on_startup()
def actor_startup() -> None:
    """Each tick worker thread can run ticks of every actor type."""
    for actor_type in ACTOR_TYPES.values():
        notify("on_actor_startup", actor_type=actor_type, worker=threading.current_thread().name)


@huey.on_shutdown()
def actor_shutdown() -> None:
    for actor_type in ACTOR_TYPES.values():
        notify("on_actor_shutdown", actor_type=actor_type, worker=threading.current_thread().name)


huey.consumer_hooks[:] = [listener_for("ticks"), OrchestratorListener]

__all__ = ["huey"]
