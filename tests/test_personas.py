"""Personas through the CLI: cookies and a user agent that reach wget, and secrets that stay in their file.

A local server serves a page only to a request carrying the persona's session cookie; the
test archives it with `archivebox add --persona`, then searches every file of the data
folder (database, logs, hook outputs, queues) for the cookie's value.
"""

from __future__ import annotations

import http.server
import json
import os
import stat
import threading

import pytest

from helpers import Collection

SECRET = "s3ss10n-9f8e7d6c5b4a-DO-NOT-LEAK"
AGENT = "AliceBrowser/1.0 (persona test)"


class MembersOnly(http.server.BaseHTTPRequestHandler):
    agents: list[str] = []

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        MembersOnly.agents.append(self.headers.get("User-Agent", ""))
        if f"session={SECRET}" not in self.headers.get("Cookie", ""):
            body, code = b"<html><body>login required</body></html>", 403
        else:
            body, code = b"<html><head><title>Members</title></head><body><p id=m>members only page</p></body></html>", 200
        self.send_response(code)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def members_site():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), MembersOnly)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    MembersOnly.agents = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def cookies_txt(host: str = "127.0.0.1") -> str:
    return f"# Netscape HTTP Cookie File\n{host}\tFALSE\t/\tFALSE\t0\tsession\t{SECRET}\n"


def files_containing(root, needle: bytes, skip) -> list[str]:
    found = []
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            if path == str(skip) or not os.path.isfile(path):
                continue
            with open(path, "rb") as stream:
                if needle in stream.read():
                    found.append(os.path.relpath(path, root))
    return found


def test_a_persona_logs_wget_in_and_its_cookies_stay_secret(tmp_path, members_site):
    collection = Collection(tmp_path / "data", plugins="wget").init()
    cookie_file = tmp_path / "cookies.txt"
    cookie_file.write_text(cookies_txt())

    created = collection.cli("persona", "create", "alice", "--cookies", str(cookie_file), "--user-agent", AGENT)
    assert "Created persona alice: 1 cookie(s)" in created.stdout and SECRET not in created.stdout + created.stderr
    stored = collection.root / "personas" / "alice" / "cookies.txt"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert stat.S_IMODE(stored.parent.stat().st_mode) == 0o700
    [listed] = json.loads(collection.cli("persona", "list", "--json").stdout)
    assert listed["name"] == "alice" and listed["cookies"] == 1 and listed["user_agent"] == AGENT
    assert SECRET not in collection.cli("persona", "list").stdout

    # Without the persona the page is refused; with it, wget gets the members' page.
    url = f"{members_site}/private.html"
    collection.cli("add", "--tag", "anonymous", url, check=False, timeout=120)
    added = collection.cli("add", "--persona", "alice", url.replace("private", "private2"), timeout=120)
    assert SECRET not in added.stdout + added.stderr
    snapshots = {s["url"]: s for s in collection.list_json()}
    anonymous, logged_in = snapshots[url], snapshots[url.replace("private", "private2")]
    wget_dir = collection.root / logged_in["output_dir"] / "wget"
    saved = [p for p in wget_dir.rglob("*.html") if "members only page" in p.read_text(errors="replace")]
    assert saved, f"wget did not save the members' page: {sorted(wget_dir.rglob('*'))}"
    assert not list((collection.root / anonymous["output_dir"] / "wget").rglob("*.html")), "the refused page was saved"
    assert AGENT in MembersOnly.agents

    crawl_config = json.loads(collection.scalar(
        "SELECT c.config FROM core_crawl c JOIN core_snapshot s ON s.crawl_id = c.id WHERE s.id = ?",
        (logged_in["id"].replace("-", ""),)) or "{}")
    assert crawl_config == {"PERSONA": "alice", "COOKIES_FILE": str(stored), "USER_AGENT": AGENT}
    # wget was handed the file's path (the hook logs its command line to its stderr log).
    assert files_containing(collection.root, f"--load-cookies={stored}".encode(), skip=stored)

    # The cookie's value is nowhere but its own file: not in the database, logs, outputs or queues.
    assert files_containing(collection.root, SECRET.encode(), skip=stored) == []

    # Bad input: one line naming the problem, no value echoed; nothing stored changes.
    bad = tmp_path / "bad.txt"
    bad.write_text(f"127.0.0.1 session {SECRET}\n")
    refused = collection.cli("persona", "update", "alice", "--cookies", str(bad), check=False)
    assert refused.returncode == 2 and "line 1: expected 7 tab-separated fields" in refused.stderr
    assert SECRET not in refused.stderr and stored.read_text() == cookies_txt()
    unknown = collection.cli("add", "--persona", "bob", url, check=False)
    assert unknown.returncode == 2 and "no persona named 'bob'" in unknown.stderr
    duplicate = collection.cli("persona", "create", "alice", check=False)
    assert duplicate.returncode != 0 and "already exists" in duplicate.stderr

    removed = collection.cli("persona", "remove", "alice", "--yes")
    assert "Removed persona alice" in removed.stdout and not stored.parent.exists()
    assert json.loads(collection.cli("persona", "list", "--json").stdout) == []
