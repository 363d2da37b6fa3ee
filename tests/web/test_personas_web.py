"""Personas in the admin and on the add page, over real HTTP against `archivebox server`."""

from __future__ import annotations

import json
import re
import stat

from helpers import wait_until

from .webtools import Client, Server, form_fields, web_collection

SECRET = "admin-session-5e4d3c2b1a-SECRET"
COOKIES = f"# Netscape HTTP Cookie File\nexample.com\tTRUE\t/\tTRUE\t0\tsid\t{SECRET}\n"


def test_admin_stores_cookies_write_only_and_the_add_page_uses_the_persona(tmp_path):
    collection = web_collection(tmp_path / "data")
    server = Server(collection)
    try:
        server.wait_healthy()
        staff = Client(server.url)
        staff.login()
        add_form = staff.get("/admin/personas/persona/add/")
        assert add_form.status == 200
        base = [(k, v) for k, v in form_fields(add_form.text, "persona_form") if k not in ("name", "user_agent", "cookies_txt")]

        bad = staff.post("/admin/personas/persona/add/", base + [("name", "bob"), ("cookies_txt", f"sid {SECRET}")])
        assert bad.status == 200 and "expected 7 tab-separated fields" in bad.text
        assert not (collection.root / "personas" / "bob").exists()

        made = staff.post("/admin/personas/persona/add/",
                          base + [("name", "carol"), ("user_agent", "CarolAgent/2"), ("cookies_txt", COOKIES)])
        assert made.status == 302, re.findall(r"errorlist[^<]*<li>([^<]*)", made.text)
        stored = collection.root / "personas" / "carol" / "cookies.txt"
        assert stored.read_text() == COOKIES and stat.S_IMODE(stored.stat().st_mode) == 0o600
        listing = staff.get("/admin/personas/persona/").text
        assert "carol" in listing and "1 cookie(s)" in listing and SECRET not in listing
        change_url = re.search(r'href="(/admin/personas/persona/[0-9a-f-]{36}/change/)"', listing).group(1)
        change = staff.get(change_url).text
        assert "1 cookie(s)" in change and SECRET not in change, "cookies are write-only"

        page = staff.get("/add/")
        assert '<option value="carol">carol</option>' in page.text
        fields = [(k, v) for k, v in form_fields(page.text, "add-form") if k not in ("urls", "persona")]
        added = staff.post("/add/", fields + [("urls", "https://example.com/as-carol"), ("persona", "carol"),
                                              ("plugins", "titler")])
        assert added.status == 302, added.text[:500]
        crawl_id = added.location.split("/")[2]
        wait_until(lambda: json.loads(staff.get(f"/crawl/{crawl_id}/progress.json").body)["finished"], timeout=60,
                   message="the crawl to finish")
        config = json.loads(collection.scalar("SELECT config FROM core_crawl WHERE id = ?", (crawl_id.replace("-", ""),)))
        assert config == {"PERSONA": "carol", "COOKIES_FILE": str(stored), "USER_AGENT": "CarolAgent/2", "PLUGINS": "titler"}
        assert SECRET not in server.output()
    finally:
        server.stop()
