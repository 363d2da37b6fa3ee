"""`archivebox schedule`: saved schedules that the orchestrator fires, one crawl per due
period, exactly once with several pools running, and one catch-up crawl after a downtime."""

from __future__ import annotations

import os
import signal

from tests.helpers import Collection, wait_until

URL = "https://example.com/every-day"


def shell(coll: Collection, code: str) -> str:
    return coll.cli("manage", "shell", "-v", "0", "-c", code).stdout


def test_add_show_run_all_and_clear_from_the_command_line(tmp_path):
    coll = Collection(tmp_path / "data", plugins="noop").init()
    bad = coll.cli("schedule", "--add", "--every=fortnightly", URL, check=False)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "fortnightly" in bad.stderr
    urls = tmp_path / "urls.txt"
    urls.write_text(f"{URL}\nhttps://example.com/second\n")
    added = coll.cli("schedule", "--add", "--every=0 */6 * * *", "--depth=1", "--tag=watch", str(urls))
    assert "Scheduled 2 URL(s) on cron '0 */6 * * *'" in added.stdout
    shown = coll.cli("schedule", "--show").stdout
    assert "on cron '0 */6 * * *'" in shown and URL in shown and "(+1 more)" in shown
    ran = coll.cli("schedule", "--run-all")
    assert "crawl" in ran.stdout and "queued" in ran.stdout
    [crawl] = coll.query("SELECT urls, max_depth, tags_str FROM core_crawl")
    assert (crawl["urls"].splitlines(), crawl["max_depth"], crawl["tags_str"]) == ([URL, "https://example.com/second"], 1, "watch")
    assert "Deleted 1 schedule" in coll.cli("schedule", "--clear").stdout
    assert "No schedules." in coll.cli("schedule", "--show").stdout
    # A named period reads as one ("daily"), not "every daily".
    daily = coll.cli("schedule", "--add", "--every=daily", URL).stdout
    assert "Scheduled 1 URL(s) daily (0 0 * * *, UTC)" in daily
    assert " daily " in coll.cli("schedule", "--show").stdout and "every daily" not in coll.cli("schedule", "--show").stdout


def test_a_due_schedule_fires_once_with_two_sets_of_pools_and_a_long_downtime_gives_one_catch_up(tmp_path):
    coll = Collection(tmp_path / "data", plugins="noop").init()
    coll.cli("schedule", "--add", "--every=daily", URL)
    # The machines were down for 30 days: 30 periods were missed.
    shell(coll, "import datetime as dt; from django.utils import timezone; from archivebox.core.models import Schedule; "
                "Schedule.objects.update(next_run_at=timezone.now() - dt.timedelta(days=30))")
    for _ in range(2):
        coll.start_consumer("ticks", 2)
        coll.start_consumer("sideeffects", 2)
    try:
        wait_until(lambda: coll.counts("crawl") == {"sealed": 1}, timeout=60, message="the catch-up crawl")
        [schedule] = coll.query("SELECT runs, next_run_at, last_crawl_id FROM core_schedule")
        assert schedule["runs"] == 1 and schedule["last_crawl_id"]
        # Its next run is the next midnight (UTC), not one of the missed ones.
        assert shell(coll, "from django.utils import timezone; from archivebox.core.models import Schedule; "
                           "s = Schedule.objects.get(); print(0 < (s.next_run_at - timezone.now()).total_seconds() <= 86400, "
                           "s.next_run_at.hour, s.next_run_at.minute)").split() == ["True", "0", "0"]
        # Due again (the next period came): one more crawl, of the same URL again.
        shell(coll, "from django.utils import timezone; from archivebox.core.models import Schedule; "
                    "Schedule.objects.update(next_run_at=timezone.now())")
        wait_until(lambda: coll.counts("crawl") == {"sealed": 2}, timeout=60, message="the second run")
        assert coll.scalar("SELECT COUNT(*) FROM core_snapshot WHERE url = ?", (URL,)) == 2  # the page over time
        assert coll.scalar("SELECT runs FROM core_schedule") == 2
    finally:
        coll.stop_all(signal.SIGINT)


def test_only_new_skips_urls_already_archived(tmp_path):
    coll = Collection(tmp_path / "data", plugins="noop").init()
    coll.cli("add", URL)
    coll.cli("schedule", "--add", "--every=weekly", "--only-new", URL)
    assert "nothing new to archive" in coll.cli("schedule", "--run-all").stdout
    assert coll.scalar("SELECT COUNT(*) FROM core_crawl") == 1


def test_schedules_that_fire_too_often_or_never_are_refused_with_one_line(tmp_path):
    coll = Collection(tmp_path / "data", plugins="noop").init()
    for every, says in (("* * * * * *", "five-field"), ("* * * * * * *", "five-field"), ("0 0 30 2 *", "never run"),
                        ("*/5 * * * *", "more often than every 3600 s")):
        bad = coll.cli("schedule", "--add", f"--every={every}", URL, check=False, env={"SCHEDULE_MIN_PERIOD": "3600"})
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and says in bad.stderr, (every, bad.stderr)
    # Two runs a minute apart once an hour: the shortest gap counts, not the average.
    bad = coll.cli("schedule", "--add", "--every=0,1 * * * *", URL, check=False, env={"SCHEDULE_MIN_PERIOD": "120"})
    assert bad.returncode == 2 and "more often" in bad.stderr
    assert "Scheduled 1 URL(s) every minute" in coll.cli("schedule", "--add", "--every=minute", URL).stdout  # the default minimum
    assert coll.query("SELECT count(*) AS n FROM core_schedule")[0]["n"] == 1
