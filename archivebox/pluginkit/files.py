"""The snapshot's folder on disk: where a hook writes, and what earlier hooks saved.

A hook runs with its own output folder as the working directory, inside the snapshot's
folder (``$SNAP_DIR``); earlier hooks' outputs are its siblings. :func:`find_document`
and :func:`load_html` find the page a fetcher already saved (wget's record, else
Chromium's DOM) so that later hooks do not fetch it again.
"""

import os

from .markup import decode_bytes, sniff_bytes
from .net import DEFAULT_MAX_BYTES, FetchError, fetch, is_transient_status

HTML_TYPES = ("text/html", "application/xhtml+xml")


def snap_dir():
    """This snapshot's folder: ``$SNAP_DIR``, else the parent of the CWD."""
    value = os.environ.get("SNAP_DIR")
    if value:
        return os.path.abspath(value)
    return os.path.dirname(os.path.abspath(os.getcwd()))


def sibling_path(plugin, *parts):
    """Path of ``parts`` inside another plugin's output folder of this snapshot."""
    return os.path.join(snap_dir(), plugin, *parts)


def write_atomic(path, data):
    """Write ``data`` (str or bytes) to ``path`` via a temporary file and rename."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def write_json(path, obj):
    """Write ``obj`` as indented JSON, atomically."""
    import json
    write_atomic(path, json.dumps(obj, indent=2) + "\n")


def read_json(path, default=None):
    """Parse a JSON file, returning ``default`` if it is missing or invalid."""
    import json
    try:
        with open(path, "rb") as f:
            return json.loads(f.read())
    except (OSError, ValueError):
        return default


def inside(path, root):
    """True if ``path`` resolves to a location inside ``root``."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root + os.sep)


def is_html_type(content_type):
    """True for an HTML or XHTML ``Content-Type`` (parameters ignored)."""
    if not content_type:
        return False
    return content_type.split(";")[0].strip().lower() in HTML_TYPES


def _sniff_type(path):
    """Guess a MIME type from the start of a file (used when no header is known)."""
    try:
        with open(path, "rb") as f:
            head = f.read(1024)
    except OSError:
        return None
    lowered = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if lowered.startswith((b"<!doctype html", b"<html", b"<head", b"<body", b"<title", b"<meta")):
        return "text/html"
    if lowered.startswith(b"<?xml") or lowered.startswith((b"<rss", b"<feed", b"<rdf")):
        if b"<rss" in lowered or b"<feed" in lowered or b"<rdf" in lowered:
            return "application/xml"
        if b"<html" in lowered:
            return "application/xhtml+xml"
        return "application/xml"
    if b"\x00" in head:
        return "application/octet-stream"
    name = path.lower()
    if name.endswith((".html", ".htm", ".xhtml")):
        return "text/html"
    return "text/plain"


class Document:
    """A fetched document of this snapshot found on disk."""

    __slots__ = ("path", "content_type", "url", "source")

    def __init__(self, path, content_type, url, source):
        self.path = path
        self.content_type = content_type
        self.url = url
        self.source = source

    @property
    def is_html(self):
        return is_html_type(self.content_type)

    def __repr__(self):
        return f"Document({self.path!r}, {self.content_type!r}, source={self.source!r})"


def find_document(snap=None):
    """The main document a fetcher saved for this snapshot, as a :class:`Document`.

    Looks at wget's record (``wget/wget.json``: its unconverted ``.orig`` copy
    if wget rewrote links), then Chromium's serialized DOM (:func:`rendered_dom`).
    The content type comes from wget's record, else ``headers/headers.json``,
    else from sniffing the file. Returns None when no fetcher output exists.
    """
    snap = snap or snap_dir()
    headers = read_json(os.path.join(snap, "headers", "headers.json"), {}) or {}
    header_type = None
    if isinstance(headers, dict):
        for key, value in (headers.get("headers") or {}).items():
            if key.lower() == "content-type":
                header_type = value
                break
    wget_dir = os.path.join(snap, "wget")
    info = read_json(os.path.join(wget_dir, "wget.json"), None)
    if isinstance(info, dict) and info.get("main_file"):
        for key in ("original_file", "main_file"):
            rel = info.get(key)
            if not rel:
                continue
            path = os.path.join(wget_dir, rel)
            if os.path.isfile(path) and inside(path, snap):
                ctype = info.get("content_type") or header_type or _sniff_type(path)
                return Document(path, ctype, info.get("url"), "wget")
    dom = rendered_dom(snap)
    if dom:
        return Document(dom, "text/html", None, "dom")
    return None


