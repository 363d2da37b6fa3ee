"""Checking URLs given by users and by hooks, and hiding the credentials some carry.

A URL may carry a password (``https://user:password@host/``) or a token
(``https://token@host/``). The hooks get it as given (they need it to log in); everything
the engine shows or stores for people to read (Process rows, hook logs, index files,
``list``, the REST API, the admin, the web pages) shows it through :func:`mask_urls`.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

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


# The user-information part of a URL anywhere in a text: ``scheme://user:password@``.
URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<user>[^\s/@:]*)(?P<password>:[^\s/@]*)?@")
MASK = "***"


def mask_urls(value: str) -> str:
    """``https://me:pw@host/`` -> ``https://me:***@host/``; a bare token (``https://tok@host``) ->
    ``https://***@host``, wherever URLs appear in ``value``."""
    def mask(match: re.Match) -> str:
        if match["password"] is not None:
            return f"{match['scheme']}{match['user']}:{MASK}@"
        return f"{match['scheme']}{MASK}@"
    return URL_USERINFO.sub(mask, value) if "@" in value else value


def masked_json(value):
    """``value`` (JSON-shaped: dicts, lists, strings) with every URL in its strings masked."""
    if isinstance(value, str):
        return mask_urls(value)
    if isinstance(value, list):
        return [masked_json(item) for item in value]
    if isinstance(value, dict):
        return {key: masked_json(item) for key, item in value.items()}
    return value


def url_secrets(url: str) -> tuple[str, ...]:
    """The secrets a URL carries (its password, or a bare token), as written and decoded:
    what must not be left in a log that printed the URL."""
    if not url or "@" not in url:
        return ()
    found = set()
    for match in URL_USERINFO.finditer(url):
        secret = match["password"][1:] if match["password"] is not None else match["user"]
        if secret:
            found.update({secret, unquote(secret)})
    return tuple(sorted(found, key=len, reverse=True))
