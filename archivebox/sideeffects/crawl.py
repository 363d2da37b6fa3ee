"""Side effects of a crawl's lifecycle: its own hooks, its root snapshots, letting them in (``pacing``)."""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from archivebox.core.graphs import ArchiveResultGraph, CrawlGraph
from archivebox.core.models import ArchiveResult, Crawl, Snapshot, Tag
from archivebox.core.urlcheck import is_valid_url
from archivebox.sideeffects.pacing import activate
from archivebox.sideeffects.queue import sideeffect
from archivebox.transitions.effects import ActivateSnapshots, CrawlFinished, CrawlStarted, CreateRootSnapshots
from archivebox.core.reads import crawl_option, parked, results_of
from archivebox.core.urlinput import Seed
from archivebox.sideeffects.results import create_results
from archivebox.tasks.dispatch import wake_rows

logger = logging.getLogger(__name__)

BATCH = 500


@sideeffect(CrawlStarted)
def crawl_started(crawl_id) -> None:
    """Create the crawl's own hook results (step 0 due now), then let the crawl look."""
    crawl = Crawl.objects.filter(pk=crawl_id).first()
    if crawl is None or crawl.status != CrawlGraph.started:
        return
    create_results(crawl, None, timezone.now())
    due = results_of("Crawl", crawl.pk).filter(status=ArchiveResultGraph.queued, step__lte=crawl.current_step).values_list("pk", flat=True)
    wake_rows(ArchiveResult, due)
    wake_rows(Crawl, [crawl.pk])


def create_snapshots(crawl: Crawl, seeds: list[str | Seed], depth: int, parent_id=None) -> int:
    """Bulk-create parked, queued snapshots tagged with the crawl's tags (and a seed's own
    title, tags and bookmark date). Duplicates within the crawl are ignored; with ONLY_NEW,
    URLs archived by another crawl are skipped; with MAX_URLS the crawl never holds more
    snapshots than that. Returns how many were created."""
    seeds = [seed if isinstance(seed, Seed) else Seed(seed) for seed in seeds]
    if crawl_option(crawl, "ONLY_NEW"):
        seeds = [seed for seed in seeds if not already_archived(seed.url, crawl.pk)]
    max_urls = crawl_option(crawl, "MAX_URLS")
    created = 0
    for start in range(0, len(seeds), BATCH):
        with transaction.atomic():
            if max_urls:
                # The crawl row's lock serialises concurrent creators, so the cap holds (SQLite's
                # IMMEDIATE transactions serialise them anyway).
                Crawl.objects.select_for_update().filter(pk=crawl.pk).exists()
                room = max_urls - Snapshot.objects.filter(crawl=crawl).count()
                if room <= 0:
                    logger.info("crawl %s: MAX_URLS=%s reached, %d URL(s) not added", crawl.pk, max_urls, len(seeds) - start)
                    break
                batch = seeds[start:start + min(BATCH, room)]
            else:
                batch = seeds[start:start + BATCH]
            created += _create_batch(crawl, batch, depth, parent_id)
    return created


def already_archived(url: str, crawl_id) -> bool:
    return Snapshot.objects.filter(url=url).exclude(crawl_id=crawl_id).exists()


def _create_batch(crawl: Crawl, batch: list[Seed], depth: int, parent_id) -> int:
    now = timezone.now()
    first: dict[str, Seed] = {}
    for seed in batch:
        first.setdefault(seed.url, seed)
    batch = list(first.values())
    rows = [Snapshot(crawl=crawl, url=seed.url, depth=depth, parent_id=parent_id, retry_at=parked(now), title=seed.title,
                     bookmarked_at=seed.bookmarked_at) for seed in batch]
    Snapshot.objects.bulk_create(rows, ignore_conflicts=True)
    created = Snapshot.objects.filter(pk__in=[row.pk for row in rows]).count()  # an ignored duplicate's id is not stored
    names = set(crawl.tag_names) | {tag for seed in batch for tag in seed.tags}
    if names:
        tags = {name: Tag.objects.get_or_create(name=name)[0] for name in sorted(names)}
        ids = dict(Snapshot.objects.filter(crawl=crawl, url__in=[seed.url for seed in batch]).values_list("url", "pk"))
        through = Snapshot.tags.through
        links = [through(snapshot_id=ids[seed.url], tag_id=tags[name].pk)
                 for seed in batch if seed.url in ids for name in dict.fromkeys([*crawl.tag_names, *seed.tags])]
        through.objects.bulk_create(links, ignore_conflicts=True)
    return created


@sideeffect(CreateRootSnapshots)
def create_root_snapshots(crawl_id) -> None:
    crawl = Crawl.objects.filter(pk=crawl_id).first()
    if crawl is None or crawl.status != CrawlGraph.started:
        return
    seeds = [seed for seed in crawl.seeds if is_valid_url(seed.url)]
    create_snapshots(crawl, seeds, depth=0)
    activate(crawl.pk)
    wake_rows(Crawl, [crawl.pk])


@sideeffect(ActivateSnapshots)
def activate_snapshots(crawl_id) -> None:
    activate(crawl_id)


@sideeffect(CrawlFinished)
def crawl_finished(crawl_id) -> None:
    """A crawl is final: anything of it still waiting should notice now, not at its parked date."""
    waiting = Snapshot.objects.filter(crawl_id=crawl_id, retry_at__isnull=False).values_list("pk", flat=True)
    wake_rows(Snapshot, list(waiting))
    wake_rows(ArchiveResult, list(results_of("Crawl", crawl_id).filter(retry_at__isnull=False).values_list("pk", flat=True)))
