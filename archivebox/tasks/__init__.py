"""Ticks and the orchestrator, on the ``ticks`` Huey queue (consumed by ``huey_consumer archivebox.pools.ticks``)."""
