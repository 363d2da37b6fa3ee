"""The CLI on bad input: one clear line, a non-zero exit code, never a traceback. And its progress output."""

from __future__ import annotations

import fcntl
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
