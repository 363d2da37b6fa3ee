"""The ``sideeffects`` queue and the decorator that turns a function into a keyed side effect."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

from django.conf import settings
from django.db import close_old_connections

from archivebox.broker import build_huey
from archivebox.lifecycle import notify

logger = logging.getLogger(__name__)

huey = build_huey("sideeffects", settings.QUEUE_DIR, settings.REDIS_URL)


def sideeffect_key(name: str, args: tuple) -> str:
    """The idempotency key of one side-effect call: its name and its arguments."""
    return ":".join([name, *map(str, args)])


def sideeffect(func):
    """Register ``func`` as a side effect on the ``sideeffects`` queue.

    Calling the returned task enqueues it; ``.run(*args)`` runs it here and now. Every
    side effect must be idempotent for its key (name + arguments): running it twice
    changes nothing. A failure is logged and reported to plugins, never retried by
    Huey: the tick that needs the effect notices it is missing and asks again.
    """
    name = func.__name__

    @functools.wraps(func)
    def run(*args):
        key = sideeffect_key(name, args)
        close_old_connections()
        notify("on_sideeffect_started", name=name, key=key)
        try:
            func(*args)
        except Exception as err:
            logger.exception("side effect %s failed", key)
            notify("on_sideeffect_failed", name=name, key=key, exception=err)
            return None
        notify("on_sideeffect_succeeded", name=name, key=key)
        return None

    task = huey.task(name=f"sideeffect.{name}")(run)
    task.run = run
    task.effect_name = name
    return task


def sender(tasks) -> Callable[[str, tuple], None]:
    """What requests a named side effect: enqueue the task of that name (``tasks``: the
    side-effect tasks, see :mod:`archivebox.sideeffects.registry`)."""
    by_name = {task.effect_name: task for task in tasks}

    def send(name: str, args: tuple) -> None:
        try:
            task = by_name[name]
        except KeyError:
            raise LookupError(f"no side effect named {name!r}") from None
        task(*args)

    return send
