"""abx-plugins' hooks on a slow local site, under this engine or ArchiveBox 0.9.73: what each
(input, plugin) pair ends with, in a form both engines share (the run's port and the WARC's
time stamp taken out, each engine's own log files left out).

Used by tests/hooks/test_abx_sweep.py (this engine against ArchiveBox's outcomes kept in
tests/hooks/abx_reference.json) and bench/abx_sweep.py (both engines, live).

The site is the tests' generated site (three pages, an RSS feed, a text list of URLs) plus a
Netscape bookmarks file and a JSONL list, with the page images and the icons held back by the
server for a while (a real network is slow: background hooks must be awaited, and later
hooks must wait for what they read). Every input is one snapshot that runs every plugin of
the sweep, in one `archivebox add` per engine.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from localsite import generate_site

SWEEP = ("wget,favicon,hashes,htmltotext,trafilatura,parse_html_urls,parse_txt_urls,parse_rss_urls,"
         "parse_netscape_urls,parse_jsonl_urls,search_backend_sqlite,opendataloader,papersdl,forumdl")
SLOW_SECONDS = 1.5
# Files an engine keeps beside a hook's output (its logs, its wrapper, its status), not output.
BOOKKEEPING = re.compile(r"(^|/)(on_[A-Za-z]+__[^/]*\.sh|[^/]*\.(log|pid|exit)|cmd\.sh)$")


def build_site(root: Path, base_url: str) -> dict[str, str]:
    """The inputs of the sweep, by name: their URLs on the local site."""
    info = generate_site(root, pages=3, base_url=base_url)
    page_urls = [page.url for page in info.pages]
    bookmarks = "\n".join(f'<DT><A HREF="{url}" ADD_DATE="1700000000" TAGS="sweep">{url}</A>' for url in page_urls)
    (root / "bookmarks.html").write_text(
        "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<META HTTP-EQUIV=\"Content-Type\" CONTENT=\"text/html; charset=UTF-8\">\n"
        f"<TITLE>Bookmarks</TITLE>\n<H1>Bookmarks</H1>\n<DL><p>\n{bookmarks}\n</DL><p>\n")
    (root / "links.jsonl").write_text("".join(json.dumps({"url": url, "title": f"Link {i}"}) + "\n" for i, url in enumerate(page_urls)))
    return {"page": page_urls[0], "rss": f"{base_url}/feed.rss", "txt": f"{base_url}/urls.txt",
            "netscape": f"{base_url}/bookmarks.html", "jsonl": f"{base_url}/links.jsonl"}


def slow_paths(root: Path) -> dict[str, float]:
    """The page images and the icons, held back by the server."""
    slow = {"/favicon.ico": SLOW_SECONDS, "/static/favicon.png": SLOW_SECONDS}
    slow.update({f"/static/img/{image.name}": SLOW_SECONDS for image in (root / "static" / "img").glob("pic-*.png")})
    return slow


WARC_NAME = re.compile(r"warc/\d+\.warc\.gz$")


def normalise(text: str, base_url: str) -> str:
    """A path or message with the run's port and the WARC's time stamp taken out."""
    port = base_url.rsplit(":", 1)[1]
    text = text.replace(base_url, "{BASE}").replace(f"+{port}", "+{PORT}").replace(f"_{port}", "_{PORT}").replace(f":{port}", ":{PORT}")
    return WARC_NAME.sub("warc/{TS}.warc.gz", text)


def outcome(status: str, output_str: str, folder: Path, base_url: str) -> dict:
    """What a result ended with: its status and message, the files it wrote, and for hashes
    the files it hashed (what the snapshot held when it ran, but each engine's own logs)."""
    found = {"status": status, "output_str": normalise(output_str or "", base_url), "files": files_under(folder, base_url)}
    manifest = folder / "hashes.json"
    if manifest.is_file():
        hashed = (normalise(entry["path"], base_url) for entry in json.loads(manifest.read_text()).get("files", []))
        found["hashed"] = sorted(path for path in hashed if not BOOKKEEPING.search(path))
    return found


def files_under(folder: Path, base_url: str) -> list[str]:
    if not folder.is_dir():
        return []
    found = (str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())
    return sorted(normalise(name, base_url) for name in found if not BOOKKEEPING.search(name))


def run_here(data: Path, inputs: dict[str, str], plugins: str, plugins_dir: Path, base_url: str, timeout: float,
             env: dict | None = None) -> dict:
    """The sweep under this engine: ``archivebox add`` in the foreground, abx-plugins on PLUGIN_DIRS."""
    env = {**(env or os.environ), "PLUGIN_DIRS": str(plugins_dir)}
    archivebox = str(Path(sys.executable).parent / "archivebox")
    subprocess.run([archivebox, "init", "-q"], cwd=data, env=env, check=True, capture_output=True)
    started = time.monotonic()
    added = subprocess.run([archivebox, "add", "--plugins", plugins, *inputs.values()], cwd=data, env=env,
                           capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - started
    listed = subprocess.run([archivebox, "list", "--jsonl"], cwd=data, env=env, capture_output=True, text=True, check=True)
    by_url = {snap["url"]: snap for snap in map(json.loads, filter(str.strip, listed.stdout.splitlines()))}
    outcomes = {}
    for name, url in inputs.items():
        snap = by_url.get(url) or {"results": [], "output_dir": ""}
        folder = data / snap["output_dir"]
        outcomes[name] = {r["plugin"]: outcome(r["status"], r["output_str"], folder / r["plugin"], base_url) for r in snap["results"]}
    return {"wall": wall, "exit": added.returncode, "outcomes": outcomes}


def run_archivebox(data: Path, inputs: dict[str, str], plugins: str, archivebox: Path, base_url: str, timeout: float) -> dict:
    """The sweep under ArchiveBox 0.9.73 (the search backend set to sqlite: sonic is not here)."""
    if os.geteuid() == 0:
        shutil.chown(data, "archivebox", "archivebox")  # ArchiveBox drops root for the folder's owner
    env = {**os.environ, "PATH": f"{archivebox.parent}{os.pathsep}{os.environ['PATH']}", "SEARCH_BACKEND_ENGINE": "sqlite"}
    subprocess.run([str(archivebox), "init"], cwd=data, env=env, check=True, capture_output=True)
    started = time.monotonic()
    added = subprocess.run([str(archivebox), "add", f"--plugins={plugins}", *inputs.values()], cwd=data, env=env,
                           capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - started
    with sqlite3.connect(data / "index.sqlite3") as db:
        snapshots = {url: sid for sid, url in db.execute("SELECT id, url FROM core_snapshot")}
    outcomes = {}
    for name, url in inputs.items():
        sid = snapshots.get(url, "").replace("-", "")
        folder = next(iter((data / "archive").glob(f"users/*/snapshots/*/*/{sid}")), None) if sid else None
        results = {}
        index = folder / "index.jsonl" if folder else None
        for line in (index.read_text().splitlines() if index and index.exists() else []):
            record = json.loads(line)
            if "status" in record and "plugin" in record and record.get("snapshot_id"):
                results[record["plugin"]] = outcome(record["status"], record.get("output_str"), folder / record["plugin"], base_url)
        outcomes[name] = results
    return {"wall": wall, "exit": added.returncode, "outcomes": outcomes}


def compare(here: dict, there: dict, plugins: list[str]) -> list[tuple[str, str, str, str, str]]:
    """One row per (input, plugin): this engine's status, ArchiveBox's, and whether they match
    (status, output files, hashed files)."""
    rows = []
    for name in sorted(set(here["outcomes"]) | set(there["outcomes"])):
        for plugin in plugins:
            ours = here["outcomes"].get(name, {}).get(plugin)
            theirs = there["outcomes"].get(name, {}).get(plugin)
            same = all((ours or {}).get(key) == (theirs or {}).get(key) for key in ("status", "files", "hashed"))
            rows.append((name, plugin, (ours or {}).get("status", "-"), (theirs or {}).get("status", "-"), "same" if same else "DIFFERENT"))
    return rows
