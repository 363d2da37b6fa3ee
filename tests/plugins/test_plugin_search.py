"""search plugin: its step-9 hook fills the engine's full-text index (archivebox.fulltext)."""
import os

from archivebox import fulltext


def test_search_hook_indexes_htmltotext(site, snapshot_factory):
    page = site.info.pages[11]
    snap = snapshot_factory(page.url)
    for plugin in ("wget", "title", "htmltotext"):
        assert snap.run(plugin).status == "succeeded"
    run = snap.run("search")
    assert run.returncode == 0 and run.status == "succeeded", run
    assert run.result["output_json"]["source"] == "htmltotext/htmltotext.txt"
    db = os.path.join(snap.data_dir, "search.sqlite3")
    hits = fulltext.search(db, page.word)
    assert [(h["snapshot_id"], h["url"], h["title"]) for h in hits] == [(snap.id, page.url, page.title)]
    # re-running replaces the row
    assert snap.run("search").status == "succeeded"
    assert len(fulltext.search(db, page.word)) == 1


def test_search_hook_fallbacks(snapshot_factory):
    snap = snapshot_factory("http://127.0.0.1:9/a")
    run = snap.run("search")
    assert run.returncode == 0 and run.status == "skipped", run
    os.makedirs(os.path.join(snap.dir, "title"))
    with open(os.path.join(snap.dir, "title", "title.txt"), "w") as f:
        f.write("Zanzibar Lighthouse\n")
    run = snap.run("search")
    assert run.status == "succeeded" and run.result["output_json"]["source"] == "title", run
    os.makedirs(os.path.join(snap.dir, "readability"))
    with open(os.path.join(snap.dir, "readability", "article.txt"), "w") as f:
        f.write("readable body with glimmerword\n")
    run = snap.run("search")
    assert run.result["output_json"]["source"] == "readability/article.txt"
    db = os.path.join(snap.data_dir, "search.sqlite3")
    assert [h["title"] for h in fulltext.search(db, "glimmerword")] == ["Zanzibar Lighthouse"]


def test_search_hook_without_data_dir_guesses_root(snapshot_factory):
    snap = snapshot_factory("http://127.0.0.1:9/b")
    os.makedirs(os.path.join(snap.dir, "htmltotext"))
    with open(os.path.join(snap.dir, "htmltotext", "htmltotext.txt"), "w") as f:
        f.write("plain words\n")
    run = snap.run("search", env={"DATA_DIR": None})
    assert run.status == "succeeded", run
    assert os.path.exists(os.path.join(snap.data_dir, "search.sqlite3"))
