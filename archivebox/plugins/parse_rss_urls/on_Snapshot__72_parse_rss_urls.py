#!/usr/bin/env python3
"""Emit the item/entry links of an RSS (0.9x/1.0/2.0) or Atom feed.

The document (wget's output, else fetched) is recognised as a feed by its
content (root element ``rss``, ``rdf:RDF`` or ``feed``), whatever its content
type; anything else is skipped. defusedxml parses it first and refuses any
``<!ENTITY`` declaration or external reference, so entity-expansion bombs and
external entities are never processed; feedparser then reads the entries. Writes
``urls.jsonl`` (``{"type": "Snapshot", "url", "title"}`` per item) and emits
one ``Snapshot`` record (type and url) per unique link.
"""

from archivebox import pluginkit

PLUGIN = "parse_rss_urls"


class FeedRefused(ValueError):
    pass


def find_root(data):
    """The local name of the document's root element (lower case), skipping the prolog.

    Returns None when the start of the document is not XML-like.
    Only the first 64 KiB are examined.
    """
    import re
    head = data[:65536]
    if head.startswith(b"\xef\xbb\xbf"):
        head = b"   " + head[3:]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None  # UTF-16 feeds are not supported
    prolog = re.compile(rb"\s*(?:<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^>\[]*(?:\[.*?\])?\s*>)", re.S | re.I)
    pos = 0
    while True:
        m = prolog.match(head, pos)
        if not m or m.end() == pos:
            break
        pos = m.end()
    m = re.compile(rb"\s*<([A-Za-z_][\w.\-]*(?::[\w.\-]+)?)").match(head, pos)
    if not m:
        return None
    return m.group(1).decode("ascii", "replace").split(":")[-1].lower()


def read_feed(data, feed_url, atom):
    """``[(url, title)]`` of a feed's items/entries (URLs not yet normalised).

    defusedxml parses the document first and refuses entity declarations (entity-expansion
    bombs) and references to external entities (:class:`FeedRefused`); malformed XML raises
    its ParseError. Only then does feedparser read the entries, relative links resolved
    against the feed's URL and ``xml:base``.
    """
    import io
    import defusedxml
    import defusedxml.ElementTree
    import feedparser
    try:
        defusedxml.ElementTree.fromstring(data)
    except defusedxml.EntitiesForbidden:
        raise FeedRefused("feed declares XML entities (<!ENTITY>): refused") from None
    except defusedxml.DefusedXmlException as err:
        raise FeedRefused(f"feed references an external entity or DTD: refused ({err})") from None
    feed = feedparser.parse(io.BytesIO(data), sanitize_html=False, resolve_relative_uris=False,
                            response_headers={"content-location": feed_url})
    items = []
    for entry in feed.entries:
        href = entry_url(entry, atom)
        if href:
            items.append((href, (entry.get("title") or "").strip()))
    return items


def entry_url(entry, atom):
    """An entry's page: its ``alternate`` link (an RSS ``<link>`` is one); in Atom, else its
    first link that is not about the entry itself, else its ``id`` when that is a URL; in RSS,
    else its ``guid`` unless it says it is no permalink (an RSS 1.0 item's ``rdf:about``)."""
    links = [link for link in entry.get("links", []) if link.get("href")]
    href = next((link["href"] for link in links if link.get("rel") == "alternate"), None)
    ident = entry.get("id") or ""
    if href or not atom:
        return href or (ident if entry.get("guidislink") is not False else None)
    href = next((link["href"] for link in links if link.get("rel") not in ("self", "edit", "replies", "enclosure")), None)
    return href or (ident if ident.lower().startswith(("http://", "https://")) else None)


def main():
    args = pluginkit.start(PLUGIN)
    url = args["url"]
    timeout = pluginkit.timeout_for(PLUGIN, 30)
    pluginkit.arm_timeout(timeout + 1, PLUGIN)  # backstop; fetches have their own deadline
    user_agent, check_ssl = pluginkit.net_options(PLUGIN)
    try:
        data, ctype, doc_url, origin = pluginkit.load_document(url, timeout=timeout, allow_fetch=pluginkit.is_http_url(url),
                                                       user_agent=user_agent, check_ssl=check_ssl)
    except pluginkit.RateLimited as err:
        pluginkit.rate_limited(err.status, err.retry_after)
    except pluginkit.FetchError as err:
        pluginkit.transient(str(err))
    if data is None:
        if origin.startswith("no saved"):
            pluginkit.finish("skipped", origin)
        pluginkit.finish("failed", origin)
    kind = find_root(data)
    if kind not in ("rss", "rdf", "feed"):
        pluginkit.finish("skipped", f"not an RSS/Atom feed ({ctype or 'unknown type'})")
    try:
        items = read_feed(data, doc_url or url, atom=kind == "feed")
    except FeedRefused as err:
        pluginkit.finish("failed", str(err))
    except Exception as err:  # defusedxml's ParseError; hostile input may raise others
        pluginkit.finish("failed", f"invalid feed XML: {err}")
    seen = set()
    rows = []
    for href, title in items:
        link = pluginkit.normalize_outlink(href, doc_url or url)
        if link and link not in seen:
            seen.add(link)
            rows.append((link, title))
    import json
    pluginkit.write_atomic("urls.jsonl", "".join(
        json.dumps({"type": "Snapshot", "url": u, "title": t}, ensure_ascii=False) + "\n" for u, t in rows))
    for link, _title in rows:
        pluginkit.emit_url(link, expand=True)  # a feed lists entries: archive them at this depth
    feed_type = "atom" if kind == "feed" else kind
    pluginkit.finish("succeeded", "urls.jsonl", {"count": len(rows), "feed": feed_type, "source": origin})


if __name__ == "__main__":
    main()
