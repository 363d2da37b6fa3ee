"""The engine's wiring, done once when Django starts (the one place where it is done).

The layers below import nothing above them (see ``docs/architecture.md``); what a lower
layer must reach above it is connected here, by :meth:`EngineConfig.ready`:

* the actor types (which rows the ticks handle, and how) are registered for the
  dispatchers and the tick tasks to look up by name;
* the side-effect functions are registered on their Huey queue (each for its
  :class:`~archivebox.transitions.effects.Effect` class; a class without one stops the
  start), and the transitions' effect requests are connected to it.

Every process gets the same wiring: the CLI, the Huey consumers, the web server and the
tests; only a CLI command that just reads (``list``, ``status``...) starts without it
(:func:`archivebox.boot.setup`).
"""

from __future__ import annotations

from django.apps import AppConfig


class EngineConfig(AppConfig):
    name = "archivebox"
    label = "engine"
    verbose_name = "Engine"

    def ready(self) -> None:
        from archivebox import boot  # noqa: PLC0415

        if not boot.wiring():
            return  # a CLI command that only reads
        # Imported here, not at the top: these modules import models, which Django loads
        # only after every app's config is known.
        from archivebox.sideeffects import queue, registry as sideeffects  # noqa: PLC0415
        from archivebox.tasks import actor_types, orchestrator, registry, ticks  # noqa: PLC0415,F401 - their tasks join the ticks queue
        from archivebox.transitions import effects  # noqa: PLC0415

        for actor_type in actor_types.ENGINE_ACTOR_TYPES:
            registry.register(actor_type)
        sideeffects.check()
        effects.connect(queue.send)
