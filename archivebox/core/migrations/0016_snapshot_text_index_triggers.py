"""The URL/title text index's triggers again, and the index rebuilt (SQLite only).

Migration 0015 added a column with a default to ``core_snapshot``, which Django does on
SQLite by making the table again (create, copy, drop, rename): the old table's triggers
went with it, so snapshots added since were missing from the search box's URL/title index
and deleted or renamed ones stayed in it. This makes the index of migration 0014 again
from the table as it is (a few minutes on a million snapshots). A later migration that
remakes ``core_snapshot`` must do the same (``tests/web/test_counting.py`` checks the
triggers after all migrations).
"""

import importlib
import logging

from django.db import migrations

logger = logging.getLogger(__name__)
TEXT_INDEX = importlib.import_module("archivebox.core.migrations.0014_web_list_indexes_and_text_index")


def rebuild_text_index(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM sqlite_master WHERE name = 'core_snapshot_text'")
        if cursor.fetchone() is None:
            return  # an SQLite without the trigram tokenizer: search scans (migration 0014)
        for statement in TEXT_INDEX.SQLITE_DROP:
            cursor.execute(statement)
    TEXT_INDEX.create_text_index(apps, schema_editor)


class Migration(migrations.Migration):

    dependencies = [
        ('core', '0015_compat_snapshot_timestamp'),
    ]

    operations = [
        migrations.RunPython(rebuild_text_index, migrations.RunPython.noop),
    ]
