"""Signed links to a snapshot's archived files.

Archived pages are served sandboxed (an opaque origin), so the browser treats their own
requests (images, stylesheets, scripts of the saved page) as cross-site and sends no
session cookie with them. Their URLs therefore carry a capability instead:
``/archive/<snapshot id>/<expiry day>-<signature>/<path>``. Relative URLs inside a saved
page keep the prefix, so the page's own files load; the signature covers the snapshot id
and the expiry day, so a link opens that snapshot's files only, and only until it expires.
Links are handed out only to logged-in users (the snapshot page, or a redirect from the
unsigned URL, which needs a login).
"""

from __future__ import annotations

import time

from django.urls import reverse
from django.utils.crypto import constant_time_compare, salted_hmac

SALT = "archivebox.web.archive-link"
VALID_DAYS = 7
DAY = 86400


def today(now: float | None = None) -> int:
    return int((time.time() if now is None else now) // DAY)


def sign(snapshot_id, expires_day: int) -> str:
    return salted_hmac(SALT, f"{snapshot_id}:{expires_day}", algorithm="sha256").hexdigest()[:32]


def token_for(snapshot_id, now: float | None = None) -> str:
    """A token valid for at least VALID_DAYS - 1 days; the same all day, so URLs stay cacheable."""
    expires = today(now) + VALID_DAYS
    return f"{expires}-{sign(snapshot_id, expires)}"


def token_is_valid(snapshot_id, token: str, now: float | None = None) -> bool:
    day, sep, signature = token.partition("-")
    if not sep or not day.isdigit() or int(day) < today(now):
        return False
    return constant_time_compare(signature, sign(snapshot_id, int(day)))


# The one collection pywb replays (see archivebox/webarchive/pywb_app.py).
REPLAY_COLLECTION = "all"


def replay_prefix(snapshot_id, token: str) -> str:
    """``/snapshot/<id>/replay/<token>/``: the signed prefix of a snapshot's replay."""
    return f"{reverse('web:replay', args=[snapshot_id])}{token}/"


def replay_src(snapshot_id, target) -> str:
    """The signed URL of the replay of ``target`` (a URL at a time: ``lookup.Target``)."""
    return f"{replay_prefix(snapshot_id, token_for(snapshot_id))}{REPLAY_COLLECTION}/{target.path}"
