"""Chaos ledger hook (foreground, step 2): fetches its page from the local site (plain
socket, HTTP/1.0), records its run in the ledger (see ledger.py) and reports the status line."""
import os
import socket
import sys
from urllib.parse import urlsplit

LEDGER = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "ledger.py")
exec(compile(open(LEDGER).read(), LEDGER, "exec"))  # noqa: S102 - the shared body beside this file


def fetch(url: str) -> str:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname, parts.port or 80), timeout=5) as conn:
            conn.sendall(f"GET {parts.path or '/'} HTTP/1.0\r\nHost: {parts.netloc}\r\n\r\n".encode())
            status = conn.makefile("rb").readline().decode(errors="replace").strip()
    except OSError as err:
        status = f"fetch failed: {err}"
    return status


run(fetch)  # noqa: F821 - defined by ledger.py
