"""Data folders as ArchiveBox 0.4, 0.7, 0.8 and 0.9 left them, for the upgrade tests.

Each version's ``index.sqlite3`` has the tables and columns that version had (the ones an
upgrade reads, and a few it ignores), its ``django_migrations`` rows, and each snapshot's
files in the folder that version put them in, with the ``index.json`` it wrote there:

- 0.4: no tags or results tables; a snapshot's tags are a column, its results only in its
  ``archive/<timestamp>/index.json``;
- 0.7: tags and results tables (several attempts of one extractor), users;
- 0.8: crawls, schedules, creation dates, API tokens;
- 0.9: results named ``plugin``/``output_str``, folders under
  ``archive/users/<user>/snapshots/<day>/<domain>/<id>/`` (0.9.73's layout), with
  ``archive/<timestamp>`` a link there for the snapshot it moved from 0.8's layout.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import sqlite3
import uuid
from dataclasses import dataclass, field
from pathlib import Path

# A real 1x1 PNG and a one-page PDF: the snapshot page previews them by type.
PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005"
                    "0001ff8e4d1c7b0000000049454e44ae426082")
PDF = b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Count 0/Kids[]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"

MIGRATIONS = {
    "0.4": [("core", "0001_initial"), ("core", "0002_auto_20200625_1521"), ("core", "0003_auto_20200630_1034"),
            ("core", "0004_auto_20200713_1552"), ("core", "0005_auto_20200728_0326"), ("core", "0006_auto_20201012_1520")],
    "0.7": [("core", f"{name}") for name in ("0001_initial", "0007_archiveresult", "0020_auto_20210410_1031",
                                             "0021_auto_20220914_0934", "0022_auto_20231023_2008")],
    "0.8": [("core", "0001_initial"), ("core", "0022_auto_20231023_2008"), ("core", "0074_alter_snapshot_downloaded_at"),
            ("crawls", "0001_initial"), ("core", "0024_snapshot_crawl"), ("api", "0009_rename_created_apitoken_created_at_and_more")],
    "0.9": [("core", "0022_auto_20231023_2008"), ("crawls", "0001_initial"), ("crawls", "0002_upgrade_from_0_8_6"),
            ("core", "0023_upgrade_to_0_9_0"), ("core", "0029_migrate_archiveresult_to_uuid_pk"), ("core", "0034_remove_tag_slug")],
}

BASE = """
CREATE TABLE django_migrations (id INTEGER PRIMARY KEY AUTOINCREMENT, app VARCHAR(255) NOT NULL, name VARCHAR(255) NOT NULL,
    applied DATETIME NOT NULL);
"""
USERS = """
CREATE TABLE auth_user (id INTEGER PRIMARY KEY AUTOINCREMENT, password VARCHAR(128) NOT NULL, last_login DATETIME,
    is_superuser BOOL NOT NULL, username VARCHAR(150) NOT NULL UNIQUE, first_name VARCHAR(150) NOT NULL,
    last_name VARCHAR(150) NOT NULL, email VARCHAR(254) NOT NULL, is_staff BOOL NOT NULL, is_active BOOL NOT NULL,
    date_joined DATETIME NOT NULL);
CREATE TABLE auth_group (id INTEGER PRIMARY KEY AUTOINCREMENT, name VARCHAR(150) NOT NULL UNIQUE);
CREATE TABLE auth_user_groups (id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER NOT NULL, group_id INTEGER NOT NULL);
"""
SCHEMAS = {
    "0.4": BASE + """
CREATE TABLE core_snapshot (id CHAR(32) PRIMARY KEY, url VARCHAR(2000) NOT NULL UNIQUE, timestamp VARCHAR(32) NOT NULL UNIQUE,
    title VARCHAR(128), tags VARCHAR(256), added DATETIME NOT NULL, updated DATETIME);
""",
    "0.7": BASE + USERS + """
