"""Counting without scanning millions (core.counting), and the search box's queries (core.search),
on the test session's real SQLite database."""

from __future__ import annotations

import datetime as dt
import re

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from archivebox.core import counting, search
from archivebox.core.models import ArchiveResult, Crawl, Snapshot, Tag


def make(n: int, queued: int = 0) -> Crawl:
    now = timezone.now()
    crawl = Crawl.objects.create(urls="https://example.com/", status="sealed", retry_at=None)
    for i in range(n):
        snapshot = Snapshot.objects.create(crawl=crawl, url=f"https://example.com/page-{i}", title=f"Page number {i}",
                                           status="sealed", retry_at=None)
        status = "queued" if i < queued else ("failed" if i % 4 == 0 else "succeeded")
        ArchiveResult.objects.create(crawl=crawl, snapshot=snapshot, plugin="wget", hook_name="on_Snapshot__21_wget.py",
                                     status=status, retry_at=now + dt.timedelta(hours=1) if status == "queued" else None)
    return crawl


def test_a_filtered_count_stops_at_its_cap_and_says_so():
    make(30)
    exact = counting.count(Snapshot.objects.filter(url__contains="page-1"))
    assert (exact.value, exact.exact, str(exact)) == (11, True, "11")
    capped = counting.count(Snapshot.objects.filter(url__contains="page"), cap=20)
    assert (capped.value, capped.exact, capped.at_least, str(capped)) == (20, False, True, "more than 20")
    assert counting.count(Snapshot.objects.all(), at_least=10_001).at_least


def test_a_large_table_is_estimated_not_counted(monkeypatch):
    make(30)
    monkeypatch.setattr(counting, "EXACT_BELOW", 10)
    total = counting.count(Snapshot.objects.all())
    assert total.estimated and str(total) == "about 30" and total.value == 30  # nothing deleted: the largest rowid is exact


def test_states_of_a_large_table_are_estimated_from_a_sample(monkeypatch):
    make(40, queued=4)
    exact, is_exact = counting.by_status(ArchiveResult)
    assert is_exact and exact == {"queued": 4, "failed": 9, "succeeded": 27}
    monkeypatch.setattr(counting, "EXACT_BELOW", 10)
    estimated, is_exact = counting.by_status(ArchiveResult)
    # The sample takes every row of so small a table: the estimate is the count.
    assert not is_exact and estimated == exact
    assert counting.by_status(ArchiveResult, exact=True) == (exact, True)


def test_a_large_tables_sample_is_runs_of_rows_at_random_places_and_splits_its_estimate(monkeypatch):
    """Status on a million results read 2,000 rows one by one (2,000 pages, 80-190 ms):
    the sample is CLUSTERS runs of consecutive rows now, split in the same proportions."""
    make(400)  # results: a quarter failed, the rest succeeded, interleaved
    monkeypatch.setattr(counting, "EXACT_BELOW", 10)
    monkeypatch.setattr(counting, "SAMPLE", 80)
    monkeypatch.setattr(counting, "CLUSTERS", 8)
    with CaptureQueriesContext(connection) as queries:
        sample = counting.sample(ArchiveResult, "status", 400, counting.SAMPLE, counting.CLUSTERS, finished=True)
    assert 0 < len(sample) <= 80 and 0.15 <= sample.count("failed") / len(sample) <= 0.35, sample
    [sql] = [q["sql"] for q in queries.captured_queries]
    assert sql.count("BETWEEN") == 8, sql
    estimated, is_exact = counting.by_status(ArchiveResult)
    assert not is_exact and sum(estimated.values()) == 400 and 60 <= estimated["failed"] <= 140, estimated


def test_the_text_index_follows_inserts_title_changes_and_deletes():
    crawl = make(3)
    found = lambda text, mode="all": set(search.search(Snapshot.objects.all(), text, mode).snapshots.values_list("url", flat=True))  # noqa: E731
    assert found("page-2", "url") == {"https://example.com/page-2"}
    Snapshot.objects.filter(url="https://example.com/page-2").update(title="Renamed Potassium")
    assert found("potassium", "title") == {"https://example.com/page-2"} and found("number 2", "title") == set()
    Snapshot.objects.filter(url="https://example.com/page-1").delete()
    assert found("page-1", "url") == set() and len(found("page", "url")) == 2
    with connection.cursor() as cursor:  # no row of the text index is left behind
        cursor.execute("SELECT count(*) FROM core_snapshot_textrow")
        assert cursor.fetchone()[0] == Snapshot.objects.count()
    assert crawl.snapshots.count() == 2


