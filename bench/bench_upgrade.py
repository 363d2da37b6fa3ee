"""How long `archivebox init` takes to upgrade an ArchiveBox 0.7 collection, and how it scales.

Builds collections as ArchiveBox 0.7 leaves them (tests/legacy_collections.py: each
snapshot with five files in its folder, an index.json, and nine results, one of them an
earlier attempt), of each size asked for, and times `archivebox init` on each: wall and CPU
seconds (of the command and what it started), snapshots per second, the peak resident
memory of its process tree, and the cost per snapshot against the smallest size's (1.00
means it grows linearly).

    python bench/bench_upgrade.py                      # 200 and 2000 snapshots
    python bench/bench_upgrade.py --sizes 500,5000 --dir /dev/shm
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent.parent / "tests"))
sys.path.insert(0, str(HERE.parent))

from benchlib import Scratch, add_dir_option, run_measured  # noqa: E402
from legacy_collections import make, snapshots_of  # noqa: E402

ARCHIVEBOX = Path(sys.executable).parent / "archivebox"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="200,2000", help="collection sizes (snapshots), comma-separated")
    add_dir_option(parser)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    base_cost = None
    print(f"{'snapshots':>9} {'wall s':>8} {'cpu s':>8} {'snap/s':>8} {'peak MB':>8} {'cost/snap vs first':>19}")
    with Scratch(args.dir, prefix="abx-bench-upgrade-") as scratch:
        for size in sizes:
            root = scratch.new(f"ab07-{size}")
            make(root, "0.7", snapshots_of(size), with_schedule=False)
            env = {**os.environ, "DATA_DIR": str(root), "PLUGINS": "title"}
            env.pop("DJANGO_SETTINGS_MODULE", None)
            measured = run_measured([str(ARCHIVEBOX), "init"], env=env, cwd=root, timeout=3600)
            if measured.returncode != 0:
                raise SystemExit(f"init failed on {size} snapshots:\n{measured.stdout}\n{measured.stderr}")
            cost = measured.wall / size
            base_cost = base_cost or cost
            print(f"{size:>9} {measured.wall:>8.1f} {measured.cpu:>8.1f} {size / measured.wall:>8.0f} "
                  f"{measured.peak_rss / 2**20:>8.0f} {cost / base_cost:>19.2f}")


if __name__ == "__main__":
    main()
