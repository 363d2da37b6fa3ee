"""Reading URLs from what users give ``archivebox add``: lists, prose, feeds, HTML pages.

* a line holding one token is taken as one URL (and reported if it is not a valid one);
* a line of prose contributes every http(s) URL found in it;
* an RSS or Atom document contributes its entries' links;
* an HTML document contributes every absolute http(s) link.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from html.parser import HTMLParser

URL_IN_TEXT = re.compile(r"""https?://[^\s<>"'`{}|\\^]+""", re.IGNORECASE)
TRAILING = ".,;:!?)]}'\""
FEED_ROOTS = ("rss", "feed", "rdf")


class InputError(ValueError):
    """The input could not be read as a list of URLs; the message says why, in one line."""


def urls_in_prose(line: str) -> list[str]:
    return [match.rstrip(TRAILING) for match in URL_IN_TEXT.findall(line)]


def candidates(text: str) -> list[str]:
    """The URL candidates in ``text`` (not yet validated), in order, duplicates kept."""
    head = text.lstrip()[:512].lower()
    if head.startswith(("<?xml", "<rss", "<feed", "<rdf")):
        return feed_links(text)
    if head.startswith(("<!doctype html", "<html")):
        return html_links(text)
    found: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        found.extend([line] if len(line.split()) == 1 else urls_in_prose(line))
    return found


def feed_links(text: str) -> list[str]:
    """The entry links of an RSS 2.0, RSS 1.0 or Atom feed. Entity declarations are refused."""
    if re.search(r"<!ENTITY|<!DOCTYPE[^>]*\[", text, re.IGNORECASE):
        raise InputError("refusing a feed that declares entities (DOCTYPE with an internal subset)")
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as err:
        raise InputError(f"not a valid feed: {err}") from None
    links: list[str] = []
    for element in root.iter():
        tag = element.tag.rsplit("}", 1)[-1].lower()
        if tag == "link":
            href = element.get("href")
            rel = (element.get("rel") or "alternate").lower()
            if href and rel == "alternate":
                links.append(href.strip())
            elif not href and element.text and element.text.strip():
                links.append(element.text.strip())
    channel_links = {link for link in _channel_links(root)}
    return [link for link in links if link not in channel_links]


def _channel_links(root) -> list[str]:
    """The feed's own site link (RSS <channel><link>), which is not an entry."""
    links = []
    for channel in root.iter():
        if channel.tag.rsplit("}", 1)[-1].lower() == "channel":
            for child in channel:
                if child.tag.rsplit("}", 1)[-1].lower() == "link" and child.text:
                    links.append(child.text.strip())
    return links


class _Links(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            href = dict(attrs).get("href") or ""
            if href.lower().startswith(("http://", "https://")):
                self.links.append(href.strip())


def html_links(text: str) -> list[str]:
    parser = _Links()
    parser.feed(text)
    return parser.links