CREATE TABLE core_tag (id INTEGER PRIMARY KEY AUTOINCREMENT, name VARCHAR(100) NOT NULL UNIQUE, slug VARCHAR(100) NOT NULL UNIQUE);
CREATE TABLE core_snapshot (id CHAR(32) PRIMARY KEY, url VARCHAR(2000) NOT NULL UNIQUE, timestamp VARCHAR(32) NOT NULL UNIQUE,
    title VARCHAR(512), added DATETIME NOT NULL, updated DATETIME);
CREATE TABLE core_snapshot_tags (id INTEGER PRIMARY KEY AUTOINCREMENT, snapshot_id CHAR(32) NOT NULL, tag_id INTEGER NOT NULL);
CREATE TABLE core_archiveresult (id INTEGER PRIMARY KEY AUTOINCREMENT, uuid CHAR(32), snapshot_id CHAR(32) NOT NULL,
    extractor VARCHAR(32) NOT NULL, cmd TEXT, pwd VARCHAR(256), cmd_version VARCHAR(128), output VARCHAR(1024),
    start_ts DATETIME, end_ts DATETIME, status VARCHAR(16) NOT NULL);
CREATE INDEX core_archiveresult_snapshot ON core_archiveresult(snapshot_id);
""",
    "0.8": BASE + USERS + """
CREATE TABLE core_tag (id INTEGER PRIMARY KEY AUTOINCREMENT, name VARCHAR(100) NOT NULL UNIQUE, slug VARCHAR(100) NOT NULL UNIQUE,
    created_at DATETIME, modified_at DATETIME, created_by_id INTEGER);
CREATE TABLE crawls_crawl (id CHAR(36) PRIMARY KEY, created_at DATETIME NOT NULL, created_by_id INTEGER NOT NULL, modified_at DATETIME,
    urls TEXT NOT NULL, config TEXT DEFAULT '{}', max_depth SMALLINT NOT NULL DEFAULT 0, tags_str VARCHAR(1024) NOT NULL DEFAULT '',
    label VARCHAR(64) NOT NULL DEFAULT '', notes TEXT NOT NULL DEFAULT '', schedule_id CHAR(36), status VARCHAR(16) NOT NULL DEFAULT 'queued',
    retry_at DATETIME);
CREATE TABLE crawls_crawlschedule (id CHAR(36) PRIMARY KEY, created_at DATETIME NOT NULL, created_by_id INTEGER NOT NULL,
    modified_at DATETIME, schedule VARCHAR(64) NOT NULL, is_enabled BOOLEAN NOT NULL DEFAULT 1, label VARCHAR(64) NOT NULL DEFAULT '',
    notes TEXT NOT NULL DEFAULT '', template_id CHAR(36));
CREATE TABLE core_snapshot (id CHAR(36) PRIMARY KEY, created_by_id INTEGER NOT NULL, created_at DATETIME NOT NULL, modified_at DATETIME,
    url VARCHAR(2000) NOT NULL, timestamp VARCHAR(32) NOT NULL UNIQUE, bookmarked_at DATETIME NOT NULL, crawl_id CHAR(36),
    title VARCHAR(512), downloaded_at DATETIME, depth SMALLINT NOT NULL DEFAULT 0, retry_at DATETIME,
    status VARCHAR(16) NOT NULL DEFAULT 'queued', config TEXT DEFAULT '{}', notes TEXT NOT NULL DEFAULT '', output_dir VARCHAR(256));
CREATE TABLE core_snapshot_tags (id INTEGER PRIMARY KEY AUTOINCREMENT, snapshot_id CHAR(36) NOT NULL, tag_id INTEGER NOT NULL);
CREATE TABLE core_archiveresult (id INTEGER PRIMARY KEY AUTOINCREMENT, uuid CHAR(36) UNIQUE, created_by_id INTEGER NOT NULL,
    created_at DATETIME NOT NULL, modified_at DATETIME, snapshot_id CHAR(36) NOT NULL, extractor VARCHAR(32) NOT NULL, pwd VARCHAR(256),
    cmd TEXT, cmd_version VARCHAR(128), output VARCHAR(1024), start_ts DATETIME, end_ts DATETIME,
    status VARCHAR(16) NOT NULL DEFAULT 'queued', retry_at DATETIME, notes TEXT NOT NULL DEFAULT '');