def test_the_text_index_triggers_survive_every_migration():
    """A migration that remakes core_snapshot on SQLite (0015 added a column with a default)
    drops its triggers: the last migration leaves all three in place."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'core_snapshot'")
        assert {name for (name,) in cursor.fetchall()} >= {"core_snapshot_text_insert", "core_snapshot_text_update",
                                                          "core_snapshot_text_delete"}


def test_a_common_word_is_filtered_in_order_and_a_rare_one_fetched_by_id(monkeypatch):
    make(12)
    monkeypatch.setattr(search, "FEW", 5)
    common = search.search(Snapshot.objects.all(), "page", "url")
    assert common.at_least == 5 and "LIKE" in str(common.snapshots.query)  # "more than 5"
    rare = search.search(Snapshot.objects.all(), "page-11", "url")
    assert rare.at_least == 0 and "LIKE" not in str(rare.snapshots.query)
    assert [s.url for s in rare.snapshots] == ["https://example.com/page-11"]
    tag = Tag.objects.create(name="Reading")
    for snapshot in Snapshot.objects.all()[:7]:
        snapshot.tags.add(tag)
    assert search.with_tag(Snapshot.objects.all(), "reading").snapshots.count() == 7  # more than FEW: filtered by EXISTS
    assert search.search(Snapshot.objects.all(), "read", "tags").snapshots.count() == 7


# The tables a collection has millions of rows in.
LARGE_TABLES = ("core_snapshot", "core_archiveresult", "core_snapshot_tags")
# Partial indexes whose entries are all rows a query wants (reading them all is its answer).
ANSWER_INDEXES = ("snapshot_robots_skipped",)


def unbounded_scans(run) -> list[str]:
    """The queries ``run()`` makes that read all of a large table (SQLite's plan says SCAN of it,
    or of one of its indexes but an ANSWER_INDEXES one, and the query has no LIMIT that stops
    the read)."""
    with CaptureQueriesContext(connection) as captured:
        run()
    found = []
    with connection.cursor() as cursor:
        for query in captured.captured_queries:
            sql = query["sql"]
            if not sql.lstrip().upper().startswith("SELECT") or " LIMIT " in sql.upper():
                continue
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}")
            plan = " / ".join(row[-1] for row in cursor.fetchall())
            scans = [step for step in plan.split(" / ") if any(re.search(rf"\bSCAN {table}\b", step) for table in LARGE_TABLES)]
            if any(not step.endswith(tuple(f"USING INDEX {index}" for index in ANSWER_INDEXES)) for step in scans):
                found.append(f"{sql}  [{plan}]")
    return found


def test_status_reads_no_large_table_whole(monkeypatch):
    """``archivebox status`` on a collection counted as large: estimates, the due index, a
    sample; no query reads every snapshot or result (robots.txt's skipped snapshots: their own
    partial index)."""
    from archivebox.cli import cmd_status

    make(30, queued=3)
    monkeypatch.setattr(counting, "EXACT_BELOW", 10)
    monkeypatch.setattr(cmd_status, "FEW_SNAPSHOTS", 10)
    report = {}
    assert unbounded_scans(lambda: report.update(cmd_status.gather())) == []
    assert report["estimated"] == ["Snapshot", "ArchiveResult"] and report["robots_skipped"] == 0


def test_the_snapshots_robots_txt_skipped_are_counted_from_their_own_index():
    """Failed snapshots whose last_error says robots.txt skipped them, of every crawl; not a
    failed one for another reason, nor one in another state that mentions robots.txt. The
    count reads the partial index snapshot_robots_skipped (SQLite refuses the statement if it
    cannot: INDEXED BY), never every failed snapshot's last_error."""
    from archivebox.core import robots

    one, other = make(0), make(0)
    rows = [(one, "failed", f"{robots.SKIPPED} of a.test disallows it (ROBOTS_TXT)"), (one, "failed", f"{robots.SKIPPED} of b.test"),
            (other, "failed", f"{robots.SKIPPED} of c.test"), (one, "failed", "wget: exit 8"),
            (one, "sealed", f"{robots.SKIPPED} (a note)"), (other, "failed", f"not {robots.SKIPPED}")]
    for i, (crawl, status, error) in enumerate(rows):
        Snapshot.objects.create(crawl=crawl, url=f"https://robots.test/{i}", status=status, retry_at=None, last_error=error)
    with CaptureQueriesContext(connection) as captured:
        assert robots.skipped() == 3
    with connection.cursor() as cursor:
        for query in captured.captured_queries:
            cursor.execute(f"EXPLAIN QUERY PLAN {query['sql']}")
            assert "snapshot_robots_skipped" in " / ".join(row[-1] for row in cursor.fetchall()), query["sql"]


