"""Helpers of the web tests: collections with an admin user, a real `archivebox server`, an HTTP client.

Servers are real subprocesses on 127.0.0.1 with a port the OS picks (``127.0.0.1:0``;
the server prints the port it got), polled with deadlines and stopped by PID.
"""

from __future__ import annotations

import html.parser
import http.client
import http.cookiejar
import json
import os
import re
import signal
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from helpers import FIXTURE_PLUGINS, VENV_BIN, Collection, wait_until

WEB_PLUGINS = Path(__file__).resolve().parent / "plugins"
PASSWORD = "correct horse battery staple"
ANNOUNCE = re.compile(r"Serving (http://127\.0\.0\.1:\d+)/")

def web_collection(root: Path, plugins: str = "noop,titler,pagesaver", extra_env: dict | None = None) -> Collection:
    """An initialized collection with the test plugins and a superuser ``admin``."""
    env = {"PLUGIN_DIRS": f"{FIXTURE_PLUGINS}{os.pathsep}{WEB_PLUGINS}", "LOG_LEVEL": "WARNING", **(extra_env or {})}
    collection = Collection(root, plugins=plugins, extra_env=env).init()
    collection.cli("manage", "createsuperuser", "--noinput", "--username", "admin", "--email", "admin@example.com",
                   env={"DJANGO_SUPERUSER_PASSWORD": PASSWORD})
    return collection


class Server:
    """``archivebox server 127.0.0.1:0 [args]`` in its own session, with its output in a log file."""

    def __init__(self, collection: Collection, *args: str, env: dict | None = None):
        self.collection = collection
        self.log = collection.root / f"server-{os.getpid()}-{len(collection.logs)}.log"
        collection.logs.append(self.log)
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen([str(VENV_BIN / "archivebox"), "server", "127.0.0.1:0", *args], cwd=collection.root,
                                         env={**collection.env, **(env or {})}, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        self.url = wait_until(self._announced, timeout=60, message="the server to announce its address")
        host, port = urllib.parse.urlsplit(self.url).netloc.split(":")
        self.host, self.port = host, int(port)

    def _announced(self) -> str | None:
        text = self.log.read_text(errors="replace")
        match = ANNOUNCE.search(text)
        if match:
            return match.group(1)
        if self.proc.poll() is not None:
            raise AssertionError(f"server exited with {self.proc.returncode} before serving:\n{text}")
        return None

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def health(self) -> tuple[int, dict]:
        try:
            with urllib.request.urlopen(self.url + "/health/", timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    def wait_healthy(self, timeout: float = 60) -> dict:
        return wait_until(lambda: self.health()[0] == 200 and self.health()[1], timeout=timeout, interval=0.1,
                          message="the server's /health/ to return 200")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                raise AssertionError(f"server did not stop within {timeout}s of signal {sig}:\n{self.output()}") from None
        return self.proc.returncode


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    @property
    def location(self) -> str:
        return self.headers.get("location", "")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class Client:
    """A cookie-keeping HTTP client that does not follow redirects, so tests see them."""

    def __init__(self, base_url: str):
        self.base_url = base_url
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), _NoRedirect())

    def _send(self, request: urllib.request.Request) -> Response:
        try:
            with self.opener.open(request, timeout=30) as response:
                return Response(response.status, {k.lower(): v for k, v in response.headers.items()}, response.read())
        except urllib.error.HTTPError as err:
            return Response(err.code, {k.lower(): v for k, v in err.headers.items()}, err.read())

    def get(self, path: str) -> Response:
        return self._send(urllib.request.Request(self.base_url + path))

    def follow(self, path: str, limit: int = 5) -> Response:
        """GET, following redirects within this site."""
        response = self.get(path)
        while response.status in (301, 302) and limit > 0:
            location = response.location
            response = self.get(location[len(self.base_url):] if location.startswith(self.base_url) else location)
            limit -= 1
        return response

    def cookie(self, name: str) -> str:
        return next((c.value for c in self.jar if c.name == name), "")

    def post(self, path: str, data: dict | list) -> Response:
        pairs = list(data.items()) if isinstance(data, dict) else list(data)
        if not any(name == "csrfmiddlewaretoken" for name, _ in pairs):
            pairs.append(("csrfmiddlewaretoken", self.cookie("csrftoken")))
        body = urllib.parse.urlencode(pairs).encode()
        return self._send(urllib.request.Request(self.base_url + path, data=body, method="POST",
                                                 headers={"Content-Type": "application/x-www-form-urlencoded"}))

    def login(self, username: str = "admin", password: str = PASSWORD) -> None:
        self.get("/admin/login/")
        response = self.post("/admin/login/", {"username": username, "password": password, "next": "/admin/"})
        assert response.status == 302 and response.location == "/admin/", (response.status, response.text[:500])

    def raw_get(self, raw_path: str) -> Response:
        """GET ``raw_path`` exactly as given (no normalisation of ``..`` or escapes)."""
        host, port = urllib.parse.urlsplit(self.base_url).netloc.split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        try:
            cookies = "; ".join(f"{c.name}={c.value}" for c in self.jar)
            connection.putrequest("GET", raw_path, skip_accept_encoding=True)
            connection.putheader("Cookie", cookies)
            connection.endheaders()
            response = connection.getresponse()
            return Response(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
        finally:
            connection.close()


class _FormParser(html.parser.HTMLParser):
    """The fields a browser would submit from the first ``<form>`` matching ``form_id``."""

    def __init__(self, form_id: str):
        super().__init__(convert_charrefs=True)
        self.form_id = form_id
        self.inside = False
        self.fields: list[tuple[str, str]] = []
        self._select: str | None = None
        self._textarea: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form" and attrs.get("id") == self.form_id:
            self.inside = True
        if not self.inside:
            return
        name = attrs.get("name")
        if tag == "input" and name and attrs.get("type", "text") not in ("submit", "button", "image", "file"):
            if attrs.get("type") in ("checkbox", "radio") and "checked" not in attrs:
                return
            self.fields.append((name, attrs.get("value", "on" if attrs.get("type") in ("checkbox", "radio") else "")))
        elif tag == "select" and name:
            self._select = name
        elif tag == "option" and self._select and "selected" in attrs:
            self.fields.append((self._select, attrs.get("value", "")))
        elif tag == "textarea" and name:
            self._textarea, self._text = name, []

    def handle_data(self, data):
        if self._textarea:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "form" and self.inside:
            self.inside = False
        elif tag == "select":
            self._select = None
        elif tag == "textarea" and self._textarea:
            self.fields.append((self._textarea, "".join(self._text).lstrip("\n")))
            self._textarea = None


def form_fields(page: str, form_id: str) -> list[tuple[str, str]]:
    parser = _FormParser(form_id)
    parser.feed(page)
    return parser.fields
