"""Shared helpers for the built-in Python hook scripts.

Hook scripts import this module with::

    import os, sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from _lib import hooklib as H

(importing it takes the plugins folder off ``sys.path`` again, see below).

Start-up cost matters (the engine runs several hooks per URL), so this module
imports only ``os`` and ``sys`` at load time; everything heavier (json, socket,
ssl, html.parser, subprocess, ...) is imported inside the function that uses it.
Hooks also work under ``python -I -S``: :func:`import_third_party` enables
site-packages only for the hooks that need an installed package.

Contents:
- start-up and config: :func:`start` (argv, ``--url``, ``<PLUGIN>_ENABLED``),
  :func:`parse_args`, :func:`env_str`, :func:`env_bool`, :func:`env_int`,
  :func:`env_list`, :func:`timeout_for`, :func:`net_options`
- output: :func:`emit`, :func:`emit_url`, :func:`finish` (final ArchiveResult
  and exit 0), :func:`transient` (exit non-zero: retried later), :func:`log` (stderr)
- time limits: :func:`arm_timeout` (SIGALRM backstop), :func:`install_sigterm_handler`
- snapshot layout: :func:`snap_dir`, :func:`sibling_path`, :func:`read_json`,
  :func:`write_atomic`, :func:`write_json`, :func:`find_document`,
  :func:`find_main_html`, :func:`load_html`, :func:`load_document`
- network: :func:`fetch` (a small HTTP/1.1 client: redirects, gzip, chunked,
  an overall deadline and a size cap; no proxy support)
- HTML: :func:`decode_bytes`, :func:`scan_html`, :func:`normalize_outlink`
- processes: :func:`which`, :func:`run_cmd` (own process group, killed on
  timeout and on SIGTERM)
- Chromium: :func:`chrome_binary`, :func:`run_chrome`, :func:`chrome_hook`
"""

import os
import sys

# Hooks put the plugins folder on sys.path only to import this module. Leaving it
# there would let plugin folder names (readability, search, ...) shadow installed
# packages as namespace packages, so take it off again.
PLUGINS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
while PLUGINS_DIR in sys.path:
    sys.path.remove(PLUGINS_DIR)

DEFAULT_USER_AGENT = "Mozilla/5.0 (compatible; ArchiveBox/0.1; +self-hosted web archiver)"
DEFAULT_MAX_BYTES = 50 * 1024 * 1024
MAX_REDIRECTS = 10
HTML_TYPES = ("text/html", "application/xhtml+xml")


# --------------------------------------------------------------------------- argv / env

def parse_args(argv=None):
    """Parse ``--key=value`` / ``--key value`` / ``--flag`` argv into a dict.

    Dashes in keys become underscores (``--snapshot-id`` -> ``snapshot_id``).
    Unknown flags are kept (callers ignore what they do not need); positional
    arguments are ignored.
    """
    args = {}
    items = sys.argv[1:] if argv is None else list(argv)
    i = 0
    while i < len(items):
        item = items[i]
        i += 1
        if not item.startswith("--") or item == "--":
            continue
        key, sep, value = item[2:].partition("=")
        key = key.replace("-", "_")
        if not sep:
            if i < len(items) and not items[i].startswith("--"):
                value = items[i]
                i += 1
            else:
                value = True
        args[key] = value
    return args


def _env_raw(name, fallbacks=()):
    for key in (name,) + tuple(fallbacks):
        value = os.environ.get(key)
        if value is not None and value.strip() != "":
            return value
    return None


def env_str(name, default=None, fallbacks=()):
    """String env var ``name`` (then each of ``fallbacks``), else ``default``."""
    value = _env_raw(name, fallbacks)
    return default if value is None else value


_TRUE = {"1", "true", "yes", "on", "y", "t"}
_FALSE = {"0", "false", "no", "off", "n", "f", "none", "null"}