def test_the_pages_a_user_opens_first_read_no_large_table_whole(monkeypatch):
    """The index (pages 1 and 2, each search mode, a tag), the admin's snapshot and result
    lists with their filters and search, the API's lists and a snapshot page, on a collection
    counted as large: every query of theirs reads an index, or stops at a LIMIT."""
    from django.contrib.auth.models import User
    from django.test import Client

    make(60)
    tag = Tag.objects.create(name="Reading")
    for snapshot in Snapshot.objects.all()[:5]:
        snapshot.tags.add(tag)
    monkeypatch.setattr(counting, "EXACT_BELOW", 10)
    monkeypatch.setattr("archivebox.web.views.PAGE_SIZE", 20)
    admin, _ = User.objects.get_or_create(username="million-admin", defaults={"is_staff": True, "is_superuser": True})
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(admin)
    snapshot = Snapshot.objects.order_by("created_at").first()
    pages = ["/", "/?page=2", "/?q=number", "/?q=number&query_type=title", "/?q=page-1&query_type=url", "/?q=potash&query_type=fulltext",
             "/?q=read&query_type=tags", "/?tag=Reading", "/?status=failed",
             "/admin/core/snapshot/", "/admin/core/snapshot/?status__exact=failed", f"/admin/core/snapshot/?tags__id__exact={tag.pk}",
             "/admin/core/snapshot/?q=number", "/admin/core/snapshot/?p=2",
             "/admin/core/archiveresult/", "/admin/core/archiveresult/?status__exact=failed",
             "/admin/core/archiveresult/?plugin__exact=wget", "/admin/core/archiveresult/?q=wget",
             "/api/v1/core/snapshots?limit=10", "/api/v1/core/snapshots?limit=10&offset=20", "/api/v1/core/snapshots?status=failed",
             "/api/v1/core/snapshots?search=number", "/api/v1/core/archiveresults?limit=10",
             "/api/v1/core/archiveresults?status=failed", f"/snapshot/{snapshot.pk}/"]
    for path in pages:
        answers = []
        scans = unbounded_scans(lambda: answers.append(client.get(path)))  # noqa: B023 - called at once
        assert answers[0].status_code == 200, path
        assert scans == [], path


def test_the_parts_found_by_id_are_one_list():
    """URL/title and tag matches few enough to take by id are one IN list (an OR of lists
    made SQLite read the whole list newest first), and find what each part finds."""
    make(12)
    tag = Tag.objects.create(name="page-1 reading")
    for snapshot in Snapshot.objects.filter(url__endswith="page-5"):
        snapshot.tags.add(tag)
    found = search.search(Snapshot.objects.all(), "page-1", "all")
    assert str(found.snapshots.query).count(" IN (") == 1 and found.at_least == 0
    assert {s.url.rsplit("/", 1)[1] for s in found.snapshots} == {"page-1", "page-10", "page-11", "page-5"}


def test_a_large_archives_size_is_estimated_from_snapshot_folders_taken_at_random(monkeypatch, tmp_path):
    """Past WALK_BELOW snapshots, status walks the folders of SIZE_SAMPLE snapshots taken at
    random (not the whole archive: seconds on a million folders) and says so; a small
    collection's archive is walked file by file, as is any with ``--exact``."""
    from django.conf import settings

    from archivebox.cli import cmd_status

    monkeypatch.setattr(settings, "ARCHIVE_DIR", tmp_path)
    crawl = make(0)
    for i in range(40):
        snapshot = Snapshot.objects.create(crawl=crawl, url=f"https://sizes.test/{i}", status="sealed", retry_at=None)
        (tmp_path / str(snapshot.pk) / "wget").mkdir(parents=True)
        (tmp_path / str(snapshot.pk) / "wget" / "index.html").write_bytes(b"x" * 1000)
        (tmp_path / str(snapshot.pk) / "title.txt").write_bytes(b"y" * 24)
    walked = cmd_status.archive_size(40, exact=False)
    assert walked == {"archive_bytes": 40 * 1024, "archive_counted": True, "archive_sample": 0}
    monkeypatch.setattr(cmd_status, "WALK_BELOW", 10)
    monkeypatch.setattr(cmd_status, "SIZE_SAMPLE", 20)
    monkeypatch.setattr(cmd_status, "SIZE_CLUSTERS", 4)
    with CaptureQueriesContext(connection) as queries:
        estimated = cmd_status.archive_size(40, exact=False)
    assert estimated["archive_bytes"] == 40 * 1024 and not estimated["archive_counted"], estimated  # every folder: 1,024 bytes
    assert 4 <= estimated["archive_sample"] <= 20, estimated
    [sql] = [q["sql"] for q in queries.captured_queries]
    assert sql.count("BETWEEN") == 4, sql
    assert cmd_status.archive_size(40, exact=True) == walked
    # No folder walked within the budget: "at least" what was seen, without walking the archive again.
    walks = []
    monkeypatch.setattr(cmd_status, "tree_size", lambda folder, budget: walks.append(folder) or (512, False))
    assert cmd_status.archive_size(40, exact=False) == {"archive_bytes": 512, "archive_counted": False, "archive_sample": 0}
    assert walks and tmp_path not in walks, walks
    monkeypatch.undo()
    monkeypatch.setattr(settings, "ARCHIVE_DIR", tmp_path)
    text = cmd_status.format_report({**cmd_status.gather(), "size": {**cmd_status.size_report(40, False), **estimated}})
    assert "Archive size:      ~40.0 KB in " in text and f"estimated from {estimated['archive_sample']} snapshot folders" in text
