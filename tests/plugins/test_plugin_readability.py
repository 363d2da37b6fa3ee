"""readability hook: article extraction with readability-lxml."""
import json
import os
import re

import pytest

readability = pytest.importorskip("readability", reason="readability-lxml is not installed")


def test_readability_extracts_article(site, snapshot_factory):
    page = site.info.pages[10]
    snap = snapshot_factory(page.url)
    assert snap.run("wget").status == "succeeded"
    run = snap.run("readability")
    assert run.returncode == 0 and run.status == "succeeded", run
    assert run.result["output_str"] == "article.html"
    info = json.loads(open(run.path("article.json")).read())
    assert info["title"] == page.title
    assert info["byline"] == page.author
    text = open(run.path("article.txt"), encoding="utf-8").read()
    assert info["length"] == len(text.strip())
    assert page.word in text
    assert site.info.script_word not in text
    assert "Home" not in text.split("\n")[0]  # navigation is not article content
    html = open(run.path("article.html"), encoding="utf-8").read()
    assert html.startswith("<!DOCTYPE html>") and page.word in html
    assert run.result["output_json"] == {"title": page.title, "byline": page.author, "length": info["length"],
                                         "images": 0, "images_not_archived": run.result["output_json"]["images_not_archived"]}


def test_readability_uses_the_images_the_page_load_archived(snapshot_factory):
    """The article's images are the archived copies (from the chrome plugin's MHTML), saved
    beside it; an image the page load did not archive is counted, never fetched."""
    from email.message import EmailMessage

    from localsite import png_bytes

    url = "http://127.0.0.1:9/story/post.html"
    snap = snapshot_factory(url)
    paragraphs = "".join(f"<p>Paragraph {n} of a story that goes on long enough to be an article, "
                         "with plenty of words in it so readability keeps it.</p>" for n in range(8))
    dom = ("<!DOCTYPE html><html><head><title>A story</title></head><body><article><h1>A story</h1>"
           f"{paragraphs}<p><img src='pics/one.png' alt=one> <img src='/elsewhere.png' alt=two></p></article></body></html>")
    os.makedirs(os.path.join(snap.dir, "dom"))
    with open(os.path.join(snap.dir, "dom", "output.html"), "w") as f:
        f.write(dom)
    picture = png_bytes(30, 20, (10, 200, 10))
    mhtml = EmailMessage()
    mhtml.make_related()
    mhtml.add_related(dom, subtype="html", headers=[f"Content-Location: {url}"])
    mhtml.add_related(picture, maintype="image", subtype="png",
                      headers=["Content-Location: http://127.0.0.1:9/story/pics/one.png"])
    os.makedirs(os.path.join(snap.dir, "chrome"))
    with open(os.path.join(snap.dir, "chrome", "page.mhtml"), "wb") as f:
        f.write(bytes(mhtml))
    run = snap.run("readability")
    assert run.status == "succeeded", run
    assert run.result["output_json"]["images"] == 1 and run.result["output_json"]["images_not_archived"] == 1
    html = open(run.path("article.html"), encoding="utf-8").read()
    saved = re.search(r'src="(images/[0-9a-f]+\.png)"', html)
    assert saved and open(run.path(saved.group(1)), "rb").read() == picture
    assert 'src="http://127.0.0.1:9/elsewhere.png"' in html  # not archived: left as it was, never fetched


def test_readability_skipped_without_html(site, snapshot_factory):
    run = snapshot_factory(site.url("/page-01.html")).run("readability")
    assert run.returncode == 0 and run.status == "skipped", run
    assert "no saved HTML" in run.result["output_str"]


def test_readability_empty_and_garbage(snapshot_factory):
    snap = snapshot_factory("http://127.0.0.1:9/x")
    snap.fake_wget("<html><body></body></html>")
    run = snap.run("readability")
    assert run.returncode == 0 and run.status == "failed", run
    snap = snapshot_factory("http://127.0.0.1:9/y")
    snap.fake_wget(bytes(range(1, 256)) * 50, content_type="text/html")
    run = snap.run("readability")
    assert run.returncode == 0 and run.status in ("failed", "succeeded"), run


def test_readability_missing_library_is_skipped(snapshot_factory):
    """An interpreter without readability-lxml (the base Python, outside the venv) reports skipped."""
    import glob
    import os
    import subprocess
    import sys
    from plugintools import hook_script
    base = sorted(glob.glob(os.path.join(sys.base_prefix, "bin", "python3*")))
    check = subprocess.run([base[0], "-I", "-c", "import readability"], capture_output=True) if base else None
    if not base or check.returncode == 0:
        pytest.skip("no interpreter without readability-lxml available")
    snap = snapshot_factory("http://127.0.0.1:9/x")
    snap.fake_wget("<html><body><p>" + "word " * 100 + "</p></body></html>")
    cwd = os.path.join(snap.dir, "readability")
    os.makedirs(cwd)
    # the base interpreter has no archivebox either: put the checkout on its path (the hook itself does nothing of the sort)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    launcher = ("import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); sys.argv = sys.argv[1:]; "
                "runpy.run_path(sys.argv[0], run_name='__main__')")
    proc = subprocess.run([base[0], "-I", "-c", launcher, repo, hook_script("readability"), f"--url={snap.url}"], cwd=cwd,
                          env={"PATH": os.environ["PATH"], "SNAP_DIR": snap.dir}, capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.decode().splitlines()[-1])
    assert result["status"] == "skipped" and "not installed" in result["output_str"]
