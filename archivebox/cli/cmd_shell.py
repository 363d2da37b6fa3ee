"""Open a Python shell with the collection's Django set up (`-c CODE` runs CODE and exits).

The arguments are Django's `shell`'s: `-c/--command`, `-i/--interface`, `--no-imports`.
"""

from __future__ import annotations

import argparse

from django.core.management import ManagementUtility

from archivebox.cli.common import setup_django


def register(parser) -> None:
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="Django's shell arguments, e.g. -c 'print(1)'")


def run(args) -> int:
    setup_django()
    ManagementUtility(["archivebox shell", "shell", *args.args[args.args[:1] == ["--"]:]]).execute()
    return 0
