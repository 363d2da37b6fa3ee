"""The ``archivebox`` command line.

Each subcommand lives in its own module with ``register(subparsers)`` and
``run(args) -> int``. Errors are one line on stderr and a non-zero exit code.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from archivebox import __version__, boot
from archivebox.config import ConfigError

COMMANDS = ["init", "add", "status", "list", "update", "worker", "server", "purge", "manage"]


class CommandError(Exception):
    """A user-facing failure: printed as one line, exit code ``code``."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="archivebox", description="Self-hosted web archiver.")
    parser.add_argument("--version", action="version", version=f"archivebox {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        module = importlib.import_module(f"archivebox.cli.cmd_{name}")
        sub = subparsers.add_parser(name, help=module.__doc__.strip().splitlines()[0], description=module.__doc__)
        module.register(sub)
        sub.set_defaults(module=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    # Settings read the environment and the data dir's config file: a bad value there is
    # reported as one line before any command runs.
    try:
        boot.setup()
    except ConfigError as err:
        print(f"archivebox: error: {err}", file=sys.stderr)
        return 2
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=os.environ.get("CLI_LOG_LEVEL", "WARNING").upper(), format="%(levelname)s %(name)s: %(message)s")
    try:
        code = args.module.run(args)
    except CommandError as err:
        print(f"archivebox {args.command}: error: {err}", file=sys.stderr)
        code = err.code
    except KeyboardInterrupt:
        print(f"archivebox {args.command}: interrupted", file=sys.stderr)
        code = 130
    sys.stdout.flush()
    return code


def entry() -> None:
    sys.exit(main())
