"""Search the text of archived pages (the index the built-in `search` plugin keeps).

Words are matched literally by default; --raw takes SQLite FTS5 query syntax
(AND/OR/NOT, "phrases", prefix*).
"""

from __future__ import annotations

import json

from django.conf import settings

from archivebox import fulltext
from archivebox.cli import CommandError
from archivebox.cli.common import setup_django
from archivebox.core.urlcheck import mask_urls


def register(parser) -> None:
    parser.add_argument("query", nargs="+", help="words to find")
    parser.add_argument("--raw", action="store_true", help="the query is FTS5 syntax")
    parser.add_argument("--limit", type=int, default=20, help="at most this many results (default 20)")
    parser.add_argument("--json", action="store_true", help="one JSON object per result")


def run(args) -> int:
    if args.limit < 1:
        raise CommandError(f"--limit must be at least 1, got {args.limit}", code=2)
    setup_django()
    text = " ".join(args.query)
    query = text if args.raw else fulltext.literal_query(text)
    try:
        found = fulltext.search(str(fulltext.database(settings.DATA_DIR)), query, limit=args.limit)
    except ValueError as err:
        raise CommandError(str(err), code=2) from None
    for row in found:
        row["url"] = mask_urls(row["url"])
        if args.json:
            print(json.dumps(row, ensure_ascii=False))
        else:
            print(f"{row['url']}  {row['title']}\n    {row['snippet']}")
    if not found and not args.json:
        print(f"No archived page matches {text!r}.")
    return 0