def env_bool(name, default=False, fallbacks=()):
    """Boolean env var (true/false, 1/0, yes/no, on/off; case-insensitive)."""
    value = _env_raw(name, fallbacks)
    if value is None:
        return default
    value = value.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    log(f"WARNING: {name}={value!r} is not a boolean, using {default}")
    return default


def env_int(name, default, fallbacks=("TIMEOUT",), minimum=None):
    """Integer env var with fallbacks (``TIMEOUT`` by default) and a lower bound."""
    value = _env_raw(name, fallbacks)
    result = default
    if value is not None:
        try:
            result = int(float(value.strip()))
        except ValueError:
            log(f"WARNING: {name}={value!r} is not a number, using {default}")
    if minimum is not None and result < minimum:
        result = minimum
    return result


def env_list(name, default=(), fallbacks=()):
    """List env var: a JSON array, or a comma/newline separated string."""
    value = _env_raw(name, fallbacks)
    if value is None:
        return list(default)
    value = value.strip()
    if value.startswith("["):
        import json
        try:
            parsed = json.loads(value)
        except ValueError:
            log(f"WARNING: {name} is not a valid JSON list, using the default")
            return list(default)
        if isinstance(parsed, list):
            return [str(v) for v in parsed]
        return list(default)
    return [part.strip() for part in value.replace("\n", ",").split(",") if part.strip()]


def timeout_for(plugin, default=60):
    """The plugin's timeout in seconds: ``<PLUGIN>_TIMEOUT``, else ``TIMEOUT``, else default."""
    return env_int(f"{plugin.upper()}_TIMEOUT", default, fallbacks=("TIMEOUT",), minimum=1)


def is_enabled(plugin, default=True):
    return env_bool(f"{plugin.upper()}_ENABLED", default)


def net_options(plugin):
    """``(user_agent, check_ssl)`` from ``<PLUGIN>_USER_AGENT`` / ``<PLUGIN>_CHECK_SSL_VALIDITY``."""
    prefix = plugin.upper()
    user_agent = env_str(f"{prefix}_USER_AGENT", DEFAULT_USER_AGENT, fallbacks=("USER_AGENT",))
    check_ssl = env_bool(f"{prefix}_CHECK_SSL_VALIDITY", True, fallbacks=("CHECK_SSL_VALIDITY",))
    return user_agent, check_ssl


def start(plugin, default_enabled=True):
    """Common hook prologue: parse argv, check ``--url`` and ``<PLUGIN>_ENABLED``.

    Returns the parsed args dict. Exits with a ``skipped`` result when the plugin
    is disabled and with a ``failed`` result when ``--url`` is missing.
    """
    args = parse_args()
    if not is_enabled(plugin, default_enabled):
        finish("skipped", f"disabled ({plugin.upper()}_ENABLED=false)")
    url = args.get("url")
    if not isinstance(url, str) or not url.strip():
        finish("failed", "missing --url argument")
    args["url"] = url.strip()
    return args


def is_http_url(url):
    return url.lower().startswith(("http://", "https://"))


def import_third_party(name):
    """Import a third-party module, enabling site-packages first if Python runs with ``-S``.

    The engine may start hooks with ``python -I -S`` (much faster start-up when
    ``site`` has costly ``.pth`` files); only hooks that need installed packages
    then pay for ``site``. Raises ImportError if the module is not installed.
    """
    import importlib
    try:
        return importlib.import_module(name)
    except ImportError:
        if not sys.flags.no_site or "site" in sys.modules:
            raise
    import site
    site.main()
    return importlib.import_module(name)


# --------------------------------------------------------------------------- output

def log(*parts):
    """Human log line on stderr (stdout is reserved for JSONL records)."""
    sys.stderr.write(" ".join(str(p) for p in parts) + "\n")
    sys.stderr.flush()


