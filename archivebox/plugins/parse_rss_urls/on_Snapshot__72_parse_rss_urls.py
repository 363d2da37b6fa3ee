#!/usr/bin/env python3
"""Emit the item/entry links of an RSS (0.9x/1.0/2.0) or Atom feed.

The document (wget's output, else fetched) is recognised as a feed by its
content (root element ``rss``, ``rdf:RDF`` or ``feed``), whatever its content
type; anything else is skipped. Parsing uses ``xml.etree`` (expat) and refuses
documents with an internal DTD subset or any ``<!ENTITY`` declaration, so
entity-expansion bombs and external entities are never processed. Writes
``urls.jsonl`` (``{"type": "Snapshot", "url", "title"}`` per item) and emits
one ``Snapshot`` record (type and url) per unique link.
"""

from archivebox import pluginkit as H

PLUGIN = "parse_rss_urls"
ATOM = "{http://www.w3.org/2005/Atom}"
XML_BASE = "{http://www.w3.org/XML/1998/namespace}base"


class FeedRefused(ValueError):
    pass


def find_root(data):
    """``(local name, offset)`` of the document's root element, skipping the prolog.

    Returns ``(None, None)`` when the start of the document is not XML-like.
    Only the first 64 KiB are examined.
    """
    import re
    head = data[:65536]
    if head.startswith(b"\xef\xbb\xbf"):
        head = b"   " + head[3:]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None, None  # UTF-16 feeds are not supported
    prolog = re.compile(rb"\s*(?:<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^>\[]*(?:\[.*?\])?\s*>)", re.S | re.I)
    pos = 0
    while True:
        m = prolog.match(head, pos)
        if not m or m.end() == pos:
            break
        pos = m.end()
    m = re.compile(rb"\s*<([A-Za-z_][\w.\-]*(?::[\w.\-]+)?)").match(head, pos)
    if not m:
        return None, None
    return m.group(1).decode("ascii", "replace").split(":")[-1].lower(), m.start(1)


def check_safe(prolog):
    """Refuse entity declarations and internal DTD subsets in the prolog (before parsing).

    Entities can only be declared in the DTD, which lives in the prolog, so
    text such as ``<!ENTITY`` inside an item's CDATA is not a reason to refuse.
    """
    import re
    lowered = prolog.lower()
    if b"<!entity" in lowered:
        raise FeedRefused("feed declares XML entities (<!ENTITY>): refused")
    if re.search(rb"<!doctype[^>\[]*\[", lowered):
        raise FeedRefused("feed has a DOCTYPE with an internal subset: refused")


def parse_feed(data, root_offset):
    """Parse ``data`` into an ``xml.etree`` element tree, refusing entity declarations.

    Built on expat (as ``xml.etree`` is) so the DTD handlers can be hooked:
    any entity declaration, internal DTD subset or external entity reference
    aborts the parse with :class:`FeedRefused`.
    """
    import pyexpat
    from xml.etree.ElementTree import TreeBuilder
    check_safe(data[:root_offset])
    builder = TreeBuilder()
    parser = pyexpat.ParserCreate(namespace_separator="}")
    parser.buffer_text = True
    parser.SetParamEntityParsing(pyexpat.XML_PARAM_ENTITY_PARSING_NEVER)

    def fix(name):
        return "{" + name if "}" in name else name

    def start(tag, attrs):
        builder.start(fix(tag), {fix(k): v for k, v in attrs.items()})

    def doctype(name, sysid, pubid, has_internal_subset):
        if has_internal_subset:
            raise FeedRefused("feed has a DOCTYPE with an internal subset: refused")

    def refuse_entity(*_args):
        raise FeedRefused("feed declares XML entities: refused")

    def refuse_external(*_args):
        raise FeedRefused("feed references an external entity: refused")

    parser.StartElementHandler = start
    parser.EndElementHandler = lambda tag: builder.end(fix(tag))
    parser.CharacterDataHandler = builder.data
    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = refuse_entity
    parser.UnparsedEntityDeclHandler = refuse_entity
    parser.ExternalEntityRefHandler = refuse_external
    parser.Parse(data, True)
    return builder.close()


