"""Recovery: SIGKILL the worker pools at random moments; restarted pools finish the job.

Real ``huey_consumer`` processes on a real SQLite collection. Every row must reach a
final state with no manual step, no row may be ticked by two ticks at once, and no
result may be lost.
"""

import os
import random
import signal
import sys
import time
from pathlib import Path

from helpers import Collection, tick_overlaps, wait_until

FIXTURES = Path(__file__).resolve().parent / "fixtures"
URLS = 60
LEASES = {"MAX_TICK_TIME": "2", "ORCHESTRATOR_LEASE_TTL": "2", "HEARTBEAT_INTERVAL": "0.5", "HEARTBEAT_TTL": "3",
          "SWEEP_INTERVAL": "1", "HOOK_MAX_ATTEMPTS": "20", "HOOK_RETRY_BACKOFF": "0.2", "TICK_BACKOFF_BASE": "0.1",
          "SNAPSHOT_MAX_ACTIVE": "8", "HOOK_KILL_GRACE": "0.5", "SIDEEFFECT_LOST_AFTER": "1"}


def test_sigkilled_pools_recover_without_overlap_or_loss(tmp_path):
    audit = tmp_path / "audit.log"
    env = {**LEASES, "LIFECYCLE_PLUGINS": "audit_plugin", "AUDIT_FILE": str(audit),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(FIXTURES), os.environ.get("PYTHONPATH", "")])),
           "SLEEPY_SECONDS": "0.2"}
    collection = Collection(tmp_path / "data", plugins="noop,sleepy,titler", extra_env=env).init()
    urls = "\n".join(f"https://example.com/page/{i}" for i in range(URLS))
    collection.cli("add", "--bg", input=urls)
    rng = random.Random(int(os.environ.get("RECOVERY_SEED", "7")))
    killed_at: dict[int, float] = {}

    pools = {"ticks": collection.start_consumer("ticks", 4), "sideeffects": collection.start_consumer("sideeffects", 8)}
    for round_ in range(6):
        # Let some work happen, then kill one pool (or both) at a random moment.
        deadline = time.monotonic() + rng.uniform(0.5, 2.0)
        wait_until(lambda: time.monotonic() >= deadline, timeout=5, interval=0.02, message="a random moment")
        victims = rng.choice([["ticks"], ["sideeffects"], ["ticks", "sideeffects"]])
        for name in victims:
            proc = pools[name]
            os.killpg(proc.pid, signal.SIGKILL)
            killed_at[proc.pid] = time.time()
            proc.wait()
        for name in victims:
            pools[name] = collection.start_consumer(name, 4 if name == "ticks" else 8)

    restarted = time.monotonic()
    try:
        wait_until(lambda: collection.unfinished() == 0, timeout=90, interval=0.2, message="every row final")
        recovery_seconds = time.monotonic() - restarted
    finally:
        collection.stop_all(signal.SIGINT)
    print(f"recovered in {recovery_seconds:.1f}s after the last restart", file=sys.stderr)

    assert collection.counts("crawl") == {"sealed": 1}
    assert collection.counts("snapshot") == {"sealed": URLS}
    assert collection.counts("archiveresult") == {"succeeded": URLS * 3}
    assert collection.scalar("SELECT COUNT(*) FROM core_snapshot WHERE title = 'Title of ' || url") == URLS
    assert tick_overlaps(audit, killed_at) == []
    assert "database is locked" not in collection.log_text()
    # Rows of the killed workers were closed by the loop, not left "running".
    live = {p.pid for p in collection.consumers if p.poll() is None}
    dangling = collection.query("SELECT pid FROM core_process WHERE kind='worker' AND status='running'")
    assert {row["pid"] for row in dangling} <= live
