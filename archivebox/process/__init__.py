"""Subprocesses and workers, each tracked by a :class:`~archivebox.core.models.Process` row."""