def local(tag):
    return tag.rsplit("}", 1)[-1].lower() if isinstance(tag, str) else ""


def child_text(el, name):
    for child in el:
        if local(child.tag) == name and child.text and child.text.strip():
            return child.text.strip()
    return ""


def feed_items(root, feed_url):
    """``[(url, title)]`` of the feed's items/entries (URLs not yet normalised)."""
    from urllib.parse import urljoin
    items = []
    kind = local(root.tag)
    if kind == "feed":
        base = urljoin(feed_url, root.get(XML_BASE) or "")
        for entry in root.iter():
            if local(entry.tag) != "entry":
                continue
            entry_base = urljoin(base, entry.get(XML_BASE) or "")
            href = None
            for link in entry:
                if local(link.tag) != "link" or not link.get("href"):
                    continue
                rel = (link.get("rel") or "alternate").strip().lower()
                if rel == "alternate":
                    href = link.get("href")
                    break
                if href is None and rel not in ("self", "edit", "replies", "enclosure"):
                    href = link.get("href")
            if href is None:
                ident = child_text(entry, "id")
                if ident.lower().startswith(("http://", "https://")):
                    href = ident
            if href:
                items.append((urljoin(entry_base, href.strip()), child_text(entry, "title")))
    else:  # rss / rdf
        for item in root.iter():
            if local(item.tag) != "item":
                continue
            href = child_text(item, "link")
            if not href:
                for child in item:
                    if local(child.tag) == "guid" and (child.get("isPermaLink") or "true").lower() != "false":
                        href = (child.text or "").strip()
                        break
            if not href:
                about = item.get("{http://www.w3.org/1999/02/22-rdf-syntax-ns#}about")
                href = about or ""
            if href:
                items.append((urljoin(feed_url, href), child_text(item, "title")))
    return items


def main():
    args = H.start(PLUGIN)
    url = args["url"]
    timeout = H.timeout_for(PLUGIN, 30)
    H.arm_timeout(timeout + 1, PLUGIN)  # backstop; fetches have their own deadline
    user_agent, check_ssl = H.net_options(PLUGIN)
    try:
        data, ctype, doc_url, origin = H.load_document(url, timeout=timeout, allow_fetch=H.is_http_url(url),
                                                       user_agent=user_agent, check_ssl=check_ssl)
    except H.RateLimited as err:
        H.rate_limited(err.status, err.retry_after)
    except H.FetchError as err:
        H.transient(str(err))
    if data is None:
        if origin.startswith("no saved"):
            H.finish("skipped", origin)
        H.finish("failed", origin)
    kind, root_offset = find_root(data)
    if kind not in ("rss", "rdf", "feed"):
        H.finish("skipped", f"not an RSS/Atom feed ({ctype or 'unknown type'})")
    try:
        root = parse_feed(data, root_offset)
    except FeedRefused as err:
        H.finish("failed", str(err))
    except Exception as err:  # expat raises ExpatError; hostile input may raise others
        H.finish("failed", f"invalid feed XML: {err}")
    if local(root.tag) not in ("rss", "rdf", "feed"):
        H.finish("skipped", f"not an RSS/Atom feed (root element <{local(root.tag)}>)")
    seen = set()
    rows = []
    for href, title in feed_items(root, doc_url or url):
        link = H.normalize_outlink(href, doc_url or url)
        if link and link not in seen:
            seen.add(link)
            rows.append((link, title))
    import json
    H.write_atomic("urls.jsonl", "".join(
        json.dumps({"type": "Snapshot", "url": u, "title": t}, ensure_ascii=False) + "\n" for u, t in rows))
    for link, _title in rows:
        H.emit_url(link, expand=True)  # a feed lists entries: archive them at this depth
    feed_type = "atom" if local(root.tag) == "feed" else local(root.tag)
    H.finish("succeeded", "urls.jsonl", {"count": len(rows), "feed": feed_type, "source": origin})


if __name__ == "__main__":
    main()
