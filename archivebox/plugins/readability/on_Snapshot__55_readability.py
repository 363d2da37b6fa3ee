#!/usr/bin/env python3
"""Extract the readable article from the snapshot's saved HTML with readability-lxml.

Writes ``article.html`` (a standalone page with the article, its images the archived
copies the page load kept, saved in ``images/``: see ``pluginkit.archived``), ``article.txt``
(its plain text) and ``article.json`` (``title``, ``byline``, ``length`` in
characters of text, ``excerpt``, ``source``). Skipped when no saved HTML
exists (wget or Chromium DOM) or when readability-lxml is not installed.
"""
import os

from archivebox import pluginkit

PLUGIN = "readability"
BYLINE_META = ("author", "article:author", "byl", "dc.creator", "dcterms.creator", "parsely-author",
               "sailthru.author", "twitter:creator")


def extract(html, url):
    """``(title, byline, article_html, text)`` of the article in ``html``."""
    from readability import Document  # slow import: only here
    import lxml.html

    doc = Document(html, url=url)
    summary = doc.summary(html_partial=True)
    title = pluginkit.collapse_ws(doc.short_title() or doc.title() or "")
    if title == "[no-title]":
        title = ""
    byline = doc.author()
    if not byline or byline == "[no-author]":
        meta = pluginkit.scan_html(html)["meta"]
        byline = next((meta[k] for k in BYLINE_META if meta.get(k, "").strip()), "")
    byline = pluginkit.collapse_ws(byline)

    text = ""
    if summary.strip():
        fragment = lxml.html.fromstring(summary)
        blocks = []
        for el in fragment.iter("p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "pre", "blockquote",
                                "td", "th", "dd", "dt", "figcaption"):
            if any(anc.tag in ("p", "li", "pre", "blockquote", "td", "th", "dd") for anc in el.iterancestors()):
                continue
            line = pluginkit.collapse_ws(el.text_content())
            if line:
                blocks.append(line)
        text = "\n\n".join(blocks) or pluginkit.collapse_ws(fragment.text_content())
    return title, byline, summary, text


IMAGE_DIR = "images"
IMAGE_TYPES = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp",
               "image/svg+xml": ".svg", "image/avif": ".avif"}


def archived_images(article_html, url):
    """The article with each image the page load archived saved beside it (``images/``)
    and pointed at there, so the article shows the archived images, never the live
    site's; ``(html, saved, missing)``. Links are absolute already (readability)."""
    import hashlib
    from urllib.parse import urljoin

    import lxml.html
    from archivebox.pluginkit.archived import Archived

    if "<img" not in article_html.lower():
        return article_html, 0, 0
    fragment = lxml.html.fragment_fromstring(article_html, create_parent="div")
    archive = Archived()
    saved = missing = 0
    for img in fragment.iter("img"):
        src = (img.get("src") or "").strip()
        if not src or src.startswith("data:"):
            continue
        found = archive.get(urljoin(url, src))
        if found is None or found[0] not in IMAGE_TYPES:
            missing += 1
            continue
        kind, data = found
        name = f"{IMAGE_DIR}/{hashlib.sha1(data).hexdigest()[:16]}{IMAGE_TYPES[kind]}"
        if not os.path.exists(name):
            os.makedirs(IMAGE_DIR, exist_ok=True)
            pluginkit.write_atomic(name, data)
        img.set("src", name)
        img.set("data-archived-from", urljoin(url, src))
        for attr in ("srcset", "sizes"):  # other sizes were not all archived: the one shown was
            img.attrib.pop(attr, None)
        saved += 1
    inner = "".join(lxml.html.tostring(child, encoding="unicode") for child in fragment)
    return (fragment.text or "") + inner, saved, missing


def render_page(title, byline, url, article_html):
    from html import escape
    head = f"<h1>{escape(title)}</h1>\n" if title else ""
    if byline:
        head += f'<p class="byline">{escape(byline)}</p>\n'
    return (
        "<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>{escape(title)}</title>\n"
        f'<meta name="source-url" content="{escape(url, quote=True)}">\n'
        "</head>\n<body>\n<article>\n"
        f"{head}{article_html}\n</article>\n</body>\n</html>\n"
    )


def main():
    args = pluginkit.start(PLUGIN)
    url = args["url"]
    path = pluginkit.find_main_html()
    if not path:
        pluginkit.finish("skipped", "no saved HTML in this snapshot (wget/dom)")
    try:
        pluginkit.import_third_party("readability")
        pluginkit.import_third_party("lxml.html")
    except ImportError:
        pluginkit.finish("skipped", "readability-lxml is not installed")
    timeout = pluginkit.timeout_for(PLUGIN, 60)
    html = pluginkit.decode_bytes(pluginkit.read_file(path), "text/html")
    if not html.strip():
        pluginkit.finish("failed", "saved HTML is empty")

    pluginkit.arm_timeout(timeout, "readability extraction")
    try:
        title, byline, article_html, text = extract(html, url)
    except Exception as err:  # readability/lxml raise many types on hostile markup
        pluginkit.log(f"readability failed: {type(err).__name__}: {err}")
        pluginkit.finish("failed", f"readability could not parse the page ({type(err).__name__})")
    finally:
        pluginkit.disarm_timeout()

    if not text.strip():
        pluginkit.finish("failed", "no article content found")
    visit = pluginkit.read_visit() or {}
    article_html, images, missing = archived_images(article_html, visit.get("final_url") or url)
    info = {
        "title": title,
        "byline": byline or None,
        "length": len(text),
        "excerpt": text[:200],
        "url": url,
        "source": os.path.relpath(path, pluginkit.snap_dir()),
    }
    pluginkit.write_atomic("article.html", render_page(title, byline, url, article_html))
    pluginkit.write_atomic("article.txt", text + "\n")
    pluginkit.write_json("article.json", info)
    pluginkit.finish("succeeded", "article.html", {"title": title, "byline": byline or None, "length": len(text),
                                                   "images": images, "images_not_archived": missing})


if __name__ == "__main__":
    main()
