"""List the binaries provisioned for hooks: `archivebox binary list [--name N] [--json]`.

One line per Binary row (this machine's, or every machine's with --all): name, version,
the provider that resolved it and where it is, or why it failed. `archivebox install`
provisions them.
"""

from __future__ import annotations

import json

from django.conf import settings

from archivebox.binaries import listing
from archivebox.binaries.models import Binary
from archivebox.cli.common import setup_django
from archivebox.core.models import Machine


def register(parser) -> None:
    parser.add_argument("action", nargs="?", default="list", choices=["list"], help="what to do (list)")
    parser.add_argument("--name", help="only binaries of this name")
    parser.add_argument("--all", action="store_true", help="every machine's, not only this one's")
    parser.add_argument("--json", action="store_true", help="one JSON array")


def run(args) -> int:
    setup_django()
    machine = Machine.current(settings.ENGINE.machine_id)
    rows = Binary.objects.select_related("machine").order_by("name", "-modified_at")
    if not args.all:
        rows = rows.filter(machine=machine)
    if args.name:
        rows = rows.filter(name=args.name)
    if args.json:
        print(json.dumps([listing.as_json(row) for row in rows], indent=2))
        return 0
    rows = list(rows)
    print(f"Binaries on {'every machine' if args.all else machine} (lib dir {settings.ENGINE.binaries_dir}):")
    for row in rows:
        print(listing.line(row) + (f"  [{row.machine}]" if args.all else ""))
    if not rows:
        print("  none yet: they are provisioned when a hook first needs them, or by `archivebox install`")
    return 0
