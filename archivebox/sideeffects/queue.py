"""The ``sideeffects`` queue, and the decorator that makes a function the one that carries out a side effect."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import logging

from django.conf import settings
from django.db import close_old_connections

from huey.api import TaskWrapper

from archivebox.broker.huey_ext import build_huey
from archivebox.core import diskspace
from archivebox.lifecycle import notify
from archivebox.transitions.effects import Effect, effect_classes

logger = logging.getLogger(__name__)

huey = build_huey("sideeffects", settings.QUEUE_DIR, settings.REDIS_URL)


def sideeffect(effect: type[Effect]):
    """Register the decorated function as what carries out ``effect``, as a task of the
    ``sideeffects`` queue (named ``sideeffect.<function>``).

    The function takes the effect's fields as its parameters, in order and by the same
    names (checked here, at import). Enqueueing is :func:`send`; the task's Huey
    ``call_local(*args)`` runs it here and now. Every side effect must be idempotent for
    its key (class + arguments): running it twice changes nothing. A failure is logged and
    reported to plugins, never retried by Huey: the tick that needs the effect notices it
    is missing and asks again.
    """
    def register(func):
        _check_parameters(func, effect)
        if effect in TASKS:
            raise TypeError(f"{effect.__name__} is carried out by {TASKS[effect].name} already")
        name = func.__name__

        @functools.wraps(func)
        def run(*args):
            key = ":".join([effect.__name__, *map(str, args)])
            close_old_connections()
            notify("on_sideeffect_started", name=name, key=key)
            try:
                func(*args)
            except Exception as err:
                if diskspace.is_disk_full(err):  # said once a minute, in one line; the tick asks again
                    diskspace.report(f"side effect {key}", settings.DATA_DIR)
                else:
                    logger.exception("side effect %s failed", key)
                notify("on_sideeffect_failed", name=name, key=key, exception=err)
                return None
            notify("on_sideeffect_succeeded", name=name, key=key)
            return None

        task = huey.task(name=f"sideeffect.{name}")(run)
        TASKS[effect] = task
        return task

    return register


def _check_parameters(func, effect: type[Effect]) -> None:
    wanted = [field.name for field in dataclasses.fields(effect)]
    given = list(inspect.signature(func).parameters)
    if given != wanted:
        raise TypeError(f"{func.__module__}.{func.__name__} carries out {effect.__name__}: its parameters must be "
                        f"{wanted}, not {given}")


# What carries out each side effect (filled by @sideeffect as the modules of
# archivebox.sideeffects.registry are imported).
TASKS: dict[type[Effect], TaskWrapper] = {}


def unhandled() -> list[str]:
    """The side effects declared without a function that carries them out."""
    return sorted(cls.__name__ for cls in effect_classes() if cls not in TASKS)


def send(effect: Effect) -> None:
    """Enqueue the task that carries out ``effect``."""
    TASKS[type(effect)](*effect.args)