def emit(record):
    """Write one JSONL record to stdout and flush."""
    import json
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
    try:
        data = line.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates (undecodable file names): escape them
        data = (json.dumps(record, separators=(",", ":")) + "\n").encode("ascii")
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def emit_url(url, **extra):
    """Emit a discovered outlink as a ``Snapshot`` record."""
    record = {"type": "Snapshot", "url": url}
    record.update(extra)
    emit(record)


def finish(status, output_str="", output_json=None, exit_code=0):
    """Emit this hook's final ``ArchiveResult`` record and exit (0 by default)."""
    record = {"type": "ArchiveResult", "status": status, "output_str": output_str}
    if output_json is not None:
        record["output_json"] = output_json
    emit(record)
    sys.exit(exit_code)


def arm_timeout(seconds, what="hook"):
    """Exit non-zero (transient failure) if this process is still running after ``seconds``.

    A backstop for pure-Python work (parsing, extraction, indexing); network
    calls have their own deadline and subprocesses their own kill timer.
    """
    import signal

    def on_alarm(signum, frame):
        transient(f"{what} timed out after {seconds}s")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(max(1, int(seconds)))


def disarm_timeout():
    import signal
    signal.alarm(0)


def transient(message, exit_code=1):
    """Transient failure: log ``message`` and exit non-zero so the engine retries later."""
    log(f"ERROR: {message}")
    sys.exit(exit_code)


# --------------------------------------------------------------------------- snapshot layout

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
    if wget rewrote links), then Chromium's serialized DOM (``dom/output.html``).
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
    dom = os.path.join(snap, "dom", "output.html")
    if os.path.isfile(dom) and os.path.getsize(dom) > 0:
        return Document(dom, "text/html", None, "dom")
    return None


def find_main_html(snap=None):
    """Path of the saved HTML of this snapshot (wget's, else Chromium's DOM), or None."""
    snap = snap or snap_dir()
    doc = find_document(snap)
    if doc is not None and doc.is_html:
        return doc.path
    dom = os.path.join(snap, "dom", "output.html")
    if os.path.isfile(dom) and os.path.getsize(dom) > 0:
        return dom
    return None


def read_file(path, max_bytes=DEFAULT_MAX_BYTES):
    with open(path, "rb") as f:
        return f.read(max_bytes)


