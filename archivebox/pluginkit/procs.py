"""Running programs from a hook: a hard timeout, and nothing left behind.

:func:`run_cmd` starts the program with ``subprocess`` in a session of its own
(``start_new_session``), so it and everything it spawns share one process group; on
timeout, when it returns, and when the hook itself gets SIGTERM (after
:func:`install_sigterm_handler`), :func:`kill_tree` ends that group and every descendant
psutil can see: SIGTERM, then SIGKILL after a grace period. Zombies count as ended
(where PID 1 does not reap orphans they would otherwise look alive forever).
"""

import os

from .output import log

_CHILDREN = {}  # pid -> Popen of the programs run_cmd is running now
_SIGTERM_INSTALLED = False


class Terminated(SystemExit):
    """Raised in the main thread when SIGTERM/SIGINT arrives (exit code 143/130)."""


def install_sigterm_handler():
    """Turn SIGTERM/SIGINT into a :class:`Terminated` exception (so ``finally`` blocks run).

    Programs started by :func:`run_cmd` are killed before raising.
    """
    global _SIGTERM_INSTALLED
    if _SIGTERM_INSTALLED:
        return
    import signal

    def handler(signum, frame):
        for proc in list(_CHILDREN.values()):
            kill_tree(proc, grace=1.0)
        raise Terminated(128 + signum)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    _SIGTERM_INSTALLED = True


def _tree(proc):
    """psutil handles of ``proc``'s process group and of its descendants still running."""
    import psutil
    pgid = proc.pid  # start_new_session: the leader's pid is the group's id
    found = {}
    try:
        leader = psutil.Process(proc.pid)
        for member in [leader] + leader.children(recursive=True):
            found[member.pid] = member
    except psutil.Error:
        pass
    for member in psutil.process_iter():  # orphans reparented away from the leader
        if member.pid in found:
            continue
        try:
            if os.getpgid(member.pid) == pgid:
                found[member.pid] = member
        except OSError:
            continue
    return list(found.values())


def _running(member):
    import psutil
    try:
        return member.is_running() and member.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def kill_tree(proc, grace=2.0):
    """End ``proc`` (a Popen: started by :func:`run_cmd`, it leads a process group), its
    process group if it leads one, and its descendants.

    SIGTERM first, SIGKILL to whatever still runs after ``grace`` seconds. The leader
    is reaped while waiting, so its zombie does not keep the group alive.
    """
    proc.poll()
    try:
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        if proc.returncode is not None:
            return  # nothing of the group is left (the common case after a normal exit)
        # it runs but leads no group (started in its caller's): it and its descendants
    except PermissionError as err:
        log(f"WARNING: cannot signal process group {proc.pid}: {err}")
        return
    import signal
    import time
    import psutil
    members = _tree(proc)
    for member in members:
        try:
            member.send_signal(signal.SIGTERM)
        except psutil.Error:
            continue
    end = time.monotonic() + grace
    while time.monotonic() < end:
        proc.poll()
        members = [m for m in members if _running(m)]
        if not members:
            return
        time.sleep(0.02)
    for member in members:
        try:
            member.kill()
        except psutil.Error:
            continue
    proc.poll()


def which(name):
    """Absolute path of an executable: ``name`` itself if it contains a slash, else found on PATH."""
    if not name:
        return None
    if os.sep in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    import shutil
    return shutil.which(name)


class CmdResult:
    """Outcome of :func:`run_cmd`: ``returncode`` (None on timeout), stdout/stderr bytes."""

    __slots__ = ("returncode", "stdout", "stderr", "timed_out")

    def __init__(self, returncode, stdout, stderr, timed_out):
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.timed_out = timed_out


def run_cmd(cmd, timeout, cwd=None, env=None, stdout_path=None):
    """Run ``cmd`` (a list) in its own session with a hard ``timeout``.

    On timeout (or when this hook gets SIGTERM after :func:`install_sigterm_handler`)
    the whole tree is killed (:func:`kill_tree`). stdout goes to ``stdout_path`` if
    given, else is captured; stderr is captured. Both are bytes in the returned
    :class:`CmdResult`; ``returncode`` is None on timeout.
    """
    import subprocess
    out_file = open(stdout_path, "wb") if stdout_path else None
    try:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
            stdout=out_file if out_file else subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,
        )
        _CHILDREN[proc.pid] = proc
        try:
            out, err = proc.communicate(timeout=timeout)
            return CmdResult(proc.returncode, out or b"", err or b"", False)
        except subprocess.TimeoutExpired:
            kill_tree(proc)
            try:
                out, err = proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = b"", b""
            return CmdResult(None, out or b"", err or b"", True)
        finally:
            # the leader may have exited while descendants live on: end them too
            kill_tree(proc, grace=1.0)
            _CHILDREN.pop(proc.pid, None)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    finally:
        if out_file:
            out_file.close()


