#!/usr/bin/env python3
"""Extract the page's ``<title>`` and set it as the snapshot's title.

Prefers the title after the page's scripts ran, as the browser saw it (the ``chrome``
plugin's page load: a script-set title is what a reader sees); else reads the HTML saved
by wget (else Chromium's DOM), else fetches the page.
Entities are decoded and whitespace collapsed; ``og:title``/``twitter:title``
are used when the page has no ``<title>``. A URL that is not an HTML page has a title of
its own kind: a PDF's is in its metadata (its Info dictionary, else its XMP ``dc:title``,
read with pypdf), a feed's is its channel's (or Atom feed's) ``<title>``. A document
without any title is no failure (``noresults``: there was nothing to read); an HTTP error
is. Emits ``{"type": "Snapshot", "title": ...}`` and writes ``title.txt``.
"""

from archivebox import pluginkit

PLUGIN = "title"
MAX_TITLE = 1024


def main():
    args = pluginkit.start(PLUGIN)
    url = args["url"]
    rendered = pluginkit.collapse_ws(pluginkit.rendered_title() or "")
    if rendered:
        finish_with(rendered, "chrome", "rendered")
    timeout = pluginkit.timeout_for(PLUGIN, 30)
    pluginkit.arm_timeout(timeout + 1, PLUGIN)  # backstop; fetches have their own deadline
    user_agent, check_ssl = pluginkit.net_options(PLUGIN)
    allow_fetch = pluginkit.is_http_url(url)
    try:
        html, _base, origin = pluginkit.load_html(url, timeout=timeout, allow_fetch=allow_fetch,
                                          user_agent=user_agent, check_ssl=check_ssl)
    except pluginkit.RateLimited as err:
        pluginkit.rate_limited(err.status, err.retry_after)
    except pluginkit.FetchError as err:
        pluginkit.transient(str(err))
    if html is None:
        if not allow_fetch:
            pluginkit.finish("skipped", "no saved HTML and not an http(s) URL")
        if not origin.startswith("not HTML"):
            pluginkit.finish("failed", origin)  # an HTTP error
        document_title(url, timeout, user_agent, check_ssl)
    info = pluginkit.scan_html(html)
    title = pluginkit.collapse_ws(info["title"] or "")
    source = "title"
    if not title:
        for key in ("og:title", "twitter:title"):
            title = pluginkit.collapse_ws(info["meta"].get(key, ""))
            if title:
                source = key
                break
    if not title:
        pluginkit.finish("noresults", "the page has no title (no <title>, og:title or twitter:title)", {"source": origin})
    finish_with(title, origin, source)


def document_title(url, timeout, user_agent, check_ssl):
    """The title of a document that is not an HTML page: a PDF's metadata, a feed's title."""
    try:
        data, content_type, _doc_url, origin = pluginkit.load_document(url, timeout=timeout, user_agent=user_agent, check_ssl=check_ssl)
    except pluginkit.FetchError as err:
        pluginkit.transient(str(err))
    if data is None:
        pluginkit.finish("failed", origin)
    kind = (content_type or "").split(";")[0].strip().lower() or "unknown type"
    if data.startswith(b"%PDF-") or kind == "application/pdf":
        title = pluginkit.collapse_ws(pdf_title(data) or "")
        if title:
            finish_with(title, origin, "pdf metadata")
        pluginkit.finish("noresults", "the PDF has no title in its metadata", {"source": origin, "content_type": kind})
    title = pluginkit.collapse_ws(feed_title(data) or "")
    if title:
        finish_with(title, origin, "feed")
    pluginkit.finish("noresults", f"not HTML ({kind}): no title to read", {"source": origin, "content_type": kind})


def pdf_title(data):
    """A PDF's title: its Info dictionary's /Title, else its XMP dc:title; None when it has none."""
    import io

    import pypdf

    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        info = reader.metadata
        if info is not None and info.title and str(info.title).strip():
            return str(info.title)
        xmp = reader.xmp_metadata
        titles = (xmp.dc_title if xmp is not None else None) or {}
        return titles.get("x-default") or next(iter(titles.values()), None)
    except (pypdf.errors.PyPdfError, ValueError, KeyError, TypeError, AttributeError) as err:
        pluginkit.log(f"cannot read the PDF's metadata: {type(err).__name__}: {err}")
        return None


def feed_title(data):
    """The title of an RSS (0.9x, 1.0, 2.0) or Atom feed: the first <title> (its channel's or
    the feed's own, which comes before the items'); None when the document is not a feed."""
    import html
    import re

    head = data[:262144].decode("utf-8", "replace")
    root = re.search(r"<(?![?!])(?:[\w.-]+:)?([\w.-]+)", head)
    if not root or root.group(1).lower() not in ("rss", "feed", "rdf"):
        return None
    found = re.search(r"<(?:[\w.-]+:)?title(?:\s[^>]*)?>(.*?)</(?:[\w.-]+:)?title\s*>", head, re.S | re.I)
    if not found:
        return None
    text = re.sub(r"<!\[CDATA\[(.*?)\]\]>", lambda m: html.escape(m.group(1)), found.group(1), flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", text))


def finish_with(title, origin, source):
    if len(title) > MAX_TITLE:
        title = title[:MAX_TITLE - 1].rstrip() + "\u2026"
    pluginkit.write_atomic("title.txt", title + "\n")
    pluginkit.emit({"type": "Snapshot", "title": title})
    pluginkit.finish("succeeded", title, {"title": title, "source": origin, "from": source})


if __name__ == "__main__":
    main()