def load_html(url, timeout, allow_fetch=True, max_bytes=DEFAULT_MAX_BYTES, user_agent=None, check_ssl=True):
    """HTML of the snapshot as ``(text, base_url, origin)``.

    ``origin`` is ``"wget"``/``"dom"`` when read from a sibling's output, or
    ``"fetch"`` when fetched. Returns ``(None, None, reason)`` when nothing is
    available (no sibling output and ``allow_fetch`` is false, or the fetched
    document is not HTML / an HTTP error: ``reason`` says which). Network errors
    raise :class:`FetchError`.
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
    if is_transient_status(resp.status):
        raise FetchError(f"HTTP {resp.status_text} (may recover: retry later)")
    if resp.status >= 400:
        return None, None, resp.status_text
    if not is_html_type(resp.content_type) and _sniff_bytes(resp.body) != "text/html":
        return None, None, f"not HTML ({resp.content_type or 'no content type'})"
    return decode_bytes(resp.body, resp.content_type), resp.url, "fetch"


def load_document(url, timeout, allow_fetch=True, max_bytes=DEFAULT_MAX_BYTES, user_agent=None,
                  check_ssl=True):
    """The snapshot's main document as ``(data, content_type, doc_url, origin)``.

    Read from wget's output when present (content type from wget's log or
    ``headers.json``), else fetched. Returns ``(None, None, None, reason)`` for
    an HTTP error or when nothing is available; network errors raise
    :class:`FetchError`.
    """
    doc = find_document()
    if doc is not None and doc.source == "wget":
        return read_file(doc.path, max_bytes), doc.content_type, doc.url or url, "wget"
    if not allow_fetch:
        return None, None, None, "no saved document in this snapshot"
    resp = fetch(url, timeout=timeout, max_bytes=max_bytes, user_agent=user_agent, check_ssl=check_ssl)
    if is_transient_status(resp.status):
        raise FetchError(f"HTTP {resp.status_text} (may recover: retry later)")
    if resp.status >= 400:
        return None, None, None, resp.status_text
    return resp.body, resp.content_type, resp.url, "fetch"


def _sniff_bytes(data):
    lowered = data[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if lowered.startswith((b"<!doctype html", b"<html", b"<head", b"<body", b"<title")):
        return "text/html"
    return None


# --------------------------------------------------------------------------- decoding

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


# --------------------------------------------------------------------------- HTML scanning

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


# --------------------------------------------------------------------------- network

class FetchError(OSError):
    """A network-level failure (DNS, refused, reset, timeout, TLS, bad response)."""


class Response:
    __slots__ = ("url", "status", "reason", "headers", "body", "truncated", "redirects")

    def __init__(self, url, status, reason, headers, body, truncated, redirects):
        self.url = url
        self.status = status
        self.reason = reason
        self.headers = headers  # list of (name, value) in received order
        self.body = body
        self.truncated = truncated
        self.redirects = redirects  # list of (status, url) hops before the final URL

    def header(self, name, default=None):
        name = name.lower()
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return default

    @property
    def content_type(self):
        return self.header("content-type")

    @property
    def status_text(self):
        return f"{self.status} {self.reason}".strip()

    def headers_dict(self):
        """Headers as a dict; repeated headers are joined with ', '."""
        result = {}
        for key, value in self.headers:
            result[key] = f"{result[key]}, {value}" if key in result else value
        return result


def fetch(url, timeout=30, max_bytes=DEFAULT_MAX_BYTES, user_agent=None, read_body=True,
          check_ssl=True, max_redirects=MAX_REDIRECTS, accept="*/*"):
    """GET ``url`` following redirects, within ``timeout`` seconds in total.

    Returns a :class:`Response` for any HTTP status (4xx/5xx included); the
    body is capped at ``max_bytes`` (``truncated`` tells). Raises
    :class:`FetchError` on network errors and when the deadline passes.
    """
    import time
    from urllib.parse import urljoin
    deadline = time.monotonic() + timeout
    redirects = []
    current = url
    while True:
        resp = _fetch_once(current, deadline, max_bytes, user_agent or DEFAULT_USER_AGENT,
                           read_body, check_ssl, accept)
        location = resp.header("location")
        if resp.status in (301, 302, 303, 307, 308) and location:
            if len(redirects) >= max_redirects:
                raise FetchError(f"too many redirects (>{max_redirects})")
            redirects.append((resp.status, current))
            nxt = urljoin(current, location.strip())
            if not nxt.lower().startswith(("http://", "https://")):
                raise FetchError(f"redirect to unsupported URL {nxt!r}")
            current = nxt.split("#", 1)[0]
            continue
        resp.redirects = redirects
        return resp


def _fetch_once(url, deadline, max_bytes, user_agent, read_body, check_ssl, accept):
    import socket
    import time
    from urllib.parse import urlsplit, quote

    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as err:
        raise FetchError(f"invalid URL {url!r}: {err}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise FetchError(f"unsupported URL {url!r}")
    host = parts.hostname
    port = port or (443 if scheme == "https" else 80)
    try:
        host_ascii = host.encode("ascii").decode()
    except UnicodeEncodeError:
        host_ascii = host.encode("idna").decode()
    path = quote(parts.path or "/", safe="/%:@!$&'()*+,;=~-._")
    if parts.query:
        path += "?" + quote(parts.query, safe="/%:@!$&'()*+,;=?~-._")
    host_header = f"[{host_ascii}]" if ":" in host_ascii else host_ascii
    if parts.port and parts.port != (443 if scheme == "https" else 80):
        host_header += f":{parts.port}"
    request = (
        f"GET {path} HTTP/1.1\r\nHost: {host_header}\r\nUser-Agent: {user_agent}\r\n"
        f"Accept: {accept}\r\nAccept-Encoding: gzip, identity\r\nConnection: close\r\n\r\n"
    ).encode("latin-1", "replace")

    def remaining():
        left = deadline - time.monotonic()
        if left <= 0:
            raise FetchError(f"timed out fetching {url}")
        return left

    sock = None
    try:
        try:
            sock = socket.create_connection((host_ascii, port), timeout=remaining())
            if scheme == "https":
                import ssl
                ctx = ssl.create_default_context()
                if not check_ssl:
                    ctx.check_hostname = False
                    ctx.verify_mode = ssl.CERT_NONE
                sock.settimeout(remaining())
                sock = ctx.wrap_socket(sock, server_hostname=host_ascii)
            sock.settimeout(remaining())
            sock.sendall(request)
            reader = _SockReader(sock, remaining)
            status, reason, headers = _read_head(reader)
            while 100 <= status < 200:  # skip informational responses
                status, reason, headers = _read_head(reader)
            body, truncated = b"", False
            if read_body and status not in (204, 304):  # these never have a body
                body, truncated = _read_body(reader, headers, max_bytes)
                encoding = ""
                for key, value in headers:
                    if key.lower() == "content-encoding":
                        encoding = value.strip().lower()
                if encoding in ("gzip", "x-gzip", "deflate") and body:
                    body = _decompress(body, encoding, max_bytes)
        except socket.timeout:
            raise FetchError(f"timed out fetching {url}") from None
        except FetchError:
            raise
        except OSError as err:
            raise FetchError(f"{type(err).__name__}: {err} ({url})") from None
    finally:
        if sock is not None:
            sock.close()
    return Response(url, status, reason, headers, body, truncated, [])


class _SockReader:
    def __init__(self, sock, remaining):
        self.sock = sock
        self.remaining = remaining
        self.buf = bytearray()
        self.eof = False

    def _fill(self):
        if self.eof:
            return False
        self.sock.settimeout(self.remaining())
        chunk = self.sock.recv(65536)
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def readline(self, limit=65536):
        while True:
            pos = self.buf.find(b"\n")
            if pos != -1:
                line = bytes(self.buf[:pos + 1])
                del self.buf[:pos + 1]
                return line
            if len(self.buf) > limit:
                raise FetchError("response header line too long")
            if not self._fill():
                line = bytes(self.buf)
                self.buf.clear()
                return line

    def read(self, n):
        while len(self.buf) < n and self._fill():
            pass
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data

    def read_all(self, limit):
        while len(self.buf) <= limit and self._fill():
            pass
        data = bytes(self.buf[:limit])
        truncated = len(self.buf) > limit or not self.eof
        self.buf.clear()
        return data, truncated


def _read_head(reader):
    line = reader.readline()
    if not line:
        raise FetchError("server closed the connection without a response")
    parts = line.decode("latin-1").strip().split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise FetchError(f"invalid HTTP status line {line[:80]!r}")
    status = int(parts[1])
    reason = parts[2] if len(parts) > 2 else ""
    if not reason:
        from http import HTTPStatus
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = ""
    headers = []
    for _ in range(1000):
        line = reader.readline()
        if line in (b"\r\n", b"\n", b""):
            return status, reason, headers
        text = line.decode("latin-1").rstrip("\r\n")
        if text[:1] in (" ", "\t") and headers:  # obsolete line folding
            key, value = headers[-1]
            headers[-1] = (key, value + " " + text.strip())
            continue
        key, sep, value = text.partition(":")
        if sep:
            headers.append((key.strip(), value.strip()))
    raise FetchError("too many response headers")


def _read_body(reader, headers, max_bytes):
    lowered = {k.lower(): v for k, v in headers}
    if "chunked" in lowered.get("transfer-encoding", "").lower():
        body = bytearray()
        while True:
            size_line = reader.readline().split(b";")[0].strip()
            if not size_line:
                if reader.eof:
                    return bytes(body), True
                continue
            try:
                size = int(size_line, 16)
            except ValueError:
                raise FetchError(f"invalid chunk size {size_line[:20]!r}") from None
            if size == 0:
                return bytes(body), False
            if len(body) + size > max_bytes:
                body += reader.read(max_bytes - len(body))
                return bytes(body), True
            body += reader.read(size)
            reader.readline()
    length = lowered.get("content-length")
    if length is not None and length.strip().isdigit():
        n = int(length.strip())
        data = reader.read(min(n, max_bytes))
        return data, n > max_bytes or len(data) < min(n, max_bytes)
    return reader.read_all(max_bytes)


def _decompress(body, encoding, max_bytes):
    import zlib
    wbits = 16 + zlib.MAX_WBITS if "gzip" in encoding else zlib.MAX_WBITS
    try:
        obj = zlib.decompressobj(wbits)
        return obj.decompress(body, max_bytes)
    except zlib.error:
        try:
            return zlib.decompressobj(-zlib.MAX_WBITS).decompress(body, max_bytes)
        except zlib.error as err:
            raise FetchError(f"could not decompress response body: {err}") from None


# --------------------------------------------------------------------------- processes

_CHILD_GROUPS = {}  # pgid -> Popen of the group leader
_SIGTERM_INSTALLED = False


class Terminated(SystemExit):
    """Raised in the main thread when SIGTERM/SIGINT arrives (exit code 143/130)."""


def install_sigterm_handler():
    """Turn SIGTERM/SIGINT into a :class:`Terminated` exception (so ``finally`` blocks run).

    Child process groups started by :func:`run_cmd` are killed before raising.
    """
    global _SIGTERM_INSTALLED
    if _SIGTERM_INSTALLED:
        return
    import signal

    def handler(signum, frame):
        _kill_children()
        raise Terminated(128 + signum)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    _SIGTERM_INSTALLED = True


def _kill_group(pgid, grace=2.0, proc=None):
    """SIGTERM the process group ``pgid``, then SIGKILL whatever is left after ``grace`` seconds.

    ``proc`` (the group leader's Popen) is reaped while waiting, so its zombie
    does not keep the group alive.
    """
    import signal
    import time
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    except PermissionError as err:
        log(f"WARNING: cannot signal process group {pgid}: {err}")
        return
    end = time.monotonic() + grace
    while time.monotonic() < end:
        if proc is not None:
            proc.poll()
        if not _group_alive(pgid):
            return
        time.sleep(0.02)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return


def _group_alive(pgid):
    """True while process group ``pgid`` has a member that is not a zombie.

    Zombies count as gone: where PID 1 does not reap orphans (some containers)
    they would otherwise keep a killed group "alive" forever.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True  # no procfs: trust killpg
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()  # state ppid pgrp ...
        if len(fields) >= 3 and fields[2] == str(pgid).encode() and fields[0] != b"Z":
            return True
    return False


def _kill_children():
    for pgid, proc in list(_CHILD_GROUPS.items()):
        _kill_group(pgid, grace=1.0, proc=proc)
        _CHILD_GROUPS.pop(pgid, None)


def which(name):
    """Absolute path of an executable: ``name`` itself if it contains a slash, else found on PATH."""
    if not name:
        return None
    if os.sep in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


class CmdResult:
    __slots__ = ("returncode", "stdout", "stderr", "timed_out")

    def __init__(self, returncode, stdout, stderr, timed_out):
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.timed_out = timed_out


def run_cmd(cmd, timeout, cwd=None, env=None, stdout_path=None):
    """Run ``cmd`` (a list) in its own process group with a hard ``timeout``.

    On timeout (or when this hook gets SIGTERM after :func:`install_sigterm_handler`)
    the whole group gets SIGTERM, then SIGKILL after a short grace. stdout goes
    to ``stdout_path`` if given, else is captured; stderr is captured. Both are
    bytes in the returned :class:`CmdResult`; ``returncode`` is None on timeout.
    """
    import subprocess
    out_file = open(stdout_path, "wb") if stdout_path else None
    try:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
            stdout=out_file if out_file else subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,
        )
        _CHILD_GROUPS[proc.pid] = proc
        try:
            out, err = proc.communicate(timeout=timeout)
            return CmdResult(proc.returncode, out or b"", err or b"", False)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid, proc=proc)
            try:
                out, err = proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = b"", b""
            return CmdResult(None, out or b"", err or b"", True)
        finally:
            # the leader may have exited while descendants live on: reap the group
            _kill_group(proc.pid, grace=1.0, proc=proc)
            _CHILD_GROUPS.pop(proc.pid, None)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    finally:
        if out_file:
            out_file.close()


