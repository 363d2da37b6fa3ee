"""Print the commands and how to start (as `archivebox --help`, and what to do next)."""

from __future__ import annotations

from django.conf import settings

from archivebox.cli.common import archivebox_version, is_initialized


def register(parser) -> None:
    return None


def run(args) -> int:
    from archivebox.cli import build_parser  # the parser of every command, built once it is needed
    build_parser().print_help()
    print()
    if not settings.DATA_DIR.is_dir() or not (settings.DATA_DIR / "index.sqlite3").exists() and not is_initialized():
        print("No collection here yet. To start one: mkdir ~/archive && cd ~/archive && archivebox init\n"
              "To open an ArchiveBox collection (0.4 to 0.9): cd into its data folder and run archivebox init.")
    elif old := archivebox_version():
        print(f"This is a collection of ArchiveBox {old}: run `archivebox init` to upgrade it in place (the index is backed up first).")
    else:
        print(f"Collection: {settings.DATA_DIR}. Next: archivebox add URL, archivebox list, archivebox server 0.0.0.0:8000.")
    print("Each command has its own --help, e.g. archivebox add --help. Documentation: docs/ in the project "
          "(docs/archivebox-compat.md: ArchiveBox's commands here).")
    return 0
