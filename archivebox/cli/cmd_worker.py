"""Run both worker pools in this process until SIGINT/SIGTERM.

For separate pools (or many machines) run the stock consumer on each queue instead:
``huey_consumer archivebox.tasks.huey -w 4`` and ``huey_consumer archivebox.sideeffects.huey -w 16``.
"""

from __future__ import annotations

from archivebox.cli.common import at_least, setup_django
from archivebox.process.embedded import EmbeddedWorkers


def register(parser) -> None:
    parser.add_argument("--ticks", type=int, default=4, help="tick worker threads (default 4)")
    parser.add_argument("--sideeffects", type=int, default=16, help="side-effect worker threads (default 16)")


def run(args) -> int:
    at_least(args.ticks, 1, "--ticks")
    at_least(args.sideeffects, 1, "--sideeffects")
    setup_django()
    workers = EmbeddedWorkers(tick_workers=args.ticks, sideeffect_workers=args.sideeffects)
    workers.start()
    print(f"Workers running ({args.ticks} tick, {args.sideeffects} side-effect threads); Ctrl-C to stop.", flush=True)
    try:
        workers.run_until(lambda: False)
    finally:
        workers.stop(graceful=True)
    return 0
