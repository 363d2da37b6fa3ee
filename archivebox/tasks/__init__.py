"""Ticks and the orchestrator, on the ``ticks`` Huey queue.

``huey_consumer archivebox.tasks.huey`` loads every tick task through the lazy ``huey``
attribute below, which keeps ``import archivebox.tasks.<module>`` light for the side
effects that dispatch ticks.
"""

import importlib


def __getattr__(name):
    if name == "huey":
        return importlib.import_module("archivebox.tasks.pool").huey
    raise AttributeError(name)
