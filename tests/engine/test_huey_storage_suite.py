"""Huey's own storage test suite, run against the project's doorbell SQLite storage.

The storage overrides ``enqueue``, ``dequeue`` and ``pop_data`` of Huey's ``SqliteStorage``;
whatever Huey promises of a storage backend must still hold.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from huey import Huey
from huey.tests import base, test_storage

from archivebox.broker.huey_ext import DoorbellSqliteStorage


class TestDoorbellSqliteStorage(test_storage.StorageTests, base.BaseTestCase):
    supports_ttl = False

    def get_huey(self):
        self.folder = Path(tempfile.mkdtemp(prefix="huey-suite-"))
        # An empty dequeue waits this long for the doorbell: keep the suite fast.
        return Huey("huey-suite", storage_class=DoorbellSqliteStorage, filename=str(self.folder / "queue.sqlite3"),
                    doorbell_dir=str(self.folder / "run"), wait_timeout=0.01, timeout=3)

    def tearDown(self):
        super().tearDown()
        self.huey.storage.close()
        shutil.rmtree(self.folder)
