"""A disk that fills up during ``add``: one clear line, the summary, a non-zero exit, and
nothing lost: the crawl finishes once there is space again. On a real (small) tmpfs."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.helpers import VENV_BIN, Collection, wait_until


@pytest.fixture
def small_disk(tmp_path):
    mountpoint = tmp_path / "disk"
    mountpoint.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", str(mountpoint)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=False)


def fill(disk: Path, leave: int) -> Path:
    """A ballast file taking all but ``leave`` bytes of the disk."""
    ballast = disk / "ballast"
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with open(ballast, "wb") as out:
        out.truncate(0)
        remaining = max(free - leave, 0)
        while remaining > 0:
            remaining -= out.write(b"\0" * min(remaining, 1 << 20))
    return ballast


def test_add_on_a_disk_that_fills_up_says_so_once_exits_with_its_summary_and_resumes(small_disk):
    coll = Collection(small_disk / "data", plugins="h_fill", extra_env={"H_FILL_KB": "700"}).init()
    ballast = fill(small_disk, leave=1536 * 1024)
    urls = [f"https://example.com/full/{n}" for n in range(4)]
    result = coll.cli("add", *urls, check=False, timeout=180)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if "disk full" in line]
    assert errors[-1].startswith(f"archivebox add: error: disk full: {coll.root}"), result.stderr
    assert len(errors) <= 3, result.stderr  # one from the engine's log, one from the command; never a flood
    assert result.stdout.startswith("Crawl ") and "snapshots:" in result.stdout  # the summary
    assert coll.scalar("SELECT COUNT(*) FROM core_crawl") == 1

    # Space is back: a worker finishes the same crawl, every URL of it.
    ballast.unlink()
    worker = subprocess.Popen([str(VENV_BIN / "archivebox"), "worker"], cwd=coll.root, env=coll.env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_until(lambda: coll.counts("crawl") == {"sealed": 1}, timeout=120, message="the crawl to finish once there is space")
    finally:
        os.killpg(worker.pid, signal.SIGINT)
        worker.wait(timeout=60)
    assert coll.counts("snapshot") == {"sealed": 4}
    assert coll.counts("archiveresult") == {"succeeded": 4}
    assert all((p / "h_fill" / "fill.bin").stat().st_size == 700 * 1024 for p in (coll.root / "archive").iterdir())
