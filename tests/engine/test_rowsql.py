"""rowsql: the hand-written statements of the tick path load what the ORM would load, and
its ORM reads and inserts keep the promises its callers rely on (one statement, lazy
fields left unloaded, conflicts skipped)."""

from __future__ import annotations

import uuid

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models.signals import post_init
from django.forms.models import model_to_dict
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from archivebox.core.models import ArchiveResult, Crawl, Machine, Process, Snapshot
from archivebox.core import rowsql


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


def test_load_with_relations_reads_rows_and_their_relations_in_one_statement():
    crawls, created = results_of_two_crawls()
    with CaptureQueriesContext(connection) as queries:
        loaded = rowsql.load(ArchiveResult, [r.pk for r in created], "crawl", "snapshot")
    assert len(queries) == 1
    assert set(loaded) == {r.pk for r in created}
    for pk, result in loaded.items():
        expected = ArchiveResult.objects.select_related("snapshot", "crawl").get(pk=pk)
        assert model_to_dict(result) == model_to_dict(expected)
        assert (result.crawl.pk, result.crawl.config) == (expected.crawl.pk, expected.crawl.config)
        assert "urls" in result.crawl.get_deferred_fields()
        if expected.snapshot is None:
            assert result.snapshot is None
        else:
            assert (result.snapshot.pk, result.snapshot.url, result.snapshot.title) == \
                   (expected.snapshot.pk, expected.snapshot.url, expected.snapshot.title)


def test_attach_leaves_a_crawls_seed_urls_unloaded_until_read():
    crawls, created = results_of_two_crawls()
    result = rowsql.load(ArchiveResult, [created[0].pk])[created[0].pk]
    rowsql.attach([result], "crawl")
    assert "urls" in result.crawl.get_deferred_fields()
    with CaptureQueriesContext(connection) as queries:
        assert result.crawl.seed_urls == crawls[0].seed_urls
    assert len(queries) == 1


def test_insert_writes_the_row_the_orm_would_write():
    """Every column, JSON and dates included, reads back as from ``objects.create``; a
    unique conflict raises and changes nothing."""
    machine = Machine.current()
    fields = dict(kind="hook", machine=machine, cmd=["sh", "x", "--url=https://e.com/?a=1&b='2'"], pwd="/p",
                  env={"PATH": "/bin", "N": "1"}, timeout=2.5, label="p/h", attempt=2)
    by_orm = Process.objects.create(key="orm", **fields)
    by_hand = Process(key="hand", **fields)
    rowsql.insert(by_hand)
    assert not by_hand._state.adding
    orm_row, hand_row = (Process.objects.get(pk=row.pk) for row in (by_orm, by_hand))
    assert hand_row.created_at >= orm_row.created_at and hand_row.modified_at >= hand_row.created_at
    assert hand_row.retry_at is not None and hand_row.status == "queued"
    skip = {"id", "key", "created_at", "modified_at", "retry_at"}
    assert {k: v for k, v in model_to_dict(hand_row).items() if k not in skip} == \
           {k: v for k, v in model_to_dict(orm_row).items() if k not in skip}
    with pytest.raises(IntegrityError), transaction.atomic():
        rowsql.insert(Process(key="hand", **{**fields, "label": "other"}))
    assert Process.objects.get(key="hand").label == "p/h"


def test_rows_read_by_the_orm_are_the_instances_its_init_would_build():
    """Rows read through ``from_db`` (the ORM's and rowsql's): values, deferred fields,
    state and equality are what ``Model.__init__`` gives."""
    crawls, created = results_of_two_crawls()
    for result in ArchiveResult.objects.filter(pk__in=[r.pk for r in created]):
        fresh = ArchiveResult(**{f.attname: getattr(result, f.attname) for f in ArchiveResult._meta.concrete_fields})
        assert model_to_dict(result) == model_to_dict(fresh)
        assert result == fresh and not result._state.adding and result._state.db == "default"
        assert result.get_deferred_fields() == set()
    partial = Crawl.objects.only("id", "config").get(pk=crawls[0].pk)
    assert "urls" in partial.get_deferred_fields() and "config" not in partial.get_deferred_fields()
    with CaptureQueriesContext(connection) as queries:
        assert partial.urls == crawls[0].urls
    assert len(queries) == 1
    partial.config = {"changed": True}
    partial.save(update_fields=["config"])
    assert Crawl.objects.get(pk=crawls[0].pk).config == {"changed": True}


