"""Reading HTML: decode its bytes, scan it once for what hooks need, resolve its links.

All standard library: ``codecs`` for charsets, ``html.parser`` for the markup,
``urllib.parse`` for URLs. Nothing here raises on bad input: undecodable bytes are
replaced, unparsable links are dropped.
"""

from .output import log


def sniff_bytes(data):
    """``"text/html"`` if ``data`` starts like an HTML document, else None."""
    lowered = data[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if lowered.startswith((b"<!doctype html", b"<html", b"<head", b"<body", b"<title")):
        return "text/html"
    return None


def charset_of(content_type):
    if not content_type:
        return None
    for part in content_type.split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset":
            value = value.strip().strip("'\"").strip()
            return value or None
    return None


def _valid_codec(name):
    import codecs
    try:
        return codecs.lookup(name).name
    except (LookupError, TypeError):
        return None


def decode_bytes(data, content_type=None):
    """Decode an HTML/text document: BOM, then HTTP charset, then ``<meta charset>``, then UTF-8.

    Undecodable bytes are replaced, never fatal.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", "replace")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", "replace")
    codec = None
    declared = charset_of(content_type)
    if declared:
        codec = _valid_codec(declared)
    if codec is None:
        head = data[:4096].lower()
        pos = head.find(b"charset=")
        if pos != -1:
            raw = head[pos + 8:pos + 48].lstrip(b"'\" ")
            name = bytearray()
            for byte in raw:
                if chr(byte).isalnum() or byte in b"-_:.":
                    name.append(byte)
                else:
                    break
            if name:
                codec = _valid_codec(name.decode("ascii", "replace"))
    if codec is None:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            codec = "cp1252"
    if codec in ("iso8859-1", "latin-1", "ascii"):
        codec = "cp1252"  # what browsers do for these labels
    elif codec.startswith(("utf-16", "utf-32")) and not declared:
        codec = "utf-8"  # a <meta> can't declare UTF-16 in a document that was readable as ASCII
    return data.decode(codec, "replace")



def scan_html(text):
    """One pass over an HTML document collecting what several hooks need.

    Returns a dict with ``title`` (raw text of the first ``<title>``, entities
    decoded by the parser), ``base`` (href of the first ``<base>``), ``links``
    (``<a href>``/``<area href>`` values in order), ``icons`` (list of
    ``(rel, href, sizes, type)`` for ``<link rel=...icon...>``), ``meta``
    (lower-cased name/property -> content).
    """
    from html.parser import HTMLParser

    class _Scanner(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.title_parts = None
            self.title = None
            self.base = None
            self.links = []
            self.icons = []
            self.meta = {}
            self.foreign = 0

        def handle_starttag(self, tag, attrs):
            if tag in ("svg", "math"):
                self.foreign += 1  # <title> inside SVG/MathML is not the page title
            if tag == "title" and self.title is None and self.title_parts is None and not self.foreign:
                self.title_parts = []
                return
            if tag in ("a", "area"):
                for key, value in attrs:
                    if key == "href" and value:
                        self.links.append(value)
                        break
            elif tag == "link":
                d = {k: (v or "") for k, v in attrs}
                rel = d.get("rel", "").lower().split()
                if "icon" in rel or "apple-touch-icon" in rel or "apple-touch-icon-precomposed" in rel:
                    if d.get("href"):
                        self.icons.append((" ".join(rel), d["href"], d.get("sizes", ""), d.get("type", "")))
            elif tag == "base" and self.base is None:
                for key, value in attrs:
                    if key == "href" and value:
                        self.base = value
                        break
            elif tag == "meta":
                d = {k: (v or "") for k, v in attrs}
                name = (d.get("name") or d.get("property") or "").strip().lower()
                if name and name not in self.meta:
                    self.meta[name] = d.get("content", "")

        def handle_startendtag(self, tag, attrs):
            if tag not in ("svg", "math", "title"):
                self.handle_starttag(tag, attrs)

        def handle_endtag(self, tag):
            if tag in ("svg", "math") and self.foreign:
                self.foreign -= 1
            if tag == "title" and self.title_parts is not None:
                self._end_title()

        def _end_title(self):
            self.title = "".join(self.title_parts)
            self.title_parts = None

        def handle_data(self, data):
            if self.title_parts is not None:
                self.title_parts.append(data)

    scanner = _Scanner()
    try:
        scanner.feed(text)
        scanner.close()
    except AssertionError as err:  # html.parser raises these on some malformed markup
        log(f"WARNING: HTML parser stopped early: {err}")
    if scanner.title is None and scanner.title_parts is not None:
        scanner.title = "".join(scanner.title_parts)
    return {
        "title": scanner.title,
        "base": scanner.base,
        "links": scanner.links,
        "icons": scanner.icons,
        "meta": scanner.meta,
    }


def collapse_ws(text):
    """``text`` with every run of whitespace made one space, trimmed."""
    return " ".join(text.split())


def normalize_outlink(href, base_url):
    """Absolute http(s) URL for ``href`` resolved against ``base_url``, fragment removed.

    Returns None for non-http(s) schemes (mailto:, javascript:, data:, ...)
    and for unparsable values.
    """
    from urllib.parse import urljoin, urlsplit, urlunsplit
    href = href.strip().replace("\n", "").replace("\r", "").replace("\t", "")
    if not href or href.startswith("#"):
        return None
    try:
        parts = urlsplit(urljoin(base_url, href))
        scheme = parts.scheme.lower()
        host = parts.hostname  # lower-cased by urlsplit
        if scheme not in ("http", "https") or not host:
            return None
        port = parts.port  # raises ValueError for an invalid port
    except ValueError:
        return None
    netloc = parts.netloc.rpartition("@")
    userinfo = netloc[0] + "@" if netloc[1] else ""
    host = f"[{host}]" if ":" in host else host
    if port is not None:
        host += f":{port}"
    absolute = urlunsplit((scheme, userinfo + host, parts.path or "/", parts.query, ""))
    if " " in absolute:
        absolute = absolute.replace(" ", "%20")
    return absolute


BASE_MARKER = "data-archivebox-base"


def with_base(html, url):
    """``html`` with ``<base href=url data-archivebox-base>`` first in its head, so that its
    relative URLs resolve against the page's own URL wherever the file is opened (a saved
    DOM otherwise resolves them against its own folder). A document that has a ``<base>``
    already is left as it is. The marker lets a viewer point the base elsewhere (the web
    UI points it at the page's replay from the web archive)."""
    import re
    from html import escape

    if not url or re.search(r"<base\b", html[:200000], re.IGNORECASE):
        return html
    tag = f'<base href="{escape(url, quote=True)}" {BASE_MARKER}>'
    head = re.search(r"<head\b[^>]*>", html[:200000], re.IGNORECASE)
    if head:
        return html[:head.end()] + tag + html[head.end():]
    opening = re.search(r"<html\b[^>]*>", html[:200000], re.IGNORECASE)
    at = opening.end() if opening else 0
    return html[:at] + f"<head>{tag}</head>" + html[at:]
