"""Checking URLs given by users and by hooks."""

from __future__ import annotations

from urllib.parse import urlsplit

SCHEMES = ("http", "https")
MAX_URL_LENGTH = 8192


class InvalidURL(ValueError):
    """Not an archivable URL; the message says why, in one line."""


def check_url(raw: str) -> str:
    """``raw`` stripped, if it is an absolute http(s) URL with a host; else InvalidURL."""
    url = raw.strip()
    if not url:
        raise InvalidURL("empty URL")
    if len(url) > MAX_URL_LENGTH:
        raise InvalidURL(f"URL longer than {MAX_URL_LENGTH} characters: {url[:60]}...")
    if any(ch.isspace() for ch in url) or any(ord(ch) < 32 for ch in url):
        raise InvalidURL(f"URL contains whitespace or control characters: {url!r}")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as err:
        raise InvalidURL(f"malformed URL {url!r}: {err}") from None
    if parts.scheme.lower() not in SCHEMES:
        raise InvalidURL(f"unsupported scheme in {url!r} (expected http:// or https://)")
    if not parts.hostname:
        raise InvalidURL(f"URL has no host: {url!r}")
    if port == 0:
        raise InvalidURL(f"URL has an invalid port: {url!r}")
    return url


def is_valid_url(raw: str) -> bool:
    try:
        check_url(raw)
    except InvalidURL:
        return False
    return True
