"""abx-plugins, unmodified, end as they do under ArchiveBox 0.9.73.

The sweep of tests/abxsweep.py (a local site whose images and icons load slowly; five inputs:
an HTML page, an RSS feed, a text list, Netscape bookmarks, a JSONL list; fourteen plugins
that work offline) runs under this engine with the abx-plugins release ArchiveBox 0.9.73
installs (1.13.162, taken from the package registry into a cache folder), and each
(input, plugin) must end as ArchiveBox 0.9.73 ended it on the same site: the same status,
the same files written, the same files hashed, the same message. ArchiveBox's outcomes are
kept in abx_reference.json, written by ``bench/abx_sweep.py --archivebox ... --record``.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import zipfile
from pathlib import Path

import pytest
from abxsweep import SWEEP, build_site, run_here, slow_paths
from helpers import Collection
from localsite import SiteServer

from archivebox.binaries.provision import RUNTIME_PACKAGES, release_requirements, runtime_packages
from archivebox.config import EngineConfig
from archivebox.hooks.pythons import NoPython, find_python

HERE = Path(__file__).resolve().parent
ABX_PLUGINS = "abx-plugins==1.13.162"  # the release ArchiveBox 0.9.73 installs
CACHE = Path.home() / ".cache" / "archivebox-tests" / ABX_PLUGINS.replace("==", "-")
# Messages that carry a digest or a size of files whose bytes differ from run to run (the WARC).
VARIABLE = {"hashes": re.compile(r"^[\d.]+MB [0-9a-f]{12}$")}


@pytest.fixture(scope="module")
def abx_plugins_dir() -> Path:
    """abx-plugins' plugins folder, unpacked from the registry's wheel once per machine."""
    plugins = CACHE / "abx_plugins" / "plugins"
    if not plugins.is_dir():
        try:
            python, _ = find_python(">=3.12")
        except NoPython as err:
            pytest.fail(f"abx-plugins needs Python >= 3.12 and this machine has none: {err}")
        wheels = CACHE.parent / "wheels"
        subprocess.run([str(python), "-m", "pip", "download", "-q", "--no-deps", ABX_PLUGINS, "-d", str(wheels)], check=True)
        [wheel] = wheels.glob(ABX_PLUGINS.replace("==", "-").replace("-", "_", 1) + "-*.whl")
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(CACHE)
    return plugins


@pytest.fixture(scope="module")
def installed_abx_plugins_dir() -> Path:
    """abx-plugins installed as a package (``pip install``) in a Python 3.12 environment of its
    own, as on Ubuntu 24.04: its ``plugins`` folder inside that environment's site-packages."""
    env = CACHE.with_name(CACHE.name + "-py3.12-env")
    plugins = env / "lib" / "python3.12" / "site-packages" / "abx_plugins" / "plugins"
    if not plugins.is_dir():
        try:
            python, _ = find_python("==3.12.*")
        except NoPython as err:
            pytest.fail(f"this test needs a Python 3.12 on the machine: {err}")
        subprocess.run([str(python), "-m", "venv", str(env)], check=True)
        subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", "-q", ABX_PLUGINS], check=True)
    return plugins


# The release installed in a Python 3.12 environment, its hooks run warm (forks of a fork
# server in that environment's interpreter); its unpacked wheel's plugins folder on
# PLUGIN_DIRS, each hook run in a new interpreter (FORKSERVER=false) of the hooks' runtime.
@pytest.mark.parametrize("layout, forkserver", [("installed", "true"), ("unpacked", "false")])
def test_abx_plugins_end_as_under_archivebox(tmp_path, request, layout, forkserver):
    plugins_dir = request.getfixturevalue("abx_plugins_dir" if layout == "unpacked" else "installed_abx_plugins_dir")
    reference = json.loads((HERE / "abx_reference.json").read_text())
    site = tmp_path / "site"
    site.mkdir()
    data = tmp_path / "data"
    collection = Collection(data, plugins="")  # its environment: the session's lib dir, no fixture plugins
    with SiteServer(site) as server:
        inputs = build_site(site, server.base_url)
        server.delays.update(slow_paths(site))
        run = run_here(data, inputs, SWEEP, plugins_dir, server.base_url, timeout=600,
                       env={**collection.env, "FORKSERVER": forkserver})
    assert run["exit"] == 0
    with sqlite3.connect(data / "index.sqlite3") as db:
        hooks = db.execute("SELECT cmd FROM core_process WHERE kind='hook' AND cmd LIKE '%.py%'").fetchall()
        servers = db.execute("SELECT COUNT(*) FROM core_process WHERE kind='forkserver' AND cmd LIKE '%--as-script%'").fetchone()[0]
    interpreters = {json.loads(cmd)[0] for (cmd,) in hooks}
    if layout == "installed":  # the environment's own interpreter, never the hooks' runtime
        assert interpreters == {str(plugins_dir.parents[4] / "bin" / "python3.12")}
    assert (servers > 0) == (forkserver == "true")
    differences = []
    for name, expected_results in sorted(reference.items()):
        for plugin in SWEEP.split(","):
            expected, got = expected_results[plugin], run["outcomes"][name].get(plugin)
            if got is None:
                differences.append(f"{name}/{plugin}: no result (ArchiveBox: {expected['status']})")
                continue
            for key in ("status", "files", "hashed"):
                if got.get(key) != expected.get(key):
                    differences.append(f"{name}/{plugin} {key}: {got.get(key)!r}, ArchiveBox {expected.get(key)!r}")
            pattern = VARIABLE.get(plugin)
            same_message = pattern.match(got["output_str"]) if pattern else got["output_str"] == expected["output_str"]
            if not same_message:
                differences.append(f"{name}/{plugin} output_str: {got['output_str']!r}, ArchiveBox {expected['output_str']!r}")
    assert differences == [], "\n".join(differences)


def test_a_release_folder_brings_its_own_dependencies_to_the_hooks_runtime(tmp_path):
    plugins = tmp_path / "abx_plugins" / "plugins"
    plugins.mkdir(parents=True)
    (tmp_path / "abx_plugins-1.13.162.dist-info").mkdir()
    (tmp_path / "abx_plugins-1.13.162.dist-info" / "METADATA").write_text(
        "Name: abx-plugins\nRequires-Dist: abxbus==2.5.74\nRequires-Dist: abxpkg==1.13.35\n"
        "Requires-Dist: imagesize >=2.0.0\nRequires-Dist: httpx>=0.28.1; extra == 'opencode'\n")
    assert release_requirements(plugins) == ["abxbus==2.5.74", "imagesize>=2.0.0"]
    assert release_requirements(tmp_path) == []  # not an abx-plugins folder
    engine = EngineConfig.from_env({}, data_dir=tmp_path)
    assert runtime_packages(engine, plugin_dirs=f"{tmp_path / 'elsewhere'}{os.pathsep}{plugins}") == \
        (*RUNTIME_PACKAGES, "abxbus==2.5.74", "imagesize>=2.0.0")