# --------------------------------------------------------------------------- Chromium

CHROME_CANDIDATES = ("chromium", "chromium-browser", "google-chrome")

CHROME_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--mute-audio", "--hide-scrollbars", "--disable-dev-shm-usage",
    "--disable-extensions", "--disable-breakpad", "--no-default-browser-check",
    "--password-store=basic", "--use-mock-keychain",
)


def chrome_binary():
    """``(path, configured)``: CHROME_BINARY resolved on PATH, else the first candidate found.

    ``path`` is None when nothing usable exists.
    """
    configured = env_str("CHROME_BINARY")
    if configured:
        return which(configured), configured
    for name in CHROME_CANDIDATES:
        path = which(name)
        if path:
            return path, None
    return None, None


def chrome_skip_reason(configured):
    if configured:
        return f"chromium not installed (CHROME_BINARY={configured} not found)"
    return "chromium not installed (none of " + ", ".join(CHROME_CANDIDATES) + " on PATH)"


def is_transient_status(status):
    """HTTP statuses worth retrying later: 408, 425, 429 and every 5xx (the server may recover)."""
    return status in (408, 425, 429) or 500 <= status <= 599


def http_error_from_headers():
    """``"404 Not Found"`` if the headers hook recorded a permanent HTTP error for this snapshot, else None."""
    info = read_json(sibling_path("headers", "headers.json"), None)
    if isinstance(info, dict) and isinstance(info.get("status"), int) and info["status"] >= 400 \
            and not is_transient_status(info["status"]):
        return f"{info['status']} {info.get('reason') or ''}".strip()
    return None


