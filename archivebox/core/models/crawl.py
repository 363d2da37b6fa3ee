"""A Crawl: what one ``archivebox add`` asked for. Its seed URLs become Snapshots."""

from django.db import models

from archivebox.core.models.base import StatefulModel, due_index, lifecycle_constraints, status_field, uuid7
from archivebox.core.graphs import CrawlGraph
from archivebox.core.urlinput import Seed

# current_step runs 0..9 through the crawl's own hooks; SNAPSHOTS_STEP means they are
# done and the crawl's snapshots are being archived.
SNAPSHOTS_STEP = 10


class Crawl(StatefulModel):
    graph = CrawlGraph
    # Not loaded with the crawl of a snapshot or result (rowsql.attach): it can hold
    # megabytes of URLs that only the crawl's own start reads.
    lazy_fields = ("urls",)

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    status = status_field(CrawlGraph)
    urls = models.TextField(help_text="Seed URLs, one per line (a JSON line {url, title, tags, timestamp} keeps an import's metadata)")
    max_depth = models.PositiveSmallIntegerField(default=0)
    tags_str = models.CharField(max_length=1024, blank=True, default="")
    label = models.CharField(max_length=255, blank=True, default="")
    config = models.JSONField(default=dict, blank=True)
    current_step = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = lifecycle_constraints(CrawlGraph, "crawl")
        indexes = [due_index("crawl")]

    def __str__(self) -> str:
        return self.label or f"crawl {self.id}"

    @property
    def seeds(self) -> list[Seed]:
        return [seed for seed in map(Seed.from_line, self.urls.splitlines()) if seed is not None and seed.url]

    @property
    def seed_urls(self) -> list[str]:
        return [seed.url for seed in self.seeds]

    @property
    def tag_names(self) -> list[str]:
        return [t.strip() for t in self.tags_str.split(",") if t.strip()]