CREATE TABLE api_apitoken (id CHAR(36) PRIMARY KEY, created_by_id INTEGER NOT NULL, created_at DATETIME NOT NULL,
    modified_at DATETIME, token VARCHAR(32) NOT NULL UNIQUE, expires DATETIME);
""",
}
SCHEMAS["0.9"] = SCHEMAS["0.8"].replace(
    "output_dir VARCHAR(256));", "fs_version VARCHAR(10) NOT NULL DEFAULT '0.9.0', parent_snapshot_id CHAR(36), "
    "current_step INTEGER NOT NULL DEFAULT 0);").replace(
    """CREATE TABLE core_archiveresult (id INTEGER PRIMARY KEY AUTOINCREMENT, uuid CHAR(36) UNIQUE, created_by_id INTEGER NOT NULL,
    created_at DATETIME NOT NULL, modified_at DATETIME, snapshot_id CHAR(36) NOT NULL, extractor VARCHAR(32) NOT NULL, pwd VARCHAR(256),
    cmd TEXT, cmd_version VARCHAR(128), output VARCHAR(1024), start_ts DATETIME, end_ts DATETIME,
    status VARCHAR(16) NOT NULL DEFAULT 'queued', retry_at DATETIME, notes TEXT NOT NULL DEFAULT '');""",
    """CREATE TABLE core_archiveresult (id CHAR(32) PRIMARY KEY, created_at DATETIME NOT NULL, modified_at DATETIME,
    snapshot_id CHAR(32) NOT NULL, plugin VARCHAR(32) NOT NULL DEFAULT '', hook_name VARCHAR(255) NOT NULL DEFAULT '',
    output_str TEXT NOT NULL DEFAULT '', output_json TEXT, output_files TEXT NOT NULL DEFAULT '{}', output_size BIGINT NOT NULL DEFAULT 0,
    start_ts DATETIME, end_ts DATETIME, status VARCHAR(16) NOT NULL DEFAULT 'queued', process_id CHAR(32), notes TEXT NOT NULL DEFAULT '');""")


@dataclass
class Result:
    plugin: str
    status: str
    output: str
    started: str = "2024-01-02 10:00:01"


@dataclass
class Snap:
    url: str
    timestamp: str
    title: str
    tags: list[str]
    added: str
    results: list[Result] = field(default_factory=list)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    files: dict[str, bytes] = field(default_factory=dict)
    crawl: str | None = None


@dataclass
class Legacy:
    root: Path
    version: str
    snapshots: list[Snap]
    crawls: dict[str, dict] = field(default_factory=dict)
    schedules: list[dict] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)

    def folder(self, snap: Snap) -> Path:
        if self.version == "0.9":
            day = dt.datetime.fromisoformat(snap.added).strftime("%Y%m%d")
            return self.root / "archive" / "users" / "admin" / "snapshots" / day / snap.url.split("/")[2] / str(uuid.UUID(snap.id))
        return self.root / "archive" / snap.timestamp

    def tree(self) -> dict[str, str]:
        """Every file under the data folder (links followed) with its sha256: what must not change."""
        found = {}
        for path in sorted(self.root.rglob("*")):
            if path.is_file():
                found[str(path.relative_to(self.root))] = hashlib.sha256(path.read_bytes()).hexdigest()
        return found


def snapshots_of(count: int, start: int = 0) -> list[Snap]:
    """``count`` snapshots, each with a wget mirror, a screenshot, a PDF, a single-file page and
    a video (media) on disk, and results for them (and a failed and a skipped one)."""
    made = []
    for i in range(start, start + count):
        host = f"site{i}.example.com"
        files = {f"{host}/index.html": f"<html><title>Page {i}</title><body>mirror of page {i}</body></html>".encode(),
                 "screenshot.png": PNG, "output.pdf": PDF, "singlefile.html": f"<html><body>single file {i}</body></html>".encode(),
                 "media/video.mp4": b"\x00\x00\x00\x18ftypmp42" + bytes([i % 256]) * 16}
        results = [Result("wget", "failed", "503 Service Unavailable", "2024-01-02 09:00:00"),
                   Result("wget", "succeeded", f"{host}/index.html"), Result("screenshot", "succeeded", "screenshot.png"),
                   Result("pdf", "succeeded", "output.pdf"), Result("singlefile", "succeeded", "singlefile.html"),
                   Result("media", "succeeded", "media/"), Result("title", "succeeded", f"Page {i}"),
                   Result("archive_org", "failed", "HTTP 429 Too Many Requests"), Result("git", "skipped", "")]
        made.append(Snap(url=f"https://{host}/page/{i}?q=1", timestamp=f"{1700000000 + i * 100}.{i % 10}", title=f"Page {i}",
                         tags=["news", f"tag{i % 3}"], added=f"2024-01-0{1 + i % 9} 12:{i % 60:02d}:00", results=results, files=files))
    return made


def write_folder(legacy: Legacy, snap: Snap) -> None:
    folder = legacy.folder(snap)
    for relative, data in snap.files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    history: dict[str, list] = {}
    for result in snap.results:
        history.setdefault(result.plugin, []).append({"schema": "ArchiveResult", "cmd": [result.plugin], "pwd": str(folder),
                                                      "cmd_version": "1.0", "output": result.output, "status": result.status,
                                                      "start_ts": result.started.replace(" ", "T") + "+00:00",
                                                      "end_ts": result.started.replace(" ", "T") + "+00:00"})
    index = {"url": snap.url, "timestamp": snap.timestamp, "title": snap.title, "tags": ",".join(snap.tags), "history": history,
             "sources": [], "base_url": snap.url.split("://")[1]}
    (folder / "index.json").write_text(json.dumps(index))
    if legacy.version == "0.9" and snap is legacy.snapshots[0]:
        # 0.9.73 links archive/<timestamp> only for a snapshot it moved from an older layout.
        link = legacy.root / "archive" / snap.timestamp
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(folder, link.parent), link)


def make(root: Path, version: str, snapshots: list[Snap], with_schedule: bool = True) -> Legacy:
    """The data folder ``root`` as ArchiveBox ``version`` left it."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "archive").mkdir(exist_ok=True)
    (root / "ArchiveBox.conf").write_text("[SERVER_CONFIG]\nSECRET_KEY = not-so-secret-but-long-enough-for-django-0123456789\n"
                                          "[ARCHIVE_METHOD_TOGGLES]\nSAVE_ARCHIVE_DOT_ORG = False\n")
    legacy = Legacy(root, version, snapshots)
    db = sqlite3.connect(root / "index.sqlite3")
    db.executescript(SCHEMAS[version])
    db.executemany("INSERT INTO django_migrations (app, name, applied) VALUES (?, ?, '2024-01-01 00:00:00')", MIGRATIONS[version])
    if version != "0.4":
        db.execute("INSERT INTO auth_user VALUES (1, 'pbkdf2_sha256$600000$salt$hash', NULL, 1, 'admin', 'Ada', 'L', "
                   "'admin@example.com', 1, 1, '2023-05-01 08:00:00')")
        db.execute("INSERT INTO auth_group VALUES (1, 'archivists')")
        db.execute("INSERT INTO auth_user_groups VALUES (1, 1, 1)")
    if version in ("0.8", "0.9"):
        _crawls_and_schedules(db, legacy, with_schedule)
    tag_ids: dict[str, int] = {}
    for snap in snapshots:
        _insert_snapshot(db, legacy, snap, tag_ids)
        write_folder(legacy, snap)
    db.commit()
    db.close()
    return legacy


