"""SQLite under contention: 4 consumers at work while a bulk add of 10,000 URLs runs."""

import signal

from helpers import Collection, wait_until

BULK = 10_000


def test_no_database_is_locked_with_four_consumers_and_a_bulk_add(tmp_path):
    collection = Collection(tmp_path / "data", plugins="noop", extra_env={"SNAPSHOT_MAX_ACTIVE": "16"}).init()
    collection.cli("add", "--bg", input="\n".join(f"https://example.com/warmup/{i}" for i in range(200)))
    collection.start_consumer("ticks", 4)
    collection.start_consumer("ticks", 4)
    collection.start_consumer("sideeffects", 8)
    collection.start_consumer("sideeffects", 8)
    wait_until(lambda: collection.scalar("SELECT COUNT(*) FROM core_archiveresult WHERE status='succeeded'") >= 20,
               timeout=60, message="the consumers to be busy")

    urls = tmp_path / "bulk.txt"
    urls.write_text("\n".join(f"https://example.com/bulk/{i}" for i in range(BULK)))
    result = collection.cli("add", "--bg", "--file", str(urls), timeout=300)
    wait_until(lambda: collection.scalar("SELECT COUNT(*) FROM core_snapshot") == BULK + 200, timeout=120,
               message="all snapshots of the bulk crawl created")
    # Keep the consumers at it a while longer: a few hundred more snapshots sealed.
    sealed = collection.scalar("SELECT COUNT(*) FROM core_snapshot WHERE status='sealed'")
    wait_until(lambda: collection.scalar("SELECT COUNT(*) FROM core_snapshot WHERE status='sealed'") >= sealed + 300,
               timeout=120, message="more snapshots sealed")
    collection.stop_all(signal.SIGINT)

    output = result.stdout + result.stderr + collection.log_text()
    assert "database is locked" not in output
    assert "OperationalError" not in output
    assert collection.scalar("SELECT COUNT(*) FROM core_archiveresult WHERE status='failed'") == 0
