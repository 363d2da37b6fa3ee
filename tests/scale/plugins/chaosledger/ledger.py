"""Shared body of the chaosledger Python hooks (not a hook itself: no ``on_`` prefix).

Every run appends to ``$DATA_DIR/chaos-ledger.log``, one ``write()`` of one line on an
``O_APPEND`` descriptor each, so lines of concurrent hooks never interleave:

    start <snapshot id> <hook file> <pid> <unix time> [concurrent]
    end <snapshot id> <hook file> <pid> <unix time> succeeded   (after printing its record; exits 0)
    end <snapshot id> <hook file> <pid> <unix time> sigterm     (stopped by SIGTERM before it was done; exits 143)

A run killed by SIGKILL has no ``end`` line. Each run holds an exclusive ``flock`` on
``$DATA_DIR/chaos-locks/<snapshot id>.<hook file>.lock`` for as long as it (or a child of
it) lives; the kernel drops it when the last of them dies, even by SIGKILL. A run that
finds the lock taken starts while an earlier run of the same hook for the same snapshot
is still alive: its ``start`` line ends with ``concurrent``. The run sleeps for a duration derived from
the URL and the hook (0.05-1.5 s), or CHAOSLEDGER_SECONDS if that is set above 0.

:func:`serve` is the body of a background service instead: after its ``start`` line it
prints a readiness line and runs until it is stopped (its snapshot's cleanup); on SIGTERM
it prints its succeeded record, writes ``end ... succeeded`` and exits 0.
"""

import fcntl
import hashlib
import json
import os
import signal
import sys
import time


def arg(name: str) -> str:
    prefix = f"--{name}="
    return next((a[len(prefix):] for a in sys.argv[1:] if a.startswith(prefix)), "")


def seconds_for(url: str, hook: str) -> float:
    fixed = float(os.environ.get("CHAOSLEDGER_SECONDS") or 0)
    if fixed > 0:
        return fixed
    digest = int(hashlib.sha256(f"{url} {hook}".encode()).hexdigest()[:8], 16)
    return 0.05 + 1.45 * digest / 0xFFFFFFFF


def append(line: str) -> None:
    fd = os.open(os.path.join(os.environ["DATA_DIR"], "chaos-ledger.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def locked(snapshot_id: str, hook: str) -> bool:
    """Take this run's lock (kept open until the process ends); False if another run holds it."""
    folder = os.path.join(os.environ["DATA_DIR"], "chaos-locks")
    os.makedirs(folder, exist_ok=True)
    fd = os.open(os.path.join(folder, f"{snapshot_id}.{hook}.lock"), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def run(before_record=None) -> None:
    hook = os.path.basename(sys.argv[0])
    url, snapshot_id, pid = arg("url"), arg("snapshot-id"), os.getpid()
    done = False

    def on_term(signum, frame):
        if not done:
            append(f"end {snapshot_id} {hook} {pid} {time.time():.6f} sigterm")
        os._exit(0 if done else 128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    concurrent = "" if locked(snapshot_id, hook) else " concurrent"
    append(f"start {snapshot_id} {hook} {pid} {time.time():.6f}{concurrent}")
    time.sleep(seconds_for(url, hook))
    output = before_record(url) if before_record else f"slept in pid {pid}"
    # The record and the end line go together: a SIGTERM in between waits until both are written.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    print(json.dumps({"type": "ArchiveResult", "status": "succeeded", "output_str": output}), flush=True)
    append(f"end {snapshot_id} {hook} {pid} {time.time():.6f} succeeded")
    done = True
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def serve() -> None:
    hook = os.path.basename(sys.argv[0])
    snapshot_id, pid = arg("snapshot-id"), os.getpid()

    def on_term(signum, frame):
        print(json.dumps({"type": "ArchiveResult", "status": "succeeded", "output_str": f"served in pid {pid}"}), flush=True)
        append(f"end {snapshot_id} {hook} {pid} {time.time():.6f} succeeded")
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    concurrent = "" if locked(snapshot_id, hook) else " concurrent"
    append(f"start {snapshot_id} {hook} {pid} {time.time():.6f}{concurrent}")
    print("ready", flush=True)
    while True:
        time.sleep(1)
