"""Leases: ownership that expires by itself.

The orchestrator role is the lease ``orchestrator``. Each actor type's concurrency limit
is a set of slot leases ``slot:<actor>:<n>``, one per batch of ticks in flight; a
SIGKILLed worker's slot frees itself when ``expires_at`` passes. Each host's limit of
snapshots at once is a set of slots ``host:<name>:<n>`` held by snapshots
(``core/hostleases.py``).
"""

from django.db import models


class Lease(models.Model):
    # 300: a host slot is ``host:<host name, up to 253 characters>:<n>`` (core/hostleases.py).
    key = models.CharField(max_length=300, primary_key=True)
    actor = models.CharField(max_length=300, blank=True, default="")
    holder = models.CharField(max_length=128, blank=True, default="")
    machine = models.ForeignKey("core.Machine", null=True, blank=True, on_delete=models.SET_NULL, related_name="leases")
    acquired_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["actor", "expires_at"], name="lease_actor_expiry")]

    def __str__(self) -> str:
        return f"{self.key} held by {self.holder or 'nobody'} until {self.expires_at}"
