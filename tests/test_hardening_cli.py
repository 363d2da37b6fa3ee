"""Bad input and hostile neighbours at the command line: one clear line, nothing exposed.

Each test reproduces a reported problem with real files, a real second local user
(``setpriv`` as ``nobody``) and the real CLI as a subprocess.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.helpers import VENV_BIN, Collection

NOBODY = 65534


SYSTEM_PYTHON = Path("/usr/bin/python3")


@pytest.fixture(scope="module")
def shared_dir():
    """A folder every local user can enter (pytest's own tmp folders are private to root),
    holding an interpreter ``nobody`` can run the project with: the test venv's own may live
    where another user cannot go (pyenv under /root), so a venv of the system Python that
    reads the test venv's packages."""
    if os.geteuid() != 0 or not shutil.which("setpriv") or not SYSTEM_PYTHON.exists():
        pytest.skip("needs root, setpriv and /usr/bin/python3 to act as a second local user")
    path = Path(tempfile.mkdtemp(prefix="abx-shared-"))
    path.chmod(0o755)
    venv = path / "venv"
    subprocess.run([str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(venv)], check=True)
    [site_packages] = venv.glob("lib/python3*/site-packages")
    ours = next(p for p in sys.path if p.endswith("site-packages") and p.startswith(sys.prefix))
    (site_packages / "test_venv.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    subprocess.run(["chmod", "-R", "a+rX", str(venv)], check=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def as_nobody(coll: Collection, *args: str) -> subprocess.CompletedProcess:
    """``archivebox ARGS`` run by another local user (``nobody``) on ``coll``."""
    python = coll.root.parent / "venv" / "bin" / "python"
    cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", str(python), "-m", "archivebox", *args]
    return subprocess.run(cmd, cwd=coll.root, env={**coll.env, "HOME": "/tmp"}, capture_output=True, text=True, timeout=60)


@pytest.fixture
def place(shared_dir, request):
    """A fresh collection folder inside the shared folder."""
    path = shared_dir / request.node.name.replace("[", "-").replace("]", "").replace(" ", "_")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_collection_is_private_to_its_owner(place):
    coll = Collection(place).init()
    coll.cli("add", "--bg", "https://example.com/")
    assert mode(coll.root) == 0o700
    for name in ("index.sqlite3", "monitor.sqlite3", ".secret_key", "ArchiveBox.conf"):
        assert mode(coll.root / name) == 0o600, name
    # Another local user can read none of it, the session table included.
    peek = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "cat", str(coll.root / "index.sqlite3")],
                          capture_output=True, text=True)
    assert peek.returncode != 0 and "Permission denied" in peek.stderr


def test_status_warns_about_a_collection_others_can_read_and_init_fixes_it(place):
    coll = Collection(place).init()
    coll.root.chmod(0o755)
    (coll.root / "index.sqlite3").chmod(0o644)
    warned = coll.cli("status").stdout
    assert "other local users can read" in warned and "index.sqlite3" in warned
    assert str(coll.root / "index.sqlite3") in coll.cli("status", "--json").stdout
    coll.cli("init", "-q")
    assert mode(coll.root) == 0o700 and mode(coll.root / "index.sqlite3") == 0o600
    assert "other local users can read" not in coll.cli("status").stdout


def test_a_config_file_that_is_not_utf8_is_one_line_naming_file_and_offset(tmp_path):
    coll = Collection(tmp_path / "c").init()
    (coll.root / "ArchiveBox.conf").write_bytes(b"[GENERAL]\nTIMEOUT = 5\xff\n")
    result = coll.cli("status", check=False)
    assert result.returncode == 2
    assert result.stderr.strip() == f"archivebox: error: {coll.root / 'ArchiveBox.conf'}: not UTF-8 text: byte 0xff at offset 21"


@pytest.mark.parametrize("name, what", [("ArchiveBox.conf", "cannot read config file"),
                                        (".secret_key", "cannot read the collection's secret key")])
def test_an_unreadable_config_or_secret_key_is_an_error_not_ignored(place, name, what):
    coll = Collection(place).init()
    subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(coll.root)], check=True)
    assert as_nobody(coll, "status").returncode == 0
    (coll.root / name).chmod(0)
    result = as_nobody(coll, "status")
    assert result.returncode == 2
    assert result.stderr.strip() == f"archivebox: error: {coll.root / name}: {what}: Permission denied"


def test_a_misspelt_config_key_is_refused_naming_the_nearest_known_one(tmp_path):
    coll = Collection(tmp_path / "c", plugins="noop").init()
    result = coll.cli("add", "--bg", "-c", "TIMOTU=5", "https://example.com/", check=False)
    assert result.returncode == 2
    assert result.stderr.strip() == "archivebox add: error: invalid config: unknown config key TIMOTU (did you mean TIMEOUT?)"
    assert coll.scalar("SELECT COUNT(*) FROM core_crawl") == 0
    # Keys a plugin declares stay valid, as do the global ones.
    coll.cli("add", "--bg", "-c", "TIMEOUT=5", "-c", "NOOP_ENABLED=true", "https://example.com/")
    assert coll.scalar("SELECT COUNT(*) FROM core_crawl") == 1


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path):
    coll = Collection(tmp_path / "c").init()
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte, as with `status | head -0`
    try:
        result = subprocess.run([str(VENV_BIN / "archivebox"), "status"], cwd=coll.root, env=coll.env, stdout=write_end,
                                stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    assert (result.returncode, result.stderr) == (0, "")


def test_init_on_a_folder_it_cannot_write_says_so_without_suggesting_init(place):
    target = place
    target.mkdir()
    target.chmod(0o755)  # enterable, but only root may write in it
    coll = Collection(target)
    result = as_nobody(coll, "init")
    assert result.returncode == 1
    line = result.stderr.strip()
    assert line.startswith(f"archivebox init: error: cannot create the collection in {target}: Permission denied"), line
    assert "run `archivebox init`" not in line and "\n" not in line


def test_read_only_commands_work_on_a_read_only_collection(place):
    coll = Collection(place).init()
    coll.cli("add", "--bg", "https://example.com/ro")
    subprocess.run(["chmod", "-R", "a+rX", str(coll.root)], check=True)  # readable, but only root may write
    status = as_nobody(coll, "status")
    assert status.returncode == 0, status.stderr
    assert "1 queued" in status.stdout
    listed = as_nobody(coll, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert as_nobody(coll, "search", "anything").returncode == 0
    refused = as_nobody(coll, "add", "--bg", "https://example.com/other")
    assert refused.returncode == 1
    assert refused.stderr.strip().startswith(f"archivebox add: error: the collection in {coll.root} is read-only")
    assert coll.scalar("SELECT COUNT(*) FROM core_crawl") == 1
