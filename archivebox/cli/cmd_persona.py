"""Manage personas: named cookies (a Netscape cookies.txt) and a user agent for logged-in sites.

  archivebox persona create NAME [--cookies FILE|-] [--user-agent UA]
  archivebox persona update NAME [--cookies FILE|-] [--user-agent UA]
  archivebox persona list [--json]
  archivebox persona remove NAME… [--yes]

Use one with `archivebox add --persona NAME URL…`. The cookies are stored in
personas/NAME/cookies.txt (mode 0600) and never printed; crawls, hooks and Process rows
only see that file's path.
"""

from __future__ import annotations

import json
import sys

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from archivebox.cli import CommandError
from archivebox.cli.common import setup_django
from archivebox.personas import store
from archivebox.personas.models import Persona


def register(parser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for action in ("create", "update"):
        one = sub.add_parser(action, help=f"{action} a persona")
        one.add_argument("name")
        one.add_argument("--cookies", metavar="FILE", help="a Netscape cookies.txt to use ('-' reads stdin)")
        one.add_argument("--user-agent", default=None, help="User-Agent sent by this persona's crawls ('' for the default)")
    listing = sub.add_parser("list", help="list personas")
    listing.add_argument("--json", action="store_true", help="print JSON")
    remove = sub.add_parser("remove", help="remove personas and their cookies")
    remove.add_argument("names", nargs="+", metavar="NAME")
    remove.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")


def read_cookies(source: str) -> str:
    try:
        if source == "-":
            return sys.stdin.read()
        with open(source, encoding="utf-8", errors="surrogateescape") as stream:
            return stream.read()
    except OSError as err:
        raise CommandError(f"cannot read cookies file {source}: {err.strerror}", code=2) from None


def run(args) -> int:
    setup_django()
    return {"create": save, "update": save, "list": show, "remove": remove}[args.action](args)


def save(args) -> int:
    cookies = read_cookies(args.cookies) if args.cookies else None
    if cookies is not None:
        try:
            store.parse_cookies(cookies)
        except store.InvalidCookies as err:
            raise CommandError(f"invalid cookies file: {err}", code=2) from None
    try:
        with transaction.atomic():
            if args.action == "create":
                persona = Persona(name=args.name, user_agent=args.user_agent or "")
                persona.full_clean()
                persona.save()
            else:
                persona = Persona.objects.select_for_update().filter(name=args.name).first()
                if persona is None:
                    raise CommandError(f"no persona named {args.name!r} (see `archivebox persona list`)")
                if args.user_agent is not None:
                    persona.user_agent = args.user_agent
                    persona.full_clean()
                    persona.save()
            count = store.save_cookies(persona, cookies) if cookies is not None else store.cookies_count(persona)
    except ValidationError as err:
        problems = "; ".join(f"{field}: {' '.join(msgs)}" for field, msgs in err.message_dict.items())
        raise CommandError(f"invalid persona: {problems}", code=2) from None
    except IntegrityError:
        raise CommandError(f"a persona named {args.name!r} already exists (use `archivebox persona update`)") from None
    verb = "Created" if args.action == "create" else "Updated"
    print(f"{verb} persona {persona.name}: {count or 0} cookie(s), user agent {persona.user_agent or '(default)'}")
    return 0


def show(args) -> int:
    rows = [{"name": p.name, "user_agent": p.user_agent, "cookies": store.cookies_count(p) or 0,
             "cookies_file": str(store.cookies_path(p)) if store.cookies_path(p).is_file() else None,
             "created_at": p.created_at.isoformat()} for p in Persona.objects.all()]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("No personas yet: `archivebox persona create NAME --cookies cookies.txt`.")
    for row in rows:
        print(f"{row['name']}\t{row['cookies']} cookie(s)\t{row['user_agent'] or '(default user agent)'}")
    return 0


def remove(args) -> int:
    personas = list(Persona.objects.filter(name__in=args.names))
    missing = sorted(set(args.names) - {p.name for p in personas})
    if missing:
        raise CommandError(f"no persona named {', '.join(missing)} (see `archivebox persona list`)")
    if not args.yes:
        if not sys.stdin.isatty():
            raise CommandError("refusing to remove without confirmation: pass --yes", code=2)
        answer = input(f"Remove {len(personas)} persona(s) and their cookies? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("Nothing removed.")
            return 1
    for persona in personas:
        store.remove_files(persona)
        persona.delete()
        print(f"Removed persona {persona.name}")
    return 0
