"""Run abx-plugins hooks on a local site, under this engine and under ArchiveBox 0.9.73, and
compare what each (input, plugin) pair ends with: its status, the files it wrote, and for
hashes the files it hashed.

The site and the outcomes are those of tests/abxsweep.py (which the suite's sweep test uses).

    python bench/abx_sweep.py --plugins-dir DIR                      # this engine only
    python bench/abx_sweep.py --plugins-dir DIR --archivebox PATH    # both, compared
    python bench/abx_sweep.py --archivebox PATH --record FILE        # ArchiveBox's outcomes, kept as JSON

DIR is abx-plugins' ``plugins`` folder (``python3.12 -c 'import abx_plugins, os;
print(os.path.dirname(abx_plugins.__file__) + "/plugins")'``); PATH is ArchiveBox 0.9.73's
``archivebox`` script (its venv's ``bin`` goes first on PATH; run as root, it drops to the
data folder's owner, the ``archivebox`` user). It prints one line per pair and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent.parent / "tests"))

from abxsweep import SWEEP, build_site, compare, run_archivebox, run_here, slow_paths  # noqa: E402 - the tests' helpers
from localsite import SiteServer  # noqa: E402

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plugins-dir", type=Path, help="abx-plugins' plugins folder (run this engine)")
    parser.add_argument("--archivebox", type=Path, help="ArchiveBox 0.9.73's archivebox script (run it too)")
    parser.add_argument("--plugins", default=SWEEP)
    parser.add_argument("--record", type=Path, help="write ArchiveBox's outcomes here as JSON")
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    if not args.plugins_dir and not args.archivebox:
        parser.error("give --plugins-dir, --archivebox, or both")
    plugins = args.plugins.split(",")
    with tempfile.TemporaryDirectory(prefix="abx-sweep-") as tmp:
        tmp_path = Path(tmp)
        os.chmod(tmp_path, 0o755)  # ArchiveBox runs as another user
        site = tmp_path / "site"
        site.mkdir()
        with SiteServer(site) as server:
            base_url = server.base_url
            inputs = build_site(site, base_url)
            server.delays.update(slow_paths(site))
            runs = {}
            for engine, runner, where in (("here", run_here, args.plugins_dir), ("archivebox", run_archivebox, args.archivebox)):
                if where is None:
                    continue
                data = tmp_path / engine
                data.mkdir()
                runs[engine] = runner(data, inputs, args.plugins, where, base_url, args.timeout)
                print(f"{engine}: add exited {runs[engine]['exit']} after {runs[engine]['wall']:.1f} s")
    if args.record and "archivebox" in runs:
        args.record.write_text(json.dumps(runs["archivebox"]["outcomes"], indent=1, sort_keys=True) + "\n")
        print(f"ArchiveBox's outcomes written to {args.record}")
    if len(runs) == 2:
        rows = compare(runs["here"], runs["archivebox"], plugins)
        for row in rows:
            print("  {:<9} {:<22} here {:<10} archivebox {:<10} {}".format(*row))
        same = sum(row[4] == "same" for row in rows)
        print(f"{same} of {len(rows)} (input, plugin) pairs end the same")
    else:
        (engine, run), = runs.items()
        for name, results in sorted(run["outcomes"].items()):
            for plugin in plugins:
                outcome = results.get(plugin) or {"status": "-", "output_str": "", "files": []}
                print(f"  {name:<9} {plugin:<22} {outcome['status']:<10} {len(outcome['files']):>3} files  {outcome['output_str'][:70]}")


if __name__ == "__main__":
    main()
