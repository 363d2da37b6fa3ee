"""Reading URLs, with what the source knows about them, from what users give ``archivebox add``.

Formats (``--parser``; ``auto`` picks one by looking at the text):

* ``txt``: a line holding one token is one URL; a line of prose gives every http(s) URL in it;
* ``html``: every absolute http(s) link of an HTML page;
* ``netscape``: a browser's bookmarks export (titles, ``TAGS``, ``ADD_DATE``);
* ``rss``: an RSS 0.9x/1.0/2.0 or Atom feed (entry links, titles, dates, categories), read by
  feedparser after defusedxml has refused entity declarations and external references;
* ``json``: a Pinboard export (``href``, ``description``, ``tags``, ``time``), a Pocket
  export (the API's ``{"list": {...}}`` or a list of its items), or a list of ``{url, title, tags, timestamp}``;
* ``pocket``: Pocket's JSON as above, or its CSV export (``title,url,time_added,tags``);
* ``jsonl``: one JSON object per line (``url``, ``title``, ``tags``, ``timestamp``).

Every parser returns :class:`Seed` records: the URL (not yet validated) and the title, tags
and bookmark date the source gave, which the snapshot keeps.
"""

from __future__ import annotations

import calendar
import csv
import datetime as dt
import email.utils
import io
import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

URL_IN_TEXT = re.compile(r"""https?://[^\s<>"'`{}|\\^]+""", re.IGNORECASE)
TRAILING = ".,;:!?)]}'\""
PARSERS = ("auto", "txt", "html", "netscape", "rss", "json", "pocket", "jsonl")


class InputError(ValueError):
    """The input could not be read as a list of URLs; the message says why, in one line."""


@dataclass(frozen=True)
class Seed:
    """One URL to archive and what its source said about it."""

    url: str
    title: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)
    bookmarked_at: dt.datetime | None = None

    @property
    def has_metadata(self) -> bool:
        return bool(self.title or self.tags or self.bookmarked_at)

    def to_line(self) -> str:
        """How the seed is kept in ``Crawl.urls``: the bare URL, or a JSON line when it has metadata."""
        if not self.has_metadata:
            return self.url
        record = {"url": self.url, "title": self.title, "tags": list(self.tags),
                  "timestamp": self.bookmarked_at.isoformat() if self.bookmarked_at else None}
        return json.dumps({k: v for k, v in record.items() if v}, ensure_ascii=False)

    @classmethod
    def from_line(cls, line: str) -> "Seed | None":
        """The seed of one ``Crawl.urls`` line (None for a blank or comment line)."""
        line = line.strip()
        if not line or line.startswith("#"):
            return None
        if line.startswith("{"):
            try:
                return from_record(json.loads(line))
            except (ValueError, InputError):
                return None
        return cls(line)


def better_title(found: str, url: str) -> bool:
    """Whether a title a hook found should replace the one the snapshot has (say, from an
    import): a real title does; a blank one, or the URL itself, does not."""
    found = (found or "").strip()
    return bool(found) and found.rstrip("/") not in (url.rstrip("/"), url.split("://", 1)[-1].rstrip("/"))


def parse(text: str, parser: str = "auto") -> list[Seed]:
    """The seeds in ``text`` (not yet validated), in order, duplicates kept."""
    if parser not in PARSERS:
        raise InputError(f"unknown parser {parser!r} (one of {', '.join(PARSERS)})")
    kind = detect(text) if parser == "auto" else parser
    return {"txt": txt_seeds, "html": html_seeds, "netscape": netscape_seeds, "rss": feed_seeds,
            "json": json_seeds, "pocket": pocket_seeds, "jsonl": jsonl_seeds}[kind](text)


def candidates(text: str) -> list[str]:
    """The URL candidates in ``text``, any format."""
    return [seed.url for seed in parse(text)]


