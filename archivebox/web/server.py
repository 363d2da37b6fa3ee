"""The HTTP side of ``archivebox server``: Django's WSGI app on waitress, in a background thread.

waitress is a pure-Python, multi-threaded production WSGI server, so the embedded worker
pools (which need the main thread for their signal handlers) and the web UI share one
process with no extra system dependency.
"""

from __future__ import annotations

import logging
import re
import socket
import threading

import psutil
from django.conf import settings

from django.core.wsgi import get_wsgi_application
from waitress import wasyncore
from waitress.server import create_server

logger = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
_BIND = re.compile(r"^(?:(?P<host>\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):)?(?P<port>\d{1,5})$")


class BadAddress(ValueError):
    """``ADDR:PORT`` could not be understood."""


def parse_bind(value: str | None) -> tuple[str, int]:
    """``"8000"``, ``"0.0.0.0:8000"``, ``"[::1]:8000"`` or ``"localhost"`` -> ``(host, port)``."""
    if not value:
        return DEFAULT_HOST, DEFAULT_PORT
    match = _BIND.match(value.strip())
    if match is None:
        if re.fullmatch(r"[A-Za-z0-9_.-]+|\[[0-9a-fA-F:.]+\]", value.strip()):
            return value.strip().strip("[]"), DEFAULT_PORT
        raise BadAddress(f"expected [ADDR:]PORT such as 127.0.0.1:8000, got {value!r}")
    port = int(match["port"])
    if not 0 <= port <= 65535:
        raise BadAddress(f"port must be between 0 and 65535, got {port}")
    return (match["host"] or DEFAULT_HOST).strip("[]"), port


WILDCARDS = ("0.0.0.0", "::", "")


def allowed_hosts(bound_host: str) -> list[str]:
    """The host names a server bound to ``bound_host`` answers to when ALLOWED_HOSTS is not
    set: localhost, and the bound address; on a wildcard bind, this machine's names and
    addresses (what a browser on the network would put in the Host header)."""
    hosts = ["localhost", "127.0.0.1", "[::1]"]
    if bound_host in WILDCARDS:
        names = {socket.gethostname(), socket.getfqdn()}
        names |= {addr.address.split("%")[0] for addrs in psutil.net_if_addrs().values() for addr in addrs
                  if addr.family in (socket.AF_INET, socket.AF_INET6)}
        candidates = sorted(names)
    else:
        candidates = [bound_host]
    for host in candidates:
        host = f"[{host}]" if ":" in host else host
        if host and host not in hosts:
            hosts.append(host)
    return hosts


class WebServer:
    """Binds at construction (so a busy port fails at once), serves after :meth:`start`."""

    def __init__(self, host: str, port: int, threads: int = 8):
        # The socket map is ours (``create_server``'s ``map`` argument), so stopping can close
        # every listening and client socket without reaching into the server.
        self.sockets: dict = {}
        proxy = {"trusted_proxy": settings.TRUSTED_PROXY, "trusted_proxy_count": 1,
                 "trusted_proxy_headers": {"x-forwarded-proto", "x-forwarded-for"}} if settings.TRUSTED_PROXY else {}
        self.server = create_server(get_wsgi_application(), map=self.sockets, host=host, port=port, threads=threads,
                                    ident="archivebox", clear_untrusted_proxy_headers=True,
                                    max_request_body_size=settings.MAX_REQUEST_BODY_SIZE, **proxy)
        self._thread = threading.Thread(target=self.server.run, name="http", daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        return self.server.effective_host, self.server.effective_port

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, let running requests finish, close every connection."""
        if self._thread.is_alive():
            # Closing the sockets from the serving thread itself avoids racing its select().
            self.server.trigger.pull_trigger(lambda: wasyncore.close_all(self.sockets))
            self._thread.join(timeout)
        self.server.task_dispatcher.shutdown(timeout=timeout)
        if self._thread.is_alive():
            logger.warning("HTTP server thread did not stop within %.0fs", timeout)
