"""End to end: archive a generated local site with the built-in plugins, as a user would.

A site of 20+ interlinked pages with a feed, a favicon, CSS and images is served on
127.0.0.1; `archivebox add --depth=1` archives it with every offline plugin; then the
snapshots, their titles, their text in the search index, their hashes and their index
files are checked. Chromium's outputs are checked on one page.
"""

import hashlib
import json
import re
from pathlib import Path

import pytest
from helpers import Collection
from localsite import local_site

OFFLINE = "headers,wget,favicon,title,readability,htmltotext,parse_html_urls,parse_txt_urls,parse_rss_urls,search,hashes"


def collection_for(tmp_path, site, plugins: str) -> Collection:
    """A collection that only follows links back to the local site (never off this machine)."""
    env = {"PLUGIN_DIRS": "", "URL_ALLOWLIST": "^" + re.escape(site.base_url) + "/", "TIMEOUT": "30"}
    return Collection(tmp_path / "data", plugins=plugins, extra_env=env).init()


@pytest.fixture(scope="module")
def archived(tmp_path_factory):
    """The site archived once at depth 1 (shared by the checks below)."""
    tmp_path = tmp_path_factory.mktemp("e2e")
    with local_site(tmp_path / "site", pages=20) as site:
        collection = collection_for(tmp_path, site, OFFLINE)
        result = collection.cli("add", "--depth", "1", "--tag", "e2e", site.url(site.info.index_path), timeout=900)
        yield site, collection, result, {s["url"]: s for s in collection.list_json()}


def test_every_page_is_archived_and_sealed(archived):
    site, collection, result, snapshots = archived
    assert "sealed" in result.stdout
    pages = {page.url: page for page in site.info.pages}
    assert set(pages) <= set(snapshots), sorted(set(pages) - set(snapshots))
    assert all(s["status"] == "sealed" for s in snapshots.values())
    assert all(s["url"].startswith(site.base_url) for s in snapshots.values())  # the allow-list held
    root = snapshots[site.url(site.info.index_path)]
    assert root["depth"] == 0 and all(snapshots[url]["depth"] == 1 for url in pages)
    # Deduplicated within the crawl: every URL once.
    assert len(snapshots) == len(collection.list_json())


def test_titles_tags_and_results(archived):
    site, _, _, snapshots = archived
    for page in site.info.pages:
        snapshot = snapshots[page.url]
        assert snapshot["title"] == page.title
        assert "e2e" in snapshot["tags"]
        statuses = {r["plugin"]: r["status"] for r in snapshot["results"]}
        for plugin in ("headers", "wget", "favicon", "title", "htmltotext", "parse_html_urls", "search", "hashes", "readability"):
            assert statuses[plugin] == "succeeded", (page.url, plugin, snapshot["results"])


def test_the_text_of_each_page_is_found_by_search(archived):
    site, collection, _, _ = archived
    for page in site.info.pages:
        found = json.loads(collection.cli("search", "--json", page.word).stdout)
        assert [row["url"] for row in found] == [page.url], page.word
    assert collection.cli("search", site.info.script_word).stdout.startswith("No archived page matches")


def test_hashes_verify_and_the_index_lists_every_output(archived):
    site, collection, _, snapshots = archived
    for page in site.info.pages[:5]:
        folder = collection.root / snapshots[page.url]["output_dir"]
        hashes = json.loads((folder / "hashes" / "hashes.json").read_text())
        assert hashes["files"], page.url
        for relative, digest in hashes["files"].items():
            assert hashlib.sha256((folder / relative).read_bytes()).hexdigest() == digest, relative
        index = json.loads((folder / "index.json").read_text())
        assert index["status"] == "sealed" and index["url"] == page.url
        listed = {output["path"]: output for output in index["outputs"]}
        for relative in hashes["files"]:
            assert listed[relative]["size"] == (folder / relative).stat().st_size
        assert any(o["mimetype"] == "text/html" for o in index["outputs"])
        html = (folder / "index.html").read_text()
        assert page.title in html and "hashes/hashes.json" in html


def test_page_requisites_and_favicon_are_saved(archived):
    site, collection, _, snapshots = archived
    folder = collection.root / snapshots[site.info.pages[0].url]["output_dir"]
    saved = {p.name for p in folder.rglob("*") if p.is_file()}
    assert Path(site.info.css_path).name in saved
    assert any(Path(path).name in saved for path in site.info.image_paths)
    assert any(name.startswith("favicon.") for name in saved)


def test_a_feed_given_to_add_expands_into_its_entries(tmp_path):
    with local_site(tmp_path / "site", pages=20) as site:
        collection = collection_for(tmp_path, site, "parse_rss_urls,title")
        collection.cli("add", "--depth", "0", site.url(site.info.rss_path), timeout=300)
        snapshots = {s["url"]: s for s in collection.list_json()}
    assert set(site.info.rss_links) <= set(snapshots)
    for url in site.info.rss_links:
        assert snapshots[url]["status"] == "sealed" and snapshots[url]["depth"] == 0
        assert snapshots[url]["title"]


def test_a_url_list_file_given_to_add_expands_into_its_urls(tmp_path):
    with local_site(tmp_path / "site", pages=20) as site:
        collection = collection_for(tmp_path, site, "title")
        prose = tmp_path / "notes.txt"
        prose.write_text(f"See {site.info.pages[1].url}, and also ({site.info.pages[2].url}).\n{site.info.pages[3].url}\n")
        collection.cli("add", "--file", str(prose), timeout=300)
        titles = {s["url"]: s["title"] for s in collection.list_json()}
    assert titles == {p.url: p.title for p in site.info.pages[1:4]}


def test_chromium_outputs_are_valid_files(tmp_path):
    with local_site(tmp_path / "site", pages=20) as site:
        collection = collection_for(tmp_path, site, "headers,chrome,screenshot,pdf,dom")
        collection.cli("add", site.info.pages[0].url, timeout=300)
        [snapshot] = collection.list_json()
    statuses = {r["plugin"]: (r["status"], r["output_str"]) for r in snapshot["results"]}
    assert all(status == "succeeded" for status, _ in statuses.values()), statuses
    folder = collection.root / snapshot["output_dir"]
    assert (folder / "screenshot" / "screenshot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (folder / "pdf" / "output.pdf").read_bytes()[:5] == b"%PDF-"
    assert site.info.pages[0].word in (folder / "dom" / "output.html").read_text()
