"""`archivebox init` with DATABASE_URL on Postgres in an ArchiveBox collection: its index is
imported into Postgres (each row once, however many runs), the old file renamed to its
backup name, and users made afterwards get fresh ids."""

from __future__ import annotations

import uuid

from helpers import Collection
from legacy_collections import PNG, make, snapshots_of

from .test_postgres import psql


def test_an_archivebox_collection_upgrades_into_postgres(tmp_path, postgres_url):
    database = f"abx_{uuid.uuid4().hex[:8]}"
    psql(f"{postgres_url}/postgres", f"CREATE DATABASE {database}")
    url = f"{postgres_url}/{database}"
    old = make(tmp_path / "data", "0.8", snapshots_of(2))
    collection = Collection(old.root, extra_env={"DATABASE_URL": url})
    out = collection.cli("init").stdout
    assert out.startswith("Upgraded the ArchiveBox 0.8 collection: 2 snapshot(s), 16 archive result(s)"), out
    assert not (old.root / "index.sqlite3").exists() and (old.root / "index.sqlite3.archivebox-0.8.bak").exists()
    listed = {s["url"]: s for s in collection.list_json()}
    assert set(listed) == {snap.url for snap in old.snapshots}
    for snap in old.snapshots:
        assert (old.root / listed[snap.url]["output_dir"] / "screenshot.png").read_bytes() == PNG
    assert eval(psql(url, "SELECT COUNT(*) FROM core_archiveresult"))[0][0] == 16  # noqa: S307 (our own repr of ints)
    # A user made now gets the next id, not the imported admin's.
    collection.cli("manage", "createsuperuser", "--noinput", "--username", "second", "--email", "s@example.com",
                   env={"DJANGO_SUPERUSER_PASSWORD": "another long password 42"})
    assert eval(psql(url, "SELECT username FROM auth_user ORDER BY id"))[0][0] == "admin"  # noqa: S307
    assert collection.cli("init").stdout.startswith("Initialized")
    assert eval(psql(url, "SELECT COUNT(*) FROM core_snapshot"))[0][0] == 2  # noqa: S307
