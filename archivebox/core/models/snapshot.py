"""A Snapshot: one URL archived once, by every enabled hook, in ten ordered steps."""

from pathlib import Path

from django.conf import settings
from django.db import models

from archivebox.core.models.base import StatefulModel, due_index, lifecycle_constraints, status_field, uuid7
from archivebox.core.graphs import SnapshotGraph
from archivebox.core.urlcheck import mask_urls
from archivebox.hostrules import host_of

# The start of the last_error of a snapshot robots.txt kept from being archived (core.robots).
ROBOTS_SKIPPED = "skipped: robots.txt"


class HostField(models.CharField):
    """The URL's host name, lower-cased (see archivebox.hostrules), filled in from ``url`` when
    a row is written without one: by save(), bulk_create() and rowsql.insert alike."""

    def pre_save(self, model_instance, add):
        value = getattr(model_instance, self.attname)
        if not value and model_instance.url:
            value = host_of(model_instance.url)
            setattr(model_instance, self.attname, value)
        return value


class Snapshot(StatefulModel):
    graph = SnapshotGraph

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    status = status_field(SnapshotGraph)
    crawl = models.ForeignKey("core.Crawl", on_delete=models.CASCADE, related_name="snapshots")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children")
    url = models.TextField()
    # Its site, for the per-host limits (PER_HOST_SNAPSHOTS, PER_HOST_DELAY, pauses after 429).
    host = HostField(max_length=255, blank=True, default="")
    depth = models.PositiveSmallIntegerField(default=0)
    title = models.TextField(blank=True, default="")
    # When the URL was bookmarked, as the import it came from says (None when added by hand).
    bookmarked_at = models.DateTimeField(null=True, blank=True)
    # The name of the snapshot's folder in the ArchiveBox collection it was upgraded from
    # (``archive/<timestamp>``, kept there as a link to this snapshot's folder); empty for
    # snapshots made here.
    timestamp = models.CharField(max_length=32, blank=True, default="", db_index=True)
    tags = models.ManyToManyField("core.Tag", blank=True, related_name="snapshots")
    config = models.JSONField(default=dict, blank=True)
    current_step = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            *lifecycle_constraints(SnapshotGraph, "snapshot"),
            models.UniqueConstraint(fields=["crawl", "url"], name="snapshot_unique_url_per_crawl"),
            models.CheckConstraint(condition=models.Q(current_step__lte=9), name="snapshot_step_0_9"),
        ]
        # snapshot_waiting: a crawl's hosts with queued snapshots (one seek each), and each host's
        # queued snapshots in the order they are let in (sideeffects/pacing.py), read a few at
        # a time however many are parked. snapshot_created, snapshot_status_created: the lists
        # (web index, admin, API, `list`) newest first, whole or by state, a page at a time
        # however large the collection. The URL and title text index of the search box is made
        # by migration 0014 (an SQLite FTS5 table, or pg_trgm indexes): see core.search.
        # snapshot_robots_skipped: the snapshots robots.txt skipped (core.robots), counted by
        # `status` without reading every failed snapshot's last_error.
        indexes = [due_index("snapshot"), models.Index(fields=["crawl", "status", "host", "depth", "created_at"], name="snapshot_waiting"),
                   models.Index(fields=["created_at"], name="snapshot_created"),
                   models.Index(fields=["status", "created_at"], name="snapshot_status_created"),
                   models.Index(fields=["crawl"], name="snapshot_robots_skipped",
                                condition=models.Q(status=SnapshotGraph.failed.name, last_error__startswith=ROBOTS_SKIPPED))]

    def __str__(self) -> str:
        return mask_urls(self.url)  # shown in the admin, messages, logs: never a URL's password

    @property
    def output_dir(self) -> Path:
        return settings.ARCHIVE_DIR / str(self.id)

    @property
    def output_dir_relative(self) -> str:
        return f"archive/{self.id}"
