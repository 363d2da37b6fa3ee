"""Print the version, the system it runs on, where the collection's data is, and its binaries.

`archivebox version --quiet` prints the version number only (as `archivebox --version`).
In a collection it lists the binaries the hooks use on this machine (`--binaries NAME,...`
for some of them only); outside one it still prints the version and the system.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

import django
from django.conf import settings

from archivebox import __version__
from archivebox.binaries import listing
from archivebox.cli.common import archivebox_version, is_initialized
from archivebox.core.models import Machine

PACKAGE_DIR = Path(__file__).resolve().parent.parent


def register(parser) -> None:
    parser.add_argument("--quiet", "-q", action="store_true", help="print only the version number (as archivebox --version)")
    parser.add_argument("--binaries", "-b", default="", help="only these binaries, comma-separated (default: all)")


def _size(path: Path) -> str:
    if not path.exists():
        return "missing"
    if path.is_file():
        return f"{path.stat().st_size} bytes"
    return f"{sum(1 for _ in os.scandir(path))} entries"


def run(args) -> int:
    print(__version__)
    if args.quiet:
        return 0
    print(f"ArchiveBox engine v{__version__} (speaks ArchiveBox 0.9's command line; opens its 0.4-0.9 collections)")
    print(f"ARCH={platform.machine()} OS={platform.system()} PLATFORM={platform.platform()} "
          f"PYTHON={platform.python_implementation()} {platform.python_version()} DJANGO={django.get_version()}")
    print(f"UID={os.getuid()} IS_TTY={sys.stdout.isatty()} DATABASE={settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]} "
          f"QUEUES={'redis' if settings.REDIS_URL else 'sqlite'} ABX_PLUGINS={settings.ENGINE.abx_plugins}")
    print()
    print("Code locations:")
    print(f"  PACKAGE_DIR    {_size(PACKAGE_DIR):14} {PACKAGE_DIR}")
    print(f"  PLUGINS_DIR    {_size(PACKAGE_DIR / 'plugins'):14} {PACKAGE_DIR / 'plugins'}")
    print(f"  LIB_DIR        {_size(settings.ENGINE.binaries_dir):14} {settings.ENGINE.binaries_dir}")
    print()
    print("Data locations:")
    for name, path in (("DATA_DIR", settings.DATA_DIR), ("INDEX", settings.DATA_DIR / "index.sqlite3"),
                       ("ARCHIVE_DIR", settings.ARCHIVE_DIR), ("LOGS_DIR", settings.LOGS_DIR), ("QUEUE_DIR", settings.QUEUE_DIR),
                       ("CONFIG_FILE", settings.DATA_DIR / "ArchiveBox.conf")):
        print(f"  {name:14} {_size(path):14} {path}")
    print()
    old = archivebox_version() if (settings.DATA_DIR / "index.sqlite3").exists() else ""
    if old:
        print(f"This is a collection of ArchiveBox {old}: run `archivebox init` to upgrade it in place.")
    elif not settings.DATA_DIR.is_dir() or not is_initialized():
        print("Binary dependencies: not in a collection (run `archivebox init` in a data folder first)")
    else:
        wanted = {name.strip().lower() for name in args.binaries.split(",") if name.strip()}
        rows = [row for row in listing.of_machine(Machine.current(settings.ENGINE.machine_id))
                if not wanted or row.name.lower() in wanted]
        print(f"Binary dependencies on this machine ({len(rows)}; `archivebox install` provisions what the plugins need):")
        for row in rows:
            print(listing.line(row))
    return 0
