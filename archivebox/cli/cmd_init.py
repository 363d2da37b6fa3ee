"""Create (or upgrade) a collection in the data directory.

The data directory is the current directory, or DATA_DIR if set. A collection ArchiveBox
(0.4 to 0.9) made is upgraded in place: its index is backed up first, then read into this
engine's, and each snapshot's folder is moved to archive/<id> (archive/<timestamp> is left
as a link to it); an index that cannot be read (corrupt, made by a newer ArchiveBox) is
refused and nothing changes. Folders of ArchiveBox snapshots in archive/ that the index does
not list are imported too, unless --quick.
"""

from __future__ import annotations

import argparse

from archivebox.cli import cmd_install as install
from archivebox.cli.collection import initialize


def register(parser) -> None:
    parser.add_argument("--quiet", "-q", action="store_true", help="print nothing on success")
    parser.add_argument("--quick", action="store_true",
                        help="skip the scan of archive/ for snapshot folders the index does not list (ArchiveBox's "
                             "\"orphans\", which init imports otherwise)")
    parser.add_argument("--force", "-f", action="store_true", help="accepted for ArchiveBox compatibility (init never refuses "
                                                                       "a folder for the files it holds)")
    parser.add_argument("--install", "--setup", "-s", action="store_true",
                        help="then provision the binaries the enabled plugins need (as `archivebox install`)")


def run(args) -> int:
    code = initialize(quiet=args.quiet, quick=args.quick)
    if code == 0 and args.install:
        return install.run(argparse.Namespace(names=[], force=False, json=False, dry_run=False, binproviders="*"))
    return code