def _crawls_and_schedules(db: sqlite3.Connection, legacy: Legacy, with_schedule: bool) -> None:
    crawl_id = str(uuid.uuid4())
    template_id = str(uuid.uuid4())
    legacy.crawls = {crawl_id: {"urls": "\n".join(s.url for s in legacy.snapshots[:2]), "max_depth": 1, "label": "Reading list"},
                     template_id: {"urls": "https://news.example.com/\nhttps://blog.example.org/", "max_depth": 0, "label": "Daily news"}}
    for key, crawl in legacy.crawls.items():
        db.execute("INSERT INTO crawls_crawl (id, created_at, created_by_id, modified_at, urls, config, max_depth, tags_str, label, "
                   "status) VALUES (?, '2024-01-01 09:00:00', 1, '2024-01-01 09:30:00', ?, '{}', ?, 'reading', ?, 'sealed')",
                   (key, crawl["urls"], crawl["max_depth"], crawl["label"]))
    for snap in legacy.snapshots[:2]:
        snap.crawl = crawl_id
    if with_schedule:
        legacy.schedules = [{"id": str(uuid.uuid4()), "schedule": "0 6 * * *", "template": template_id, "enabled": 1},
                            {"id": str(uuid.uuid4()), "schedule": "weekly", "template": None, "enabled": 0}]
        for schedule in legacy.schedules:
            db.execute("INSERT INTO crawls_crawlschedule (id, created_at, created_by_id, schedule, is_enabled, label, template_id) "
                       "VALUES (?, '2024-01-01 09:00:00', 1, ?, ?, 'news', ?)",
                       (schedule["id"], schedule["schedule"], schedule["enabled"], schedule["template"]))
    legacy.tokens = ["0123456789abcdef0123456789abcdef"]
    db.execute("INSERT INTO api_apitoken VALUES (?, 1, '2024-01-01 00:00:00', NULL, ?, '2099-01-01 00:00:00')",
               (str(uuid.uuid4()), legacy.tokens[0]))