def run_chrome(binary, url, action_args, timeout, stdout_path=None, user_agent=None, extra_args=()):
    """Run headless Chromium once on ``url`` with ``action_args`` (e.g. ``--screenshot=x.png``).

    Uses a fresh temporary profile (removed afterwards) and kills the whole
    process group on timeout. Returns ``(CmdResult, net_error)`` where
    ``net_error`` is Chromium's ``net::ERR_*`` text if the page failed to load.
    """
    import shutil
    import tempfile
    # Chromium's singleton socket lives under the profile/TMPDIR and a unix socket
    # path must stay under ~107 bytes: use a short base folder
    base = tempfile.gettempdir()
    if len(base) > 40 and os.path.isdir("/tmp"):
        base = "/tmp"
    profile = tempfile.mkdtemp(prefix="abx-chrome-", dir=base)
    try:
        cmd = [binary, *CHROME_FLAGS, f"--user-data-dir={profile}"]
        if user_agent:
            cmd.append(f"--user-agent={user_agent}")
        cmd += list(extra_args) + list(action_args) + [url]
        env = dict(os.environ)
        env.setdefault("DBUS_SESSION_BUS_ADDRESS", "disabled:")
        env["HOME"] = profile  # keep Chromium's caches/crash dirs out of the real HOME
        env["TMPDIR"] = profile  # and its temporary files: all removed below
        result = run_cmd(cmd, timeout=timeout, env=env, stdout_path=stdout_path)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    text = result.stderr.decode("utf-8", "replace")
    net_error = None
    marker = "Page load failed: "
    pos = text.find(marker)
    if pos != -1:
        net_error = text[pos + len(marker):].split()[0] if text[pos + len(marker):].split() else "page load failed"
    return result, net_error


