"""Side effects: the I/O of the engine, run after commit on their own Huey queue.

Side effects may spawn processes, write files, create child rows and set ``retry_at``
on other rows; they never set another row's status. Each is idempotent for its key
(name + arguments).

``huey_consumer archivebox.sideeffects.huey`` loads every side effect through the lazy
``huey`` attribute below, which keeps ``import archivebox.sideeffects.<module>`` light
for the transitions that enqueue them.
"""

import importlib


def __getattr__(name):
    if name == "huey":
        return importlib.import_module("archivebox.sideeffects.pool").huey
    raise AttributeError(name)
