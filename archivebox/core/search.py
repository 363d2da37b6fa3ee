"""The search box: ArchiveBox's search modes over snapshots, fast however many there are.

Modes (``query_type``, as ArchiveBox names them): ``all`` (URL, title, tags or the archived
text), ``fulltext`` (the archived text only; ``content`` is the same), ``url``, ``title`` and
``tags``. URL, title and tag names match as substrings, case-insensitively; the text matches
every word given (the full-text index the ``search`` plugin keeps).

How each part is found, so that no search scans a million rows to find three:

- URL and title: the backend's text index (migration 0014): an FTS5 trigram table on
  SQLite, GIN trigram indexes on Postgres. The index first says how many snapshots
  match: up to ``FEW`` they are taken by id (and sorted); more than that, the list is
  read newest first and filtered as it goes, which finds a page of a common word at
  once. Words of fewer than three letters have no trigram: they are matched that second
  way.
- Tags: the tags whose name matches, then their snapshots through the tags' index, by id
  or filtered as above by the same count.
- Text: the full-text index gives the ids of the newest ``TEXT_LIMIT`` matches.

:func:`search` returns the filtered queryset and what is known of its size without
counting it (:class:`Found`); :func:`snippets` gives the text around the words for a page.
"""

from __future__ import annotations

import html
import logging
from dataclasses import dataclass
from pathlib import Path

from django.db import connection
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils.safestring import SafeString, mark_safe

from archivebox.core.models import Snapshot, Tag
from archivebox import fulltext

logger = logging.getLogger(__name__)

MODES = ("all", "fulltext", "url", "title", "tags")
ALIASES = {"": "all", "content": "fulltext", "meta": "meta", "text": "fulltext", "tag": "tags"}
LABELS = {"all": "all", "fulltext": "content", "url": "URL", "title": "title", "tags": "tags"}
# Up to this many matches of one part are taken by id and sorted; more are filtered while
# reading the list in order (a common word fills a page within its first rows).
FEW = 2_000
# The full-text part: at most this many matches, the most recently indexed.
TEXT_LIMIT = 10_000
MIN_TRIGRAM = 3
Tagging = Snapshot.tags.through
# Snippet highlights: characters no page text holds, turned into <mark> after escaping.
OPEN, CLOSE = "\ue000", "\ue001"


class SearchError(ValueError):
    """A search that cannot run as given (an unknown mode); the message says why in one line."""


@dataclass
class Found:
    """A search's snapshots (unordered), and what is known of how many without counting:
    ``at_least`` when a part has more matches than are worth counting, ``truncated`` when
    the text part was cut at TEXT_LIMIT."""

    snapshots: QuerySet
    at_least: int = 0
    truncated: bool = False


@dataclass
class Part:
    """One way to match: ``q`` selects the snapshots, either by a short list of ids (the
    backend fetches them by id and sorts them) or by a condition no index answers (the
    backend reads the list in order and stops at a page), as the module's docstring says."""

    q: Q
    at_least: int = 0
    truncated: bool = False
    ids: list | None = None  # when ``q`` is a list of ids: the list

    @classmethod
    def of_ids(cls, ids: list, **kwargs) -> "Part":
        return cls(Q(pk__in=ids), ids=ids, **kwargs)


def mode_of(value: str | None) -> str:
    mode = (value or "").strip().lower()
    mode = ALIASES.get(mode, mode)
    if mode not in (*MODES, "meta"):
        raise SearchError(f"search mode must be one of {', '.join(MODES)}, got {value!r}")
    return mode


def search(snapshots: QuerySet, text: str, mode: str = "all", search_db: Path | None = None) -> Found:
    """``snapshots`` narrowed to those ``text`` finds in ``mode`` (see the module's docstring)."""
    mode = mode_of(mode)
    text = text.strip()
    if not text:
        return Found(snapshots)
    parts = []
    fields = {"all": ("url", "title"), "meta": ("url", "title"), "url": ("url",), "title": ("title",)}.get(mode)
    if fields:
        parts.append(_text_part(text, fields))
    if mode in ("all", "meta", "tags"):
        parts.append(_tags_part(Tag.objects.filter(name__icontains=text)))
    if mode in ("all", "fulltext") and search_db is not None:
        parts.append(_content_part(text, search_db))
    # The parts that are id lists as one list: an OR of several lists made SQLite read the
    # list newest first and test each row against them (0.4 s on a million snapshots),
    # where one list is fetched by id and sorted.
    listed = [part.ids for part in parts if part.ids is not None]
    query = Q(pk__in=list({str(pk).replace("-", ""): pk for ids in listed for pk in ids}.values())) if listed else Q()
    for part in parts:
        if part.ids is None:
            query |= part.q
    return Found(snapshots.filter(query), at_least=max((p.at_least for p in parts), default=0),
                 truncated=any(p.truncated for p in parts))