def detect(text: str) -> str:
    head = text.lstrip()[:512].lower()
    if "netscape-bookmark-file" in head:
        return "netscape"
    if head.startswith(("<?xml", "<rss", "<feed", "<rdf")):
        return "rss"
    if head.startswith(("<!doctype html", "<html")):
        return "html"
    if head.startswith("["):
        return "json"
    if head.startswith("{"):
        first = text.lstrip().splitlines()[0]
        try:
            json.loads(first)
            return "jsonl" if '"list"' not in first[:50] else "json"
        except ValueError:
            return "json"
    if head.startswith("title,url,time_added"):
        return "pocket"
    return "txt"


# Dates and tags ------------------------------------------------------------------------

def parse_date(value) -> dt.datetime | None:
    """A bookmark date from a Unix timestamp (s, ms or µs), ISO 8601 or RFC 822; None if absent or unreadable."""
    if value in (None, ""):
        return None
    if isinstance(value, (int, float)) or (isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)?", value.strip())):
        number = float(value)
        while number > 1e11:  # milliseconds or microseconds
            number /= 1000
        return dt.datetime.fromtimestamp(number, tz=dt.timezone.utc)
    text = str(value).strip()
    try:
        parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.timezone.utc)


def split_tags(value, separators: str = ",") -> tuple[str, ...]:
    """Tags from a list or a string split on ``separators``; blanks dropped, order kept, no duplicates."""
    if isinstance(value, dict):
        value = list(value)
    if isinstance(value, str):
        value = re.split("[" + re.escape(separators) + "]", value)
    return tuple(dict.fromkeys(str(tag).strip() for tag in value or () if str(tag).strip()))


def from_record(record) -> Seed:
    """A seed from a ``{url, title, tags, timestamp}`` object (``href``/``description``/``time`` too, as Pinboard)."""
    if not isinstance(record, dict):
        raise InputError(f"expected a JSON object per bookmark, got {type(record).__name__}")
    url = record.get("url") or record.get("href") or record.get("resolved_url") or record.get("given_url") or ""
    title = record.get("title") or record.get("description") or record.get("resolved_title") or record.get("given_title") or ""
    tags = record.get("tags") or record.get("tags_str") or ""
    separators = " " if "href" in record and isinstance(tags, str) and "," not in tags else ","
    when = next((record[k] for k in ("timestamp", "bookmarked_at", "time", "time_added", "created_at") if record.get(k)), None)
    return Seed(str(url).strip(), str(title).strip(), split_tags(tags, separators), parse_date(when))


# Formats -----------------------------------------------------------------------------

def urls_in_prose(line: str) -> list[str]:
    return [match.rstrip(TRAILING) for match in URL_IN_TEXT.findall(line)]


def txt_seeds(text: str) -> list[Seed]:
    found: list[Seed] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        found.extend(Seed(url) for url in ([line] if len(line.split()) == 1 else urls_in_prose(line)))
    return found


def jsonl_seeds(text: str) -> list[Seed]:
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            found.append(from_record(json.loads(line)))
        except ValueError as err:
            raise InputError(f"line {number} is not JSON: {err}") from None
    return found


def json_seeds(text: str) -> list[Seed]:
    try:
        data = json.loads(text)
    except ValueError as err:
        raise InputError(f"not valid JSON: {err}") from None
    if isinstance(data, dict) and isinstance(data.get("list"), dict):
        return _pocket_items(data["list"].values())
    if isinstance(data, dict):
        data = data.get("bookmarks") or data.get("items") or [data]
    if not isinstance(data, list):
        raise InputError("expected a JSON list of bookmarks")
    if any(isinstance(item, dict) and ("given_url" in item or "resolved_url" in item) for item in data):
        return _pocket_items(data)
    return [from_record(item) for item in data]


def _pocket_items(items) -> list[Seed]:
    return [Seed(str(item.get("resolved_url") or item.get("given_url") or "").strip(),
                 str(item.get("resolved_title") or item.get("given_title") or "").strip(),
                 split_tags(item.get("tags") or ""), parse_date(item.get("time_added")))
            for item in items if isinstance(item, dict)]


def pocket_seeds(text: str) -> list[Seed]:
    if text.lstrip().startswith(("{", "[")):
        return json_seeds(text)
    rows = csv.DictReader(io.StringIO(text))
    if not rows.fieldnames or "url" not in rows.fieldnames:
        raise InputError("not a Pocket export: expected JSON or a CSV with a 'url' column")
    return [Seed(row["url"].strip(), (row.get("title") or "").strip(), split_tags(row.get("tags") or "", "|,"),
                 parse_date(row.get("time_added"))) for row in rows if (row.get("url") or "").strip()]


