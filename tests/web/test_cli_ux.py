"""The CLI on bad input: one clear line, a non-zero exit code, never a traceback. And its progress output."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import socket
import sqlite3
import struct
import subprocess
import termios
import time

import pytest
from helpers import VENV_BIN, Collection

from .webtools import web_collection


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    return web_collection(tmp_path_factory.mktemp("cli") / "data", plugins="noop,titler")


def run(collection, *args, env=None, cwd=None):
    return subprocess.run([str(VENV_BIN / "archivebox"), *args], cwd=cwd or collection.root, env={**collection.env, **(env or {})},
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def assert_one_line_error(result, code: int, needle: str, argparse_error: bool = False) -> None:
    assert result.returncode == code, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    if not argparse_error:
        assert len(lines) == 1, result.stderr
    assert lines[-1].startswith("archivebox") and needle in lines[-1], result.stderr


@pytest.mark.parametrize("args, env, code, needle", [
    (["add", "--depth", "99", "https://example.com"], {}, 2, "--depth must be between 0 and 9"),
    (["add", "--workers", "0", "https://example.com"], {}, 2, "--workers must be at least 1"),
    (["add", "--file", "/nonexistent/urls.txt"], {}, 1, "cannot read /nonexistent/urls.txt"),
    (["add", "--file", "/"], {}, 1, "Is a directory"),
    (["status"], {"DATABASE_URL": "mysql://db/x"}, 2, "unsupported scheme"),
    (["status"], {"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}, 1, "cannot open the database"),
    (["status"], {"MAX_TICK_TIME": "soon"}, 2, "MAX_TICK_TIME"),
    (["list", "--crawl", "not-an-id"], {}, 2, "--crawl expects an id"),
    (["update", "--crawl", "not-an-id"], {}, 2, "--crawl expects an id"),
    (["list", "--limit", "-1"], {}, 2, "--limit must be at least 0"),
    (["list", "--status", "bogus"], {}, 2, "--status must be one of"),
    (["worker", "--ticks", "0"], {}, 2, "--ticks must be at least 1"),
    (["server", "here:there:x"], {}, 2, "expected [ADDR:]PORT"),
    (["server", "70000"], {}, 2, "port must be between"),
    (["server", "--threads", "0"], {}, 2, "--threads must be at least 1"),
    (["purge", "--older-than", "soon"], {}, 2, "expected a duration"),
])
def test_bad_input_is_one_line_and_a_nonzero_exit(collection, args, env, code, needle):
    assert_one_line_error(run(collection, *args, env=env), code, needle)


def test_argparse_errors_end_with_one_error_line(collection):
    assert_one_line_error(run(collection, "add", "--depth", "abc"), 2, "invalid int value", argparse_error=True)
    assert_one_line_error(run(collection, "purge"), 2, "--older-than", argparse_error=True)


def test_a_missing_or_empty_data_dir_is_reported_and_left_alone(tmp_path):
    missing = tmp_path / "missing"
    empty = tmp_path / "empty"
    empty.mkdir()
    probe = Collection(tmp_path / "unused")
    for folder, needle in ((missing, "does not exist"), (empty, "archivebox init")):
        result = run(probe, "status", env={"DATA_DIR": str(folder)}, cwd=tmp_path)
        assert_one_line_error(result, 1, needle)
    assert not missing.exists()
    assert not (empty / "index.sqlite3").exists(), "checking a folder must not create an index in it"


def test_a_busy_port_is_one_line(collection):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert_one_line_error(run(collection, "server", f"127.0.0.1:{port}"), 1, "cannot listen on 127.0.0.1")


def test_a_broken_database_is_one_line(tmp_path):
    broken = web_collection(tmp_path / "data", plugins="noop")
    with sqlite3.connect(broken.root / "index.sqlite3") as conn:
        conn.execute("DROP TABLE core_process")
    assert_one_line_error(run(broken, "status"), 1, "database: no such table")


def test_plain_progress_lines_end_with_the_final_counts(collection):
    result = run(collection, "add", "https://example.com/plain-1", "https://example.com/plain-2")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "snapshots sealed" in line]
    assert lines and lines[-1].startswith("2/2 snapshots sealed | results 4 done, 0 failed, 0 running, 0 waiting"), result.stderr
    assert "\r" not in result.stderr


def add_on_a_terminal(collection, columns: int, *urls: str) -> str:
    """What ``add`` draws on a terminal ``columns`` wide (its stderr; its stdout is a pipe)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {k: v for k, v in collection.env.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen([str(VENV_BIN / "archivebox"), "add", *urls], cwd=collection.root, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    output = b""
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:
                    break  # the follower side closed: the command exited
                if not chunk:
                    break
                output += chunk
            elif proc.poll() is not None:
                break
        assert proc.wait(timeout=30) == 0
    finally:
        os.close(leader)
        if proc.poll() is None:
            proc.kill()
    return output.decode(errors="replace")


def test_a_terminal_gets_a_live_bar(collection):
    text = add_on_a_terminal(collection, 160, "https://example.com/tty-1", "https://example.com/tty-2")
    assert "\r" in text and "\x1b[K" in text
    assert "[##############################] 100% 2/2 snapshots sealed | results 4 done, 0 failed" in text, text


def test_the_bar_fits_the_terminal_it_is_drawn_on(collection):
    """Regression: the width was read from stdout (a pipe here), so an 80-column terminal
    got 100-column lines that wrapped instead of being redrawn in place."""
    text = add_on_a_terminal(collection, 60, "https://example.com/narrow-1")
    frames = [frame.removesuffix("\x1b[K") for line in text.split("\n") for frame in line.split("\r") if "% 1/1 snap" in frame]
    assert frames, text
    assert max(len(frame) for frame in frames) <= 59, frames


def test_archivebox_alone_lists_the_commands_and_a_misspelt_one_gets_a_suggestion(collection):
    alone = run(collection)
    assert alone.returncode == 0 and "Traceback" not in alone.stderr
    assert all(f"    {name} " in alone.stdout for name in ("init", "add", "status", "update", "schedule")), alone.stdout
    assert_one_line_error(run(collection, "stauts"), 2, "did you mean 'status'?")
    assert_one_line_error(run(collection, "xyzzy"), 2, "no command 'xyzzy'")


def test_one_line_help_is_the_first_sentence_however_it_wraps(collection):
    """Regression: each command's help was its docstring's first line, so update's ended "and archive the"."""
    listing = run(collection, "--help").stdout
    update = " ".join(listing.split("    update", 1)[1].split("    worker", 1)[0].split())
    assert update.endswith("or upgraded from an ArchiveBox collection that had not archived them)"), update
    assert "``" not in run(collection, "update", "--help").stdout


def test_an_argument_without_a_url_is_named_not_dropped(collection):
    """Regression: `add URL "not a url"` added the URL and said nothing of the other argument."""
    result = run(collection, "add", "--bg", "https://example.com/named-ok", "not a url")
    assert result.returncode == 1 and "Queued crawl" in result.stdout
    assert [line for line in result.stderr.splitlines() if "not a url" in line] == [
        "archivebox add: error: invalid URL: no URL in 'not a url'"], result.stderr
    alone = run(collection, "add", "--bg", "just words")
    assert alone.returncode == 2 and "no URL in 'just words'" in alone.stderr and "no valid URL to add" in alone.stderr


def test_status_after_a_finished_add_does_not_ask_for_pools(tmp_path):
    """Regression: with nothing left to do, status still said to start the worker pools."""
    fresh = web_collection(tmp_path / "data", plugins="noop")
    assert run(fresh, "add", "https://example.com/status-after").returncode == 0
    text = run(fresh, "status").stdout
    assert "Nothing waits for workers" in text and "run `archivebox worker`" not in text, text
    assert run(fresh, "add", "--bg", "https://example.com/waiting").returncode == 0
    assert "1 row(s) wait for workers" in run(fresh, "status").stdout


def test_install_and_status_name_the_programs_built_in_plugins_run(tmp_path):
    """Regression: install said no enabled plugin declares a binary, and status "none provisioned
    yet", while wget ran from PATH."""
    fresh = web_collection(tmp_path / "data", plugins="wget")
    installed = run(fresh, "install")
    assert installed.returncode == 0, installed.stderr
    assert "no enabled plugin declares a binary" not in installed.stdout
    wget_line = next(line for line in installed.stdout.splitlines() if " wget " in line and "WGET_BINARY" in line)
    assert "GNU Wget" in wget_line and "/wget" in wget_line, installed.stdout
    status = run(fresh, "status").stdout
    assert "none provisioned yet" not in status and "wget from PATH: /" in status, status
    report = json.loads(run(fresh, "status", "--json").stdout)
    assert [b["name"] for b in report["binaries"]["system"]] == ["wget"]
