"""htmltotext hook: plain text of the saved HTML (stdlib only)."""


def test_htmltotext_from_wget_output(site, snapshot_factory):
    page = site.info.pages[9]
    snap = snapshot_factory(page.url)
    assert snap.run("wget").status == "succeeded"
    run = snap.run("htmltotext")
    assert run.returncode == 0 and run.status == "succeeded", run
    assert run.result["output_str"] == "htmltotext.txt"
    text = open(run.path("htmltotext.txt"), encoding="utf-8").read()
    assert page.word in text
    assert page.title in text  # the <h1>
    assert site.info.script_word not in text  # script, style and noscript dropped
    assert "Home | Previous | Next" in text  # inline elements stay on one line
    assert "  " not in text and "\n\n" not in text
    assert run.result["output_json"]["words"] == len(text.split())


def test_htmltotext_structure_and_entities(snapshot_factory):
    snap = snapshot_factory("http://127.0.0.1:9/x")
    snap.fake_wget("<html><head><title>T</title><style>p{}</style></head><body>"
                   "<h1>Head&shy;line</h1><p>caf&eacute;   &amp;\n  bar</p><ul><li>one</li><li>two</li></ul>"
                   "<script>var hidden = 1;</script><template><p>tmpl</p></template>"
                   "<pre>keep\nlines</pre><p>end<br>next</p></body></html>")
    run = snap.run("htmltotext")
    text = open(run.path("htmltotext.txt"), encoding="utf-8").read()
    assert text.splitlines() == ["Head\u00adline", "caf\u00e9 & bar", "one", "two", "keep", "lines", "end", "next"]


def test_htmltotext_skipped_without_html(site, snapshot_factory):
    run = snapshot_factory(site.url("/page-01.html")).run("htmltotext")
    assert run.returncode == 0 and run.status == "skipped", run
    snap = snapshot_factory(site.url(site.info.json_path))
    snap.fake_wget(b'{"a": 1}', content_type="application/json", name="h/data.json")
    run = snap.run("htmltotext")
    assert run.status == "skipped", run


def test_htmltotext_garbage_and_empty(snapshot_factory):
    snap = snapshot_factory("http://127.0.0.1:9/x")
    snap.fake_wget(bytes(range(256)) * 20 + b"<<<>>><!--", content_type="text/html")
    run = snap.run("htmltotext")
    assert run.returncode == 0 and run.status in ("succeeded", "failed"), run
    snap = snapshot_factory("http://127.0.0.1:9/y")
    snap.fake_wget("<html><body><script>only()</script></body></html>")
    run = snap.run("htmltotext")
    assert run.returncode == 0 and run.status == "failed" and run.result["output_str"] == "page has no text"
