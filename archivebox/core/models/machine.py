"""Machines: every Process and every lease names the machine it belongs to."""

from __future__ import annotations

import functools
import socket
from pathlib import Path

from django.db import models
from django.utils import timezone

from archivebox.core.models.base import ObservedModel


def local_machine_guid(configured: str = "") -> str:
    """A stable identity for this host: ``MACHINE_ID`` if configured, else hostname + /etc/machine-id."""
    return configured or _host_identity()


@functools.lru_cache(maxsize=1)
def _host_identity() -> str:
    """Read once per process: it is asked on every dispatch."""
    try:
        machine_id = Path("/etc/machine-id").read_text().strip()
    except OSError:
        machine_id = ""
    return f"{socket.gethostname()}:{machine_id}" if machine_id else socket.gethostname()


class Machine(ObservedModel):
    guid = models.CharField(max_length=255, unique=True)
    hostname = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.hostname or self.guid

    @classmethod
    def current(cls, configured_id: str = "") -> "Machine":
        """The row for the machine this process runs on (created on first use)."""
        return _current_machine(local_machine_guid(configured_id))


@functools.lru_cache(maxsize=8)
def _current_machine(guid: str) -> Machine:
    machine, _ = Machine.objects.get_or_create(guid=guid, defaults={"hostname": socket.gethostname()})
    return machine
