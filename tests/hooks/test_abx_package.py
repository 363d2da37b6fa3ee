"""ABX_PLUGINS: abx-plugins installed for the hooks' interpreter, its plugins run unmodified by
``archivebox add``, their binaries provisioned once per machine and shown by the CLI.

End to end: the real ``archivebox`` CLI on a fresh collection, a real local feed, real
installs from PyPI (abx-plugins into the hooks' runtime, feedparser through abxpkg's uv
provider) into the session's lib dir.
"""

from __future__ import annotations

import json

import pytest
from django.conf import settings

from localsite import local_site

from .util import collection, results

INSTALL_TIMEOUT = 300


@pytest.fixture(scope="module")
def fed(tmp_path_factory):
    """One collection with ABX_PLUGINS on that archived the local site's RSS feed with abx-plugins' parse_rss_urls."""
    root = tmp_path_factory.mktemp("abxpkg")
    with local_site(root / "site", pages=3) as site:
        coll = collection(root, "parse_rss_urls", ABX_PLUGINS="true", LIB_DIR=str(settings.ENGINE.binaries_dir))
        feed = f"{site.base_url}/feed.rss"
        added = coll.cli("add", "--plugins", "parse_rss_urls", feed, timeout=INSTALL_TIMEOUT, check=False)
        yield coll, feed, added


def test_an_abx_plugin_runs_unmodified_from_the_installed_package(fed):
    coll, feed, added = fed
    assert added.returncode == 0, added.stderr[-2000:]
    result = results(coll)[(feed, "on_Snapshot__72_parse_rss_urls.py")]
    assert (result["status"], result["output_str"]) == ("succeeded", "3 URLs parsed")  # as under ArchiveBox 0.9.73
    hook = coll.query("SELECT cmd FROM core_process WHERE kind='hook' AND label LIKE 'parse_rss_urls/%'")[0]
    cmd = json.loads(hook["cmd"])
    assert "hookenv" in cmd[0] and cmd[1].startswith(str(settings.ENGINE.abx_plugins_dir))
    assert settings.ENGINE.abx_plugins_dir.resolve().parts[-2:] == ("abx_plugins", "plugins")


def test_its_binaries_are_recorded_once_and_listed(fed):
    coll, _, _ = fed
    rows = json.loads(coll.cli("binary", "list", "--json").stdout)
    by_name = {row["name"]: row for row in rows}
    assert by_name["feedparser"]["status"] == "installed" and by_name["feedparser"]["binprovider"] == "uv"
    assert by_name["python"]["status"] == "installed"
    assert [row["name"] for row in rows].count("feedparser") == 1
    status = coll.cli("status").stdout
    assert "Binaries:" in status and "installed provisioned on this machine" in status
    # `archivebox install` finds everything in place: nothing fails, nothing is added.
    installed = coll.cli("install", "parse_rss_urls", "--json", timeout=INSTALL_TIMEOUT)
    again = json.loads(installed.stdout)
    assert not again["failed"] and {row["name"] for row in again["binaries"]} == {"python", "feedparser"}
    assert len(json.loads(coll.cli("binary", "list", "--json").stdout)) == len(rows)