def with_tag(snapshots: QuerySet, name: str) -> Found:
    """The snapshots tagged ``name`` exactly (case-insensitively), as a tag chip links them."""
    part = _tags_part(Tag.objects.filter(name__iexact=name.strip()))
    return Found(snapshots.filter(part.q), at_least=part.at_least)


def _text_part(text: str, fields: tuple[str, ...]) -> Part:
    """URL and/or title containing ``text``: one query of the trigram index (its column
    filter covers both fields), at most FEW + 1 ids, which says whether there are few."""
    scan = Q()
    for field in fields:
        scan |= Q(**{f"{field}__icontains": text})
    if len(text) < MIN_TRIGRAM or not _has_text_index():
        return Part(scan)
    if connection.vendor == "postgresql":
        # The GIN trigram indexes answer the condition itself (a bitmap of its rows); taken
        # by id when few, it joins the other parts as one id list instead of an OR that
        # Postgres counted and sorted over all of them (0.5 s on a million snapshots).
        ids = list(Snapshot.objects.filter(scan).values_list("pk", flat=True)[:FEW + 1])
    else:
        match = f'{{{" ".join(fields)}}} : "{text.replace(chr(34), chr(34) * 2)}"'
        with connection.cursor() as cursor:
            cursor.execute("SELECT r.snapshot_id FROM core_snapshot_text t JOIN core_snapshot_textrow r ON r.rid = t.rowid "
                           "WHERE core_snapshot_text MATCH %s LIMIT %s", [match, FEW + 1])
            ids = [row[0] for row in cursor.fetchall()]
    if len(ids) > FEW:
        return Part(scan, at_least=FEW)
    return Part.of_ids(ids)


def _tags_part(tags: QuerySet) -> Part:
    tag_ids = list(tags.values_list("pk", flat=True)[:FEW])
    if not tag_ids:
        return Part.of_ids([])
    tagging = Tagging.objects.filter(tag_id__in=tag_ids)
    ids = list(tagging.values_list("snapshot_id", flat=True)[:FEW + 1])
    if len(ids) > FEW:
        return Part(Q(Exists(tagging.filter(snapshot_id=OuterRef("pk")))), at_least=FEW)
    return Part.of_ids(ids)


def _content_part(text: str, search_db: Path) -> Part:
    query = fulltext.literal_query(text)
    try:
        ids = fulltext.newest_matches(str(search_db), query, TEXT_LIMIT + 1) if query else []
    except ValueError as err:
        raise SearchError(str(err)) from None
    truncated = len(ids) > TEXT_LIMIT
    return Part.of_ids(ids[:TEXT_LIMIT], truncated=truncated, at_least=TEXT_LIMIT if truncated else 0)


def _has_text_index() -> bool:
    """Whether the backend has migration 0014's URL/title text index (not on an SQLite
    without the trigram tokenizer, nor on a Postgres role that could not add pg_trgm)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'snapshot_url_trgm'")
        elif connection.vendor == "sqlite":
            cursor.execute("SELECT 1 FROM sqlite_master WHERE name = 'core_snapshot_text'")
        else:
            return False
        return cursor.fetchone() is not None


def snippets(text: str, snapshot_ids, search_db: Path) -> dict[str, SafeString]:
    """``{snapshot id: snippet}``: the archived text around ``text``'s words, escaped, the
    words in ``<mark>``, for the snapshots (of one page) whose text has them."""
    query = fulltext.literal_query(text)
    if not query or not snapshot_ids:
        return {}
    try:
        found = fulltext.snippets(str(search_db), query, [str(pk) for pk in snapshot_ids], highlight=(OPEN, CLOSE))
    except ValueError as err:
        logger.info("no snippets for %r: %s", text, err)
        return {}
    return {sid: mark_safe(html.escape(snippet).replace(OPEN, "<mark>").replace(CLOSE, "</mark>"))  # noqa: S308 - escaped above
            for sid, snippet in found.items()}
