"""Reading Binary rows for people: the CLI's `archivebox binary list`, `archivebox status` and `install`."""

from __future__ import annotations

from archivebox.binaries.models import Binary, BinaryGraph
from archivebox.core.models import Machine


def as_json(row: Binary) -> dict:
    return {"name": row.name, "status": row.status, "version": row.version, "binprovider": row.binprovider,
            "abspath": row.abspath, "machine": str(row.machine), "binproviders": row.binproviders,
            "min_version": row.min_version, "reason": row.output if row.status == BinaryGraph.failed else "",
            "installed_at": row.installed_at.isoformat() if row.installed_at else None}


def line(row: Binary) -> str:
    if row.status == BinaryGraph.installed:
        return f"  ✓ {row.name:24} {row.version or '?':14} {row.binprovider:8} {row.abspath}"
    if row.status == BinaryGraph.failed:
        return f"  ✗ {row.name:24} failed: {row.output}"
    return f"  … {row.name:24} {row.status}{f' by {row.holder}' if row.holder else ''}"


def of_machine(machine: Machine):
    return Binary.objects.filter(machine=machine).order_by("name", "-modified_at")


def summary(machine: Machine) -> dict:
    """Counts per status of this machine's binaries, and the failed ones with their reason."""
    rows = list(of_machine(machine))
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    return {"counts": counts, "failed": [{"name": r.name, "reason": r.output} for r in rows if r.status == BinaryGraph.failed]}
