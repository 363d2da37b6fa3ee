"""The two Huey queues of the project and the consumer adapted to them."""

from archivebox.broker.huey_ext import ArchiveboxConsumer, build_huey, shutting_down

__all__ = ["ArchiveboxConsumer", "build_huey", "shutting_down"]
