"""Hand-written statements of the tick path: what they load is what the ORM would load."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from archivebox.core.models import ArchiveResult, Crawl, Snapshot
from archivebox.tasks import rowsql


def results_of_two_crawls():
    crawls = [Crawl.objects.create(urls="\n".join(f"https://example.com/{c}/{i}" for i in range(1000)), config={"c": c})
              for c in range(2)]
    results = []
    for crawl in crawls:
        snapshot = Snapshot.objects.create(crawl=crawl, url=f"https://example.com/{crawl.config['c']}", title=f"t{crawl.config['c']}")
        results += [ArchiveResult.objects.create(crawl=crawl, snapshot=snapshot, plugin=f"p{n}", hook_name="h", step=0)
                    for n in range(2)]
    results.append(ArchiveResult.objects.create(crawl=crawls[0], snapshot=None, plugin="crawl-hook", hook_name="h", step=0))
    return crawls, results


def test_attach_loads_every_relation_of_every_row_in_one_statement():
    crawls, created = results_of_two_crawls()
    loaded = list(rowsql.load(ArchiveResult, [r.pk for r in created]).values())
    with CaptureQueriesContext(connection) as queries:
        rowsql.attach(loaded, "snapshot", "crawl")
        for result in loaded:
            expected = ArchiveResult.objects.select_related("snapshot", "crawl").get(pk=result.pk)
            assert result.crawl.pk == expected.crawl.pk and result.crawl.config == expected.crawl.config
            if expected.snapshot is None:
                assert result.snapshot is None
            else:
                assert (result.snapshot.pk, result.snapshot.title, result.snapshot.created_at) == \
                       (expected.snapshot.pk, expected.snapshot.title, expected.snapshot.created_at)
    assert len(queries) - len(loaded) == 1  # one statement for all of them (plus our own checks)


def test_attach_leaves_a_crawls_seed_urls_unloaded_until_read():
    crawls, created = results_of_two_crawls()
    result = rowsql.load(ArchiveResult, [created[0].pk])[created[0].pk]
    rowsql.attach([result], "crawl")
    assert "urls" in result.crawl.get_deferred_fields()
    with CaptureQueriesContext(connection) as queries:
        assert result.crawl.seed_urls == crawls[0].seed_urls
    assert len(queries) == 1