def feed_seeds(text: str) -> list[Seed]:
    """The entries of an RSS 0.9x/1.0/2.0 or Atom feed, read by feedparser once defusedxml has
    parsed the document: entity declarations (entity-expansion bombs), references to external
    entities and malformed XML are refused before feedparser sees it."""
    # Imported here: feedparser takes about 80 ms to import, which every other command would pay.
    import defusedxml.ElementTree  # noqa: PLC0415
    import feedparser  # noqa: PLC0415

    try:
        root = defusedxml.ElementTree.fromstring(text.strip())
    except defusedxml.EntitiesForbidden:
        raise InputError("refusing a feed that declares entities (DOCTYPE with an internal subset)") from None
    except defusedxml.DefusedXmlException as err:
        raise InputError(f"refusing a feed that references an external entity or DTD: {err}") from None
    except defusedxml.ElementTree.ParseError as err:
        raise InputError(f"not a valid feed: {err}") from None
    kind = root.tag.rsplit("}", 1)[-1].lower()
    if kind not in ("rss", "feed", "rdf"):
        raise InputError(f"not a valid feed: its root element is <{kind}>, not <rss>, <feed> or <rdf:RDF>")
    # The text was decoded already: feedparser reads it as UTF-8 whatever its XML declaration says.
    feed = feedparser.parse(io.BytesIO(text.strip().encode("utf-8")), sanitize_html=False, resolve_relative_uris=False,
                            response_headers={"content-type": "application/xml; charset=utf-8"})
    atom = feed.get("version", "").startswith("atom")
    return [seed for seed in (_feed_entry(entry, atom) for entry in feed.entries) if seed.url]


def _feed_entry(entry, atom: bool) -> Seed:
    """An entry's seed: its first ``alternate`` link (an RSS ``<link>`` is one), else, in RSS,
    its ``guid`` when that is a permalink URL; its title, first date and categories."""
    url = next((link["href"] for link in entry.get("links", []) if link.get("rel") == "alternate" and link.get("href")), "")
    guid = entry.get("id", "")
    if not url and not atom and entry.get("guidislink") and guid.startswith(("http://", "https://")):
        url = guid
    when = parse_date(entry.get("published") or entry.get("updated"))
    parsed = entry.get("published_parsed") or entry.get("updated_parsed")
    if when is None and parsed:  # a date feedparser could read and we could not (RFC 822 variants)
        when = dt.datetime.fromtimestamp(calendar.timegm(parsed), tz=dt.timezone.utc)
    tags = [tag.get("term") or tag.get("label") or "" for tag in entry.get("tags", [])]
    return Seed(url.strip(), (entry.get("title") or "").strip(), split_tags(tags), when)


class _Links(HTMLParser):
    """Anchors with their attributes and text (Netscape bookmark files are HTML too)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.anchors: list[tuple[dict, list[str]]] = []
        self._open: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._open = []
            self.anchors.append(({k.lower(): v or "" for k, v in attrs}, self._open))

    def handle_endtag(self, tag):
        if tag == "a":
            self._open = None

    def handle_data(self, data):
        if self._open is not None:
            self._open.append(data)


def _anchors(text: str) -> list[tuple[dict, str]]:
    parser = _Links()
    parser.feed(text)
    parser.close()
    return [(attrs, " ".join("".join(parts).split())) for attrs, parts in parser.anchors]


def html_seeds(text: str) -> list[Seed]:
    return [Seed(attrs["href"].strip()) for attrs, _ in _anchors(text)
            if attrs.get("href", "").lower().startswith(("http://", "https://"))]


def netscape_seeds(text: str) -> list[Seed]:
    return [Seed(attrs["href"].strip(), title, split_tags(attrs.get("tags", "")), parse_date(attrs.get("add_date")))
            for attrs, title in _anchors(text) if attrs.get("href", "").lower().startswith(("http://", "https://"))]
