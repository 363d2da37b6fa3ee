"""Run by test_filing_postgres.py in a collection on Postgres (DATA_DIR, DATABASE_URL set):
two page loads holding the same payload are filed at once, the first one's transaction kept
open until the second is seen waiting for it. Prints what happened as JSON."""

from __future__ import annotations

import json
import os
import sys
import threading

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "archivebox.settings")
import django  # noqa: E402

django.setup()

from django.db import connection, connections, transaction  # noqa: E402

from archivebox.core.models import Crawl, Snapshot  # noqa: E402
from archivebox.webarchive import filing  # noqa: E402
from archivebox.webarchive.models import WarcRecord  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "webarchive"))
from helpers import wait_until  # noqa: E402
from test_filing import IMAGE, record  # noqa: E402

DEADLINE = 30.0


def snapshot(url: str) -> Snapshot:
    return Snapshot.objects.create(crawl=Crawl.objects.create(urls=url), url=url)


def waiting_for_the_filing_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = %s",
                       [filing.FILING_LOCK])
        return cursor.fetchone()[0] > 0


def main() -> None:
    first, second = snapshot("https://example.com/one"), snapshot("https://example.com/two")
    for snap, name in ((first, "one.warc.gz"), (second, "two.warc.gz")):
        record(snap, name, [(f"{snap.url}/page", b"<html>" + name.encode() + b"</html>" * 100),
                            ("https://example.com/shared.png", IMAGE)])
    first_filed, release, seen = threading.Event(), threading.Event(), {}

    def file_first() -> None:
        with transaction.atomic():  # kept open: the second filing plans without seeing it
            filing.file_folder(first, first.output_dir / "chrome")
            first_filed.set()
            release.wait(DEADLINE)
        connections.close_all()

    def file_second() -> None:
        seen["second"] = filing.file_folder(second, second.output_dir / "chrome").revisits
        connections.close_all()

    threads = [threading.Thread(target=file_first)]
    threads[0].start()
    first_filed.wait(DEADLINE)
    threads.append(threading.Thread(target=file_second))
    threads[1].start()
    try:  # the second filing either waits for the first one's lock, or (without it) finishes at once
        wait_until(lambda: waiting_for_the_filing_lock() or not threads[1].is_alive(), timeout=DEADLINE,
                   message="the second filing to wait or end")
        blocked = waiting_for_the_filing_lock()
    finally:
        release.set()
    for thread in threads:
        thread.join(DEADLINE)
    digest = WarcRecord.objects.filter(file__path__endswith="one.warc.gz", record_type="response",
                                       url="https://example.com/shared.png").values_list("digest", flat=True).first()
    kinds = sorted(WarcRecord.objects.filter(digest=digest).values_list("record_type", flat=True))
    print(json.dumps({"second_waited": blocked, "second_revisits": seen.get("second"), "records_of_the_image": kinds}))


if __name__ == "__main__":
    main()
