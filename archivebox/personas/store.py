"""A persona's cookies file on disk, and the crawl config a persona stands for.

``cookies.txt`` is written atomically with mode 0600 inside a 0700 folder, after it is
checked to be a Netscape cookies file (the format of wget's ``--load-cookies``, curl's
``-b`` and browser cookie exporters). Error messages name a line number, never a value.
A crawl started with a persona gets ``PERSONA``, ``COOKIES_FILE`` (the path) and
``USER_AGENT`` as crawl config, which hooks read as ``<PLUGIN>_COOKIES_FILE`` /
``<PLUGIN>_USER_AGENT`` with those keys as fallbacks (as in ArchiveBox).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

from django.conf import settings

from archivebox.personas.models import Persona

logger = logging.getLogger(__name__)

COOKIES_NAME = "cookies.txt"
MAX_COOKIES_BYTES = 1024 * 1024
HEADER = "# Netscape HTTP Cookie File\n"


class InvalidCookies(ValueError):
    """Not a Netscape cookies.txt (the message names a line, never a value)."""


def personas_dir() -> Path:
    return settings.DATA_DIR / "personas"


def folder(persona: Persona) -> Path:
    return personas_dir() / persona.name


def cookies_path(persona: Persona) -> Path:
    return folder(persona) / COOKIES_NAME


def parse_cookies(text: str) -> int:
    """The number of cookies in a Netscape cookies.txt; :class:`InvalidCookies` if it is not one."""
    if len(text.encode("utf-8", "surrogateescape")) > MAX_COOKIES_BYTES:
        raise InvalidCookies(f"cookies file is larger than {MAX_COOKIES_BYTES} bytes")
    count = 0
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or (stripped.startswith("#") and not stripped.startswith("#HttpOnly_")):
            continue
        fields = line.rstrip("\r\n").split("\t")
        if len(fields) != 7:
            raise InvalidCookies(f"line {number}: expected 7 tab-separated fields (domain, subdomains, path, "
                                 f"secure, expiry, name, value), found {len(fields)}")
        domain, subdomains, _path, secure, expiry, name, _value = fields
        if not domain or not name:
            raise InvalidCookies(f"line {number}: empty domain or cookie name")
        if subdomains.upper() not in ("TRUE", "FALSE") or secure.upper() not in ("TRUE", "FALSE"):
            raise InvalidCookies(f"line {number}: the 2nd and 4th fields must be TRUE or FALSE")
        if not expiry.lstrip("-").isdigit():
            raise InvalidCookies(f"line {number}: the expiry (5th field) must be a number")
        count += 1
    if not count:
        raise InvalidCookies("no cookies found (expected a Netscape cookies.txt)")
    return count


def save_cookies(persona: Persona, text: str) -> int:
    """Check and store the persona's cookies (0600); returns how many cookies it holds."""
    count = parse_cookies(text)
    target = folder(persona)
    personas_dir().mkdir(mode=0o700, exist_ok=True)
    target.mkdir(mode=0o700, exist_ok=True)
    os.chmod(target, 0o700)
    body = text if text.lstrip().startswith("#") else HEADER + text
    fd, tmp = tempfile.mkstemp(dir=target, prefix=".cookies-", suffix=".tmp")  # mkstemp creates it 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as stream:
            stream.write(body if body.endswith("\n") else body + "\n")
        os.replace(tmp, target / COOKIES_NAME)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    logger.info("persona %s: cookies file saved (%d cookies)", persona.name, count)
    return count


def cookies_count(persona: Persona) -> int | None:
    """How many cookies the persona's file holds; None if it has none."""
    path = cookies_path(persona)
    try:
        return parse_cookies(path.read_text(encoding="utf-8", errors="surrogateescape"))
    except FileNotFoundError:
        return None
    except InvalidCookies as err:
        logger.warning("persona %s: %s", persona.name, err)
        return 0


def remove_files(persona: Persona) -> None:
    if folder(persona).exists():
        shutil.rmtree(folder(persona))


def crawl_config(persona: Persona) -> dict[str, str]:
    """What a crawl with this persona sets: its name, its cookies file's path, its user agent."""
    config = {"PERSONA": persona.name}
    if cookies_path(persona).is_file():
        config["COOKIES_FILE"] = str(cookies_path(persona))
    if persona.user_agent:
        config["USER_AGENT"] = persona.user_agent
    return config
