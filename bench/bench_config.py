"""Config resolution: what it costs per hook run and per tick, over the built-in plugins.

A hook run resolves its plugin's config (the ``base`` keys, the global keys, the plugin's
own keys), its timeout and the URL filter; a tick of a snapshot asks which hooks its
enabled plugins have (``<PLUGIN>_ENABLED`` of every plugin). Both run in the worker's
process on every hook run and every tick. The layers are those of a real run: a crawl's
config, the environment and ``ArchiveBox.conf``, with a few values set as strings the way
they arrive from the environment.

  per hook run   mean microseconds for resolved() + timeout() + url_filter(), over every plugin
  per tick       mean microseconds for hooks_for("Snapshot", layers)

Usage:  .venv/bin/python bench/bench_config.py [--rounds 5] [--repeat 200]
Prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from archivebox.hooks.catalog import catalog, layers as make_layers
from archivebox.hooks.config import url_filter


def measure(function, repeat: int) -> float:
    """Mean microseconds of one call of ``function``."""
    started = time.perf_counter()
    for _ in range(repeat):
        function()
    return (time.perf_counter() - started) / repeat * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        cat = catalog(Path(data_dir), "")
        plugins = sorted(cat.plugins)
        layers = make_layers(crawl_config={"TIMEOUT": "30", "WGET_ENABLED": "true"},
                             environ={"CHECK_SSL_VALIDITY": "false", "USER_AGENT": "bench"},
                             file_values={"MAX_URLS": "0"})

        def hook_runs() -> None:
            for plugin in plugins:
                cat.resolved(plugin, layers)
                cat.timeout(plugin, layers)
                url_filter(layers)

        per_run, per_tick = [], []
        for _ in range(args.rounds):
            per_run.append(measure(hook_runs, args.repeat) / len(plugins))
            per_tick.append(measure(lambda: cat.hooks_for("Snapshot", layers), args.repeat))
    print(f"{len(plugins)} plugins, {args.rounds} rounds of {args.repeat}")
    print(f"per hook run   median {statistics.median(per_run):8.1f} us   (rounds: {', '.join(f'{v:.1f}' for v in per_run)})")
    print(f"per tick       median {statistics.median(per_tick):8.1f} us   (rounds: {', '.join(f'{v:.1f}' for v in per_tick)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
