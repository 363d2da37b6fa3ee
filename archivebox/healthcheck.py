"""Container health check of one worker pool on this machine.

``python -m archivebox.healthcheck ticks`` (or ``sideeffects``) exits 0 when a
consumer of that pool runs on this machine (``MACHINE_ID``, else the hostname) and its
heartbeat is fresh, i.e. its Process row is running and its ``retry_at`` (pushed forward
by every heartbeat) is still ahead. Otherwise it prints why on stderr and exits 1.
It reads two rows; it is meant for a Docker ``HEALTHCHECK`` every few seconds.
"""

from __future__ import annotations

import sys

from archivebox.core.graphs import ProcessGraph
from archivebox import boot

boot.setup()

from django.conf import settings  # noqa: E402
from django.utils import timezone  # noqa: E402

from archivebox.core.models import Process  # noqa: E402
from archivebox.core.models.machine import local_machine_guid  # noqa: E402

POOLS = ("ticks", "sideeffects")


def check(pool: str) -> str | None:
    """None when the pool is alive on this machine, else the reason it is not."""
    guid = local_machine_guid(settings.ENGINE.machine_id)
    alive = Process.objects.filter(kind=Process.Kind.WORKER, status=ProcessGraph.running, machine__guid=guid,
                                   pool=pool, retry_at__gt=timezone.now())
    if alive.exists():
        return None
    return f"no {pool} pool with a fresh heartbeat on machine {guid}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] not in POOLS:
        print(f"usage: python -m archivebox.healthcheck {{{','.join(POOLS)}}}", file=sys.stderr)
        return 2
    try:
        reason = check(argv[0])
    except Exception as err:  # noqa: BLE001 - any failure means "unhealthy", said in one line
        reason = f"cannot check: {type(err).__name__}: {(str(err).strip().splitlines() or [''])[0]}"
    if reason:
        print(reason, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
