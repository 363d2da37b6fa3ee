"""Indexes for the lists (newest first, by state, by plugin) and a text index of snapshot
URLs and titles for the search box, so that both answer at once in a collection of
millions (see ``archivebox.core.search``).

The text index is the backend's own: on SQLite an FTS5 table with the trigram tokenizer
(``core_snapshot_text``, contentless: it keeps the index, not a second copy of the text)
whose rowids are those of ``core_snapshot_textrow`` (a snapshot id each, so a ``VACUUM``
that renumbers ``core_snapshot``'s rowids cannot break it), kept by triggers; on Postgres
GIN trigram indexes (``pg_trgm``) on ``upper(url)`` and ``upper(title)``, which Django's
``icontains`` uses. Without
the extension (a role that may not create it) search still works, by scanning.
"""

import logging

from django.db import migrations, models, transaction

logger = logging.getLogger(__name__)

SQLITE = [
    "CREATE TABLE core_snapshot_textrow (rid INTEGER PRIMARY KEY, snapshot_id char(32) NOT NULL UNIQUE)",
    "CREATE VIRTUAL TABLE core_snapshot_text USING fts5(url, title, content='', tokenize='trigram')",
    """CREATE TRIGGER core_snapshot_text_insert AFTER INSERT ON core_snapshot BEGIN
        INSERT INTO core_snapshot_textrow (snapshot_id) VALUES (new.id);
        INSERT INTO core_snapshot_text (rowid, url, title) VALUES (last_insert_rowid(), new.url, new.title);
    END""",
    """CREATE TRIGGER core_snapshot_text_update AFTER UPDATE OF url, title ON core_snapshot
    WHEN old.url IS NOT new.url OR old.title IS NOT new.title BEGIN
        INSERT INTO core_snapshot_text (core_snapshot_text, rowid, url, title)
            SELECT 'delete', rid, old.url, old.title FROM core_snapshot_textrow WHERE snapshot_id = old.id;
        INSERT INTO core_snapshot_text (rowid, url, title)
            SELECT rid, new.url, new.title FROM core_snapshot_textrow WHERE snapshot_id = new.id;
    END""",
    """CREATE TRIGGER core_snapshot_text_delete AFTER DELETE ON core_snapshot BEGIN
        INSERT INTO core_snapshot_text (core_snapshot_text, rowid, url, title)
            SELECT 'delete', rid, old.url, old.title FROM core_snapshot_textrow WHERE snapshot_id = old.id;
        DELETE FROM core_snapshot_textrow WHERE snapshot_id = old.id;
    END""",
    "INSERT INTO core_snapshot_textrow (snapshot_id) SELECT id FROM core_snapshot ORDER BY created_at",
    """INSERT INTO core_snapshot_text (rowid, url, title)
        SELECT r.rid, s.url, s.title FROM core_snapshot_textrow r JOIN core_snapshot s ON s.id = r.snapshot_id""",
]
SQLITE_DROP = ["DROP TRIGGER IF EXISTS core_snapshot_text_insert", "DROP TRIGGER IF EXISTS core_snapshot_text_update",
               "DROP TRIGGER IF EXISTS core_snapshot_text_delete", "DROP TABLE IF EXISTS core_snapshot_text",
               "DROP TABLE IF EXISTS core_snapshot_textrow"]
# On upper(...): what Django's icontains compares (UPPER("url"::text) LIKE UPPER(%s)).
POSTGRES = [
    "CREATE INDEX IF NOT EXISTS snapshot_url_trgm ON core_snapshot USING gin (upper(url) gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS snapshot_title_trgm ON core_snapshot USING gin (upper(title) gin_trgm_ops)",
]
POSTGRES_DROP = ["DROP INDEX IF EXISTS snapshot_url_trgm", "DROP INDEX IF EXISTS snapshot_title_trgm"]


def create_text_index(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            if connection.Database.sqlite_version_info < (3, 34):  # no trigram tokenizer before 3.34
                logger.warning("SQLite %s has no trigram tokenizer: the search box scans instead", connection.Database.sqlite_version)
                return
            for statement in SQLITE:
                cursor.execute(statement)
        elif connection.vendor == "postgresql":
            try:
                with transaction.atomic(using=connection.alias):
                    cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            except Exception as err:  # noqa: BLE001 - a role without the right: search scans instead
                logger.warning("no trigram index for the search box (CREATE EXTENSION pg_trgm: %s); search scans instead", err)
                return
            for statement in POSTGRES:
                cursor.execute(statement)


def drop_text_index(apps, schema_editor):
    connection = schema_editor.connection
    statements = {"sqlite": SQLITE_DROP, "postgresql": POSTGRES_DROP}.get(connection.vendor, [])
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


class Migration(migrations.Migration):

    dependencies = [
        ('core', '0013_host_politeness'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='archiveresult',
            index=models.Index(fields=['status', 'id'], name='result_status_id'),
        ),
        migrations.AddIndex(
            model_name='archiveresult',
            index=models.Index(fields=['plugin', 'id'], name='result_plugin_id'),
        ),
        migrations.AddIndex(
            model_name='snapshot',
            index=models.Index(fields=['created_at'], name='snapshot_created'),
        ),
        migrations.AddIndex(
            model_name='snapshot',
            index=models.Index(fields=['status', 'created_at'], name='snapshot_status_created'),
        ),
        migrations.RunPython(create_text_index, drop_text_index),
    ]
