"""Every lifecycle event a pluggy plugin can observe.

Implementations are observers: they must not raise (an exception is logged and the
engine carries on) and must not block, because most of these fire on the hot path.
"""

import pluggy

hookspec = pluggy.HookspecMarker("archivebox")


# Objects (DB rows) ----------------------------------------------------------------

@hookspec
def on_object_init(obj):
    """A model instance was created in memory (``__init__``), new or loaded from the DB."""


@hookspec
def on_object_clean(obj):
    """``obj.full_clean()``/``obj.clean()`` is validating the instance."""


@hookspec
def on_object_save(obj):
    """``obj.save()`` is about to write the instance."""


# Orchestrator ---------------------------------------------------------------------

@hookspec
def on_orchestrator_startup(orchestrator):
    """This process took the orchestrator lease for the collection."""


@hookspec
def on_orchestrator_tick_started(orchestrator, actor_types):
    """One scan pass over all actor types begins."""


@hookspec
def on_orchestrator_idle(orchestrator, actor_types):
    """A scan pass found nothing due."""


@hookspec
def on_orchestrator_shutdown(orchestrator):
    """This process released (or lost) the orchestrator lease."""


# Actors (tick runners) ------------------------------------------------------------

@hookspec
def on_actor_startup(actor_type, worker):
    """A tick worker of the pool started and can run ticks of ``actor_type``."""


@hookspec
def on_actor_tick_start(actor_type, obj):
    """A tick claimed ``obj`` and is about to decide."""


@hookspec
def on_actor_tick_end(actor_type, obj):
    """A tick on ``obj`` finished (whatever it decided)."""


@hookspec
def on_actor_tick_exception(actor_type, obj, exception):
    """A tick on ``obj`` raised; it will be retried with backoff or given up."""


@hookspec
def on_actor_shutdown(actor_type, worker):
    """A tick worker of the pool is stopping."""


# Transitions ----------------------------------------------------------------------

@hookspec
def on_transition_start(obj, edge):
    """A compare-and-swap write for ``edge`` (source -> target) is about to run."""


@hookspec
def on_transition_end(obj, edge, won):
    """The write for ``edge`` ran; ``won`` tells whether it changed the row."""


# Side effects ---------------------------------------------------------------------

@hookspec
def on_sideeffect_started(name, key):
    """Side effect ``name`` with idempotency ``key`` began running."""


@hookspec
def on_sideeffect_succeeded(name, key):
    """Side effect ``name`` with ``key`` finished."""


@hookspec
def on_sideeffect_failed(name, key, exception):
    """Side effect ``name`` with ``key`` raised ``exception``."""
