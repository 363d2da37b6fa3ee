"""Side effects: the I/O of the engine, run after commit on their own Huey queue.

Side effects may spawn processes, write files, create child rows and set ``retry_at``
on other rows; they never set another row's status. Each is idempotent for its key
(name + arguments). ``huey_consumer archivebox.pools.sideeffects`` runs them.
"""