def _insert_snapshot(db: sqlite3.Connection, legacy: Legacy, snap: Snap, tag_ids: dict[str, int]) -> None:
    version = legacy.version
    if version == "0.4":
        db.execute("INSERT INTO core_snapshot VALUES (?, ?, ?, ?, ?, ?, ?)",
                   (snap.id, snap.url, snap.timestamp, snap.title, ",".join(snap.tags), snap.added, snap.added))
        return  # 0.4: results only in the folder's index.json
    if version == "0.7":
        db.execute("INSERT INTO core_snapshot VALUES (?, ?, ?, ?, ?, ?)", (snap.id, snap.url, snap.timestamp, snap.title, snap.added,
                                                                           "2024-01-10 00:00:00"))
    else:
        sid = str(uuid.UUID(snap.id)) if version == "0.8" else snap.id
        db.execute("INSERT INTO core_snapshot (id, created_by_id, created_at, modified_at, url, timestamp, bookmarked_at, crawl_id, "
                   "title, downloaded_at, status, config) VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, '2024-01-10 00:00:00', 'sealed', '{}')",
                   (sid, snap.added, snap.added, snap.url, snap.timestamp, snap.added, snap.crawl, snap.title))
    for name in snap.tags:
        if name not in tag_ids:
            tag_ids[name] = db.execute("INSERT INTO core_tag (name, slug) VALUES (?, ?)", (name, name)).lastrowid
        db.execute("INSERT INTO core_snapshot_tags (snapshot_id, tag_id) VALUES (?, ?)",
                   (str(uuid.UUID(snap.id)) if version == "0.8" else snap.id, tag_ids[name]))
    for result in snap.results:
        if version == "0.9":
            db.execute("INSERT INTO core_archiveresult (id, created_at, snapshot_id, plugin, hook_name, output_str, output_json, "
                       "start_ts, end_ts, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (uuid.uuid4().hex, result.started, snap.id, result.plugin, f"on_Snapshot__50_{result.plugin}", result.output,
                        json.dumps({"note": result.plugin}), result.started, result.started, result.status))
        else:
            columns = "snapshot_id, extractor, cmd, pwd, cmd_version, output, start_ts, end_ts, status"
            values = [str(uuid.UUID(snap.id)) if version == "0.8" else snap.id, result.plugin, json.dumps([result.plugin, "--x"]),
                      str(legacy.folder(snap)), "1.0", result.output, result.started, result.started, result.status]
            if version == "0.8":
                columns += ", created_by_id, created_at, uuid"
                values += [1, result.started, str(uuid.uuid4())]
            db.execute(f"INSERT INTO core_archiveresult ({columns}) VALUES ({', '.join('?' * len(values))})", values)