def rendered_dom(snap=None):
    """Path of the page's DOM serialized after its scripts ran, or None: the dom plugin's
    ``dom/output.html``, else the ``chrome`` plugin's own copy (written at step 3, so the
    hooks of step 5 that run beside the dom plugin's find it too)."""
    snap = snap or snap_dir()
    for path in (os.path.join(snap, "dom", "output.html"), os.path.join(snap, "chrome", "output.html")):
        if os.path.isfile(path) and os.path.getsize(path) > 0:
            return path
    return None


def find_main_html(snap=None):
    """Path of the saved HTML of this snapshot, or None: the DOM after scripts
    (:func:`rendered_dom`), else wget's copy. The DOM holds what scripts wrote, which most
    of the web needs; it is only taken for HTML pages (the browser's view of a PDF or a
    feed is no document of it)."""
    snap = snap or snap_dir()
    dom = rendered_dom(snap)
    doc = find_document(snap)
    if dom and (doc is None or doc.is_html):
        return dom
    if doc is not None and doc.is_html:
        return doc.path
    return None


def read_file(path, max_bytes=DEFAULT_MAX_BYTES):
    """The first ``max_bytes`` bytes of a file."""
    with open(path, "rb") as f:
        return f.read(max_bytes)


def load_html(url, timeout, allow_fetch=True, max_bytes=DEFAULT_MAX_BYTES, user_agent=None, check_ssl=True):
    """HTML of the snapshot as ``(text, base_url, origin)``.

    ``origin`` is ``"wget"``/``"dom"`` when read from a sibling's output, or
    ``"fetch"`` when fetched. Returns ``(None, None, reason)`` when nothing is
    available (no sibling output and ``allow_fetch`` is false, or the fetched
    document is not HTML / an HTTP error: ``reason`` says which). Network errors
    raise :class:`FetchError`; a site that says "slow down" raises :class:`RateLimited`.
    """
    doc = find_document()
    if doc is not None and doc.is_html:
        return decode_bytes(read_file(doc.path, max_bytes), doc.content_type), doc.url or url, doc.source
    path = find_main_html()
    if path:
        return decode_bytes(read_file(path, max_bytes), "text/html"), url, "dom"
    if doc is not None:  # a fetcher saved the document and it is not HTML: no need to ask again
        return None, None, f"not HTML ({doc.content_type or 'unknown type'})"
    if not allow_fetch:
        return None, None, "no saved HTML in this snapshot"
    resp = fetch(url, timeout=timeout, max_bytes=max_bytes, user_agent=user_agent, check_ssl=check_ssl)
    if resp.rate_limit():
        raise resp.rate_limit()
    if is_transient_status(resp.status):
        raise FetchError(f"HTTP {resp.status_text} (may recover: retry later)")
    if resp.status >= 400:
        return None, None, resp.status_text
    if not is_html_type(resp.content_type) and sniff_bytes(resp.body) != "text/html":
        return None, None, f"not HTML ({resp.content_type or 'no content type'})"
    return decode_bytes(resp.body, resp.content_type), resp.url, "fetch"


def load_document(url, timeout, allow_fetch=True, max_bytes=DEFAULT_MAX_BYTES, user_agent=None,
                  check_ssl=True):
    """The snapshot's main document as ``(data, content_type, doc_url, origin)``.

    Read from wget's output when present (content type from wget's log or
    ``headers.json``), else fetched. Returns ``(None, None, None, reason)`` for
    an HTTP error or when nothing is available; network errors raise
    :class:`FetchError`, a 429/503 :class:`RateLimited`.
    """
    doc = find_document()
    if doc is not None and doc.source == "wget":
        return read_file(doc.path, max_bytes), doc.content_type, doc.url or url, "wget"
    if not allow_fetch:
        return None, None, None, "no saved document in this snapshot"
    resp = fetch(url, timeout=timeout, max_bytes=max_bytes, user_agent=user_agent, check_ssl=check_ssl)
    if resp.rate_limit():
        raise resp.rate_limit()
    if is_transient_status(resp.status):
        raise FetchError(f"HTTP {resp.status_text} (may recover: retry later)")
    if resp.status >= 400:
        return None, None, None, resp.status_text
    return resp.body, resp.content_type, resp.url, "fetch"


