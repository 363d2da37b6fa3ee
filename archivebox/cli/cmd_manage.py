"""Run a Django management command on this collection, e.g. `archivebox manage createsuperuser`."""

from __future__ import annotations

import argparse

from django.core.management import ManagementUtility

from archivebox.cli.common import setup_django

REQUIRES_NO_INIT = {"help", "migrate", "version", "check"}


def register(parser) -> None:
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="the command and its arguments (default: help)")


def run(args) -> int:
    argv = args.args[args.args[:1] == ["--"]:] or ["help"]
    setup_django(require_init=argv[0] not in REQUIRES_NO_INIT)
    ManagementUtility(["archivebox manage", *argv]).execute()
    return 0