def test_a_receiver_of_init_signals_gets_them_for_rows_read():
    crawls, _ = results_of_two_crawls()
    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance.pk)

    post_init.connect(receiver, sender=Crawl)
    try:
        loaded = Crawl.objects.get(pk=crawls[0].pk)
        claimed = rowsql.load(Crawl, [crawls[1].pk])[crawls[1].pk]
    finally:
        post_init.disconnect(receiver, sender=Crawl)
    assert seen == [loaded.pk, claimed.pk]


def test_insert_new_writes_new_rows_as_bulk_create_does_and_skips_existing_keys():
    crawls, created = results_of_two_crawls()
    snapshot = created[0].snapshot
    existing = ArchiveResult.objects.get(pk=created[0].pk)
    rows = [ArchiveResult(crawl=crawls[0], snapshot=snapshot, plugin=f"new{n}", hook_name="h", step=n % 10, background=n % 2 == 0)
            for n in range(rowsql.INSERT_BATCH + 3)]  # two statements
    clash = ArchiveResult(crawl=crawls[0], snapshot=snapshot, plugin=existing.plugin, hook_name=existing.hook_name, step=7)
    rowsql.insert_new([*rows, clash])
    assert ArchiveResult.objects.get(pk=existing.pk).step == existing.step  # left alone
    assert not ArchiveResult.objects.filter(pk=clash.pk).exists()
    for row in rows:
        stored = ArchiveResult.objects.get(pk=row.pk)
        assert (stored.plugin, stored.step, stored.background, stored.status) == (row.plugin, row.step, row.background, "queued")
        assert stored.created_at is not None and stored.created_at == row.created_at


def test_a_claim_of_given_ids_looks_them_up_by_primary_key_not_along_the_due_index():
    """A kick of two ids used to force INDEXED BY <model>_due, walking the whole due range."""
    now = timezone.now()
    with CaptureQueriesContext(connection) as queries:
        rowsql.dispatch_claim(Snapshot, ["queued"], now, now, 16, ids=[uuid.uuid4(), uuid.uuid4()])
    [sql] = [q["sql"] for q in queries.captured_queries]
    assert "INDEXED BY" not in sql
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}")
        plan = " ".join(str(row[-1]) for row in cursor.fetchall())
    assert "core_snapshot_due" not in plan, plan
    assert "PRIMARY KEY" in plan.upper() or "autoindex" in plan, plan


def test_values_reads_what_the_orm_filter_reads_with_lookups_order_and_limit():
    crawls, created = results_of_two_crawls()
    ArchiveResult.objects.filter(pk=created[1].pk).update(step=5, status="succeeded", retry_at=None)
    snapshot = created[0].snapshot
    cases = [
        ({"snapshot": snapshot.pk, "step__lte": 3, "retry_at__isnull": False}, dict(snapshot=snapshot, step__lte=3, retry_at__isnull=False)),
        ({"crawl": crawls[0].pk, "snapshot__isnull": True}, dict(crawl=crawls[0], snapshot__isnull=True)),
        ({"crawl": crawls[0].pk, "step__gt": 0, "retry_at__isnull": True}, dict(crawl=crawls[0], step__gt=0, retry_at__isnull=True)),
        ({"plugin__in": ["p0", "p1"], "background": False}, dict(plugin__in=["p0", "p1"], background=False)),
    ]
    for where, orm in cases:
        expected = list(ArchiveResult.objects.filter(**orm).order_by("plugin", "id").values_list("id", "plugin", "retry_at"))
        assert rowsql.values(ArchiveResult, ("id", "plugin", "retry_at"), where, order_by="plugin, id") == expected, where
        assert rowsql.values(ArchiveResult, ("id", "plugin", "retry_at"), where, order_by="plugin, id", limit=1) == expected[:1]
    assert expected  # the cases select something


def test_the_hook_runs_owner_is_woken_only_once_no_foreground_result_of_its_step_is_left():
    from archivebox.sideeffects.results import unfinished_foreground
    crawls, created = results_of_two_crawls()
    snapshot, crawl = created[0].snapshot, crawls[0]
    assert unfinished_foreground(snapshot.pk, crawl.pk, 0)  # two queued results at step 0
    ArchiveResult.objects.filter(snapshot=snapshot).update(status="succeeded", retry_at=None)
    assert not unfinished_foreground(snapshot.pk, crawl.pk, 0)
    assert unfinished_foreground(None, crawl.pk, 0)  # the crawl's own hook is still queued
    ArchiveResult.objects.filter(crawl=crawl, snapshot__isnull=True).update(background=True)
    assert not unfinished_foreground(None, crawl.pk, 0)  # a background one does not hold the step