def chrome_log_tail(result, lines=8):
    """Last meaningful stderr lines of a Chromium run (D-Bus noise dropped)."""
    text = result.stderr.decode("utf-8", "replace").splitlines()
    useful = [t for t in text if "dbus" not in t.lower() and "unexpected operator" not in t]
    return "\n".join(useful[-lines:])


# net::ERR_* codes that retrying will not fix
PERMANENT_NET_ERRORS = {
    "net::ERR_UNSAFE_PORT", "net::ERR_INVALID_URL", "net::ERR_DISALLOWED_URL_SCHEME",
    "net::ERR_UNKNOWN_URL_SCHEME", "net::ERR_BLOCKED_BY_CLIENT", "net::ERR_BLOCKED_BY_RESPONSE",
    "net::ERR_BLOCKED_BY_ADMINISTRATOR", "net::ERR_INVALID_REDIRECT", "net::ERR_TOO_MANY_REDIRECTS",
    "net::ERR_UNSAFE_REDIRECT",
}


def chrome_hook(plugin, output_name, action_args, validate, capture_stdout=False, extra_args=()):
    """Shared body of the Chromium hooks (screenshot, pdf, dom).

    Renders ``--url`` with ``action_args(tmp_path)`` (for ``capture_stdout``
    hooks Chromium's stdout goes to the temporary file), checks the result with
    ``validate(tmp_path) -> (ok, output_json_or_reason)`` and moves it to
    ``output_name``. Skipped when no Chromium binary exists; failed (exit 0) when
    ``headers.json`` recorded an HTTP error or the page's net error is permanent;
    non-zero exit on timeouts, transient net errors and crashes.
    """
    args = start(plugin)
    url = args["url"]
    if not is_http_url(url):
        finish("skipped", "not an http(s) URL")
    binary, configured = chrome_binary()
    if not binary:
        finish("skipped", chrome_skip_reason(configured))
    http_error = http_error_from_headers()
    if http_error:
        finish("failed", http_error, {"reason": "HTTP error recorded by the headers hook"})
    timeout = timeout_for(plugin, 60)
    check_ssl = env_bool(f"{plugin.upper()}_CHECK_SSL_VALIDITY", True, fallbacks=("CHECK_SSL_VALIDITY",))
    install_sigterm_handler()
    flags = list(extra_args)
    if not check_ssl:
        flags.append("--ignore-certificate-errors")
    tmp = os.path.abspath(f".{output_name}.partial{os.path.splitext(output_name)[1]}")
    try:
        result, net_error = run_chrome(
            binary, url, [] if capture_stdout else action_args(tmp), timeout,
            stdout_path=tmp if capture_stdout else None,
            extra_args=flags + (action_args(tmp) if capture_stdout else []),
        )
        if result.timed_out:
            transient(f"chromium timed out after {timeout}s")
        if net_error:
            if net_error in PERMANENT_NET_ERRORS:
                finish("failed", f"page load failed: {net_error}")
            transient(f"page load failed: {net_error}")
        ok, detail = validate(tmp) if os.path.isfile(tmp) else (False, "no output file")
        if not ok:
            log(chrome_log_tail(result))
            transient(f"chromium (exit {result.returncode}) produced no usable output: {detail}")
        os.replace(tmp, output_name)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    summary = {"bytes": os.path.getsize(output_name)}
    if isinstance(detail, dict):
        summary.update(detail)
    finish("succeeded", output_name, summary)
