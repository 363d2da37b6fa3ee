"""Running one hook script for one ArchiveResult attempt.

The side effect is keyed by (result, attempt): the Process row with key
``hook:<result id>:<attempt>`` is created once, so a duplicate message finds it and does
nothing. It launches the hook, waits for it (enforcing its timeout, and stopping it when
the snapshot seals, the result is cancelled or this worker shuts down), reads its
stdout records, records the outcome on the Process row and wakes the ArchiveResult,
whose next tick turns the outcome into a transition.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connection

from archivebox.broker import shutting_down
from archivebox.config import ConfigError
from archivebox.core.models import ArchiveResult, Crawl, Machine, Process, Snapshot, Tag
from archivebox.core.models.base import uuid7
from archivebox.core.urlcheck import is_valid_url
from archivebox.hooks.catalog import catalog
from archivebox.hooks.config import to_env, url_filter
from archivebox.hooks.discovery import HookScript
from archivebox.hooks.output import HookReport, Outlink, read_report
from archivebox.process import forkclient, runner
from archivebox.process.registry import current_worker
from archivebox.process.threadpool import IDLE, ThreadPool
from archivebox.sideeffects.crawl import create_snapshots
from archivebox.sideeffects.queue import sideeffect
from archivebox.core import rowsql
from archivebox.core.reads import find_hook, hook_of, owner_layers
from archivebox.process import sweep
from archivebox.tasks.dispatch import wake_rows

logger = logging.getLogger(__name__)

INTERPRETERS = {"py": [sys.executable, "-I"], "sh": ["sh"], "js": ["node"]}


def hook_command(hook: HookScript, *, url: str | None, snapshot_id, crawl_id, depth: int) -> list[str]:
    """argv for a hook: interpreter by extension (or the file itself), then ``--key=value`` flags."""
    argv = [*INTERPRETERS.get(hook.ext, []), str(hook.path)]
    if url is not None:
        argv.append(f"--url={url}")
    if snapshot_id is not None:
        argv.append(f"--snapshot-id={snapshot_id}")
    argv += [f"--crawl-id={crawl_id}", f"--depth={depth}"]
    return argv


def forked(cmd: list, cwd: str, env, stdout: Path, stderr: Path, pending: forkclient.PendingFork | None = None):
    """Run a Python hook (``[python, -I, script, args...]``) as a held fork of the
    pre-warmed fork server (``pending``: its fork, asked for ahead); fall back to a fresh
    interpreter, held the same way, if the server is unavailable."""
    try:
        if pending is None:
            pending = forkclient.CLIENT.hold(cmd[2])
            pending.prepare(cmd[2:], cwd, env, stdout, stderr, runner.status_path(stdout))
        return pending.start()
    except forkclient.ForkServerError as err:
        logger.warning("%s; running %s in a new interpreter", err, Path(cmd[2]).name)
        return runner.gated_spawner(cmd, cwd, env, stdout, stderr)


def crawl_dir(crawl_id) -> Path:
    return settings.DATA_DIR / "crawls" / str(crawl_id)


def stop_reason(result_id, attempt: int) -> str | None:
    """Why a running hook should stop now, if it should."""
    if shutting_down.is_set():
        return "worker shutting down"
    try:
        row = ArchiveResult.objects.filter(pk=result_id).values("status", "attempts", "snapshot__status", "crawl__status").first()
    except DatabaseError as err:
        # The database is away (restarting, say): keep the hook running, ask again later
        # on a new connection. Its timeout still applies.
        logger.warning("cannot check whether hook result %s should stop, will ask again: %s", result_id, err)
        connection.close()
        return None
    if row is None:
        return "result deleted"
    if row["status"] != "started" or row["attempts"] != attempt:
        return "result cancelled"
    owner_status = row["snapshot__status"] or row["crawl__status"]
    if owner_status in ("sealed", "failed"):
        return f"terminated when its {'snapshot' if row['snapshot__status'] else 'crawl'} was {owner_status}"
    return None


def apply_report(report: HookReport, snapshot: Snapshot | None) -> None:
    if snapshot is None:
        return
    if report.title:
        Snapshot.objects.filter(pk=snapshot.pk).update(title=report.title)
    for name in report.tags:
        tag, _ = Tag.objects.get_or_create(name=name)
        snapshot.tags.add(tag)


def outlink_sink(snapshot: Snapshot | None, crawl: Crawl, wanted: Callable[[str], bool]):
    """Turns outlink batches into child snapshots within the crawl's max depth: links at
    depth+1, expanded entries (of a feed or URL list) at the snapshot's own depth."""
    own_depth = snapshot.depth if snapshot else 0

    def sink(links: list[Outlink]) -> None:
        if crawl.is_final:
            return
        for expand in (True, False):
            depth = own_depth if expand else own_depth + 1
            urls = list(dict.fromkeys(link.url.strip() for link in links
                                      if link.expand is expand and _archivable(link.url) and wanted(link.url.strip())))
            if urls and depth <= crawl.max_depth:
                create_snapshots(crawl, urls, depth=depth, parent_id=snapshot.pk if snapshot else None)

    return sink


def _archivable(url: str) -> bool:
    """Outlinks pass the same check as URLs given to ``add``."""
    return is_valid_url(url)


@sideeffect
def run_hook(result_id, attempt: int, named: tuple[str, str, str] | None = None) -> None:
    """Run attempt ``attempt`` of a result's hook. ``named``: its :func:`hook_of`, if the
    caller knows it; its turn and its fork are then asked for before the row is read."""
    expected = find_hook(*named) if named else None
    with SUPERVISORS.reserve(expected) as slot:
        result = rowsql.load(ArchiveResult, [result_id], "crawl", "snapshot").get(result_id)
        if result is None or result.status != "started" or result.attempts != attempt:
            return
        hook = find_hook(*hook_of(result))
        if hook == expected:
            _run_attempt(result, attempt, hook, slot)
            return
    with SUPERVISORS.reserve(hook) as slot:  # not named by the caller, or its scripts changed meanwhile
        _run_attempt(result, attempt, hook, slot)


def _run_attempt(result: ArchiveResult, attempt: int, hook: HookScript | None, slot: Slot) -> None:
    """Prepare and run one attempt of ``result``'s hook, with the turn (and fork) in ``slot``."""
    snapshot, crawl = result.snapshot, result.crawl
    machine = Machine.current(settings.ENGINE.machine_id)
    key = f"hook:{result.pk}:{attempt}"
    base = crawl_dir(crawl.pk) if snapshot is None else snapshot.output_dir
    pwd = base / result.plugin
    if hook is None:
        _record_failure(key, machine, result, pwd, f"hook script {result.plugin}/{result.hook_name} no longer exists")
        return
    try:
        layers = owner_layers(crawl, snapshot)
        cat = catalog(settings.DATA_DIR, settings.PLUGIN_DIRS)
        config_env = to_env(cat.resolved(result.plugin, layers))
        timeout = cat.timeout(result.plugin, layers)
        wanted = url_filter(layers)
    except ConfigError as err:
        _record_failure(key, machine, result, pwd, f"config error: {err}")
        return
    env = {**runner.base_env(), **config_env, "DATA_DIR": str(settings.DATA_DIR), "CRAWL_DIR": str(crawl_dir(crawl.pk))}
    if snapshot is not None:
        env["SNAP_DIR"] = str(snapshot.output_dir)
    cmd = hook_command(hook, url=snapshot.url if snapshot else None, snapshot_id=snapshot.pk if snapshot else None,
                       crawl_id=crawl.pk, depth=snapshot.depth if snapshot else 0)
    process_id = uuid7()
    job = Supervised(None, env, forked if hook.ext == "py" and settings.ENGINE.forkserver else None, timeout,
                     hook.background, result.pk, attempt, pwd, snapshot, crawl, wanted,
                     cmd=cmd, logs=runner.log_paths(process_id, make=True))

    def create() -> tuple[Process, bool]:
        """The hook's Process row (and whether it is new), then its folder (a held fork
        makes it too, meanwhile)."""
        created = runner.create(kind=Process.Kind.HOOK, cmd=cmd, pwd=pwd, env=env, timeout=timeout, machine=machine,
                                parent=current_worker(), key=key, archiveresult_id=result.pk, attempt=attempt,
                                label=f"{result.plugin}/{result.hook_name}", id=process_id)
        pwd.mkdir(parents=True, exist_ok=True)
        return created

    SUPERVISORS.run(job, create, slot)


@dataclass
class Slot:
    """What :meth:`Supervisors.reserve` got for a hook about to run."""

    turn: bool  # it may run now (a background hook always may)
    pending: forkclient.PendingFork | None = None  # its fork, asked for ahead
    taken: bool = False  # Supervisors.run took both over


@dataclass
class Supervised:
    """Everything a supervisor thread needs to run one hook to its end."""

    row: Process | None  # None until the row is written
    env: dict
    spawner: Callable | None
    timeout: float
    background: bool
    result_id: object
    attempt: int
    pwd: Path
    snapshot: Snapshot | None
    crawl: Crawl
    wanted: Callable[[str], bool]
    cmd: list[str] | None = None
    logs: tuple[Path, Path] | None = None
    pending: forkclient.PendingFork | None = None  # its fork, asked for before the row was written


def launch_hook(job: Supervised) -> runner.Running | None:
    """Start the hook of a queued Process row; None if it will not run (the row is closed
    with the reason and the result woken)."""
    pending, job.pending = job.pending, None
    if shutting_down.is_set():
        if pending is not None:
            pending.cancel()
        runner.close_unlaunched(job.row, "worker shutting down before the hook started")
        wake_rows(ArchiveResult, [job.result_id])
        return None
    spawner = (job.spawner or runner.gated_spawner) if pending is None else partial(forked, pending=pending)
    try:
        return runner.launch(job.row, job.env, spawner=spawner, logs=job.logs)
    except runner.LaunchRefused as err:
        logger.warning("%s", err)
        wake_rows(ArchiveResult, [job.result_id])
        return None
    except OSError as err:
        runner.close_unlaunched(job.row, f"could not start: {err}", permanent=True)
        wake_rows(ArchiveResult, [job.result_id])
        return None


def watch(job: Supervised, running: runner.Running, abandoned: threading.Event | None = None) -> None:
    """Wait for a launched hook, record what it reported, and wake its ArchiveResult
    (unless ``abandoned`` is set by then: the worker stops at once, and records the end
    of every hook it kills on the way out)."""
    exit_code, reason = runner.wait(running, job.timeout, lambda: stop_reason(job.result_id, job.attempt),
                                    grace=settings.ENGINE.hook_kill_grace)
    if abandoned is not None and abandoned.is_set():
        return

    def record() -> None:  # every step is idempotent, so a retry after a lost connection repeats them
        report = _read(job.row, job.pwd, job.snapshot, job.crawl, job.wanted)
        apply_report(report, job.snapshot)
        runner.finish(job.row, exit_code, reason, report.to_json(), ended_at=running.exited_at)
        wake_rows(ArchiveResult, [job.result_id])

    runner.persistently(record, job.row.label)


class Supervisors:
    """Launches hooks and supervises them until they end, so the worker can wait for them on stop.

    A hook that may run now (a background hook, or a foreground hook while fewer than
    HOOK_CONCURRENCY run) is launched from the calling thread at once, and a pooled
    thread waits for it; a Python hook's fork is asked of the fork server before its
    Process row is written, so the two happen together. A foreground hook beyond the
    limit waits for a turn: the thread of the next foreground hook to end launches it.
    The threads, and their database connections, serve one hook after another.
    """

    def __init__(self, idle: float = IDLE):
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._foreground = ThreadPool("hook", idle=idle)
        self._background = ThreadPool("hook-bg", idle=idle)
        self._running = 0  # foreground hooks holding a turn
        self._waiting: deque[Supervised] = deque()
        # Set when the worker stops at once: it kills and records the hooks still running.
        self.abandoned = threading.Event()

    @staticmethod
    def limit() -> int:
        return settings.ENGINE.hook_concurrency or 2 * (os.cpu_count() or 1)

    @contextlib.contextmanager
    def reserve(self, hook: HookScript | None) -> Iterator[Slot]:
        """As soon as the hook is known: its turn if it may run now, and for a Python hook
        a fork of the server, asked for at once so that it happens while the run is being
        prepared. What :meth:`run` does not take over is given back on the way out."""
        slot = Slot(turn=hook is not None and (hook.background or self._take_turn()))
        if slot.turn and hook.ext == "py" and settings.ENGINE.forkserver:
            try:
                slot.pending = forkclient.CLIENT.hold(str(hook.path))
            except forkclient.ForkServerError as err:
                logger.debug("no early fork for %s: %s", hook.path, err)
        try:
            yield slot
        finally:
            if not slot.taken:
                if slot.pending is not None:
                    slot.pending.cancel()
                if slot.turn and not hook.background:
                    self._pass_turn()

    def run(self, job: Supervised, create: Callable[[], tuple[Process, bool]], slot: Slot) -> None:
        """Write the hook's Process row (``create``: the row and whether it is new) and run
        it: now if ``slot`` holds a turn, else when one comes free."""
        slot.taken = True
        if slot.pending is not None:
            try:
                slot.pending.prepare(job.cmd[2:], str(job.pwd), job.env, *job.logs, runner.status_path(job.logs[0]))
                job.pending = slot.pending
            except forkclient.ForkServerError as err:
                logger.debug("early fork for %s lost: %s", job.cmd[2], err)
        try:
            job.row, created = create()
        except BaseException:
            self._call_off(job, slot.turn)
            raise
        if not created:
            self._call_off(job, slot.turn)
            logger.debug("%s already launched (%s), not running it twice", job.row.key, job.row.status)
            return
        if not slot.turn:
            self.start(job)
        elif not self._launch(job):
            self._done(job)

    def start(self, job: Supervised) -> None:
        """Run the hook of a queued row: now if it may, else when a turn comes free."""
        if (job.background or self._take_turn(otherwise_wait=job)) and not self._launch(job):
            self._done(job)

    def _take_turn(self, otherwise_wait: Supervised | None = None) -> bool:
        """A foreground turn, if one is free; if not, ``otherwise_wait`` waits for one."""
        with self._lock:
            if self._running >= self.limit():
                if otherwise_wait is not None:
                    self._waiting.append(otherwise_wait)
                return False
            self._running += 1
            return True

    def _call_off(self, job: Supervised, turn: bool) -> None:
        if job.pending is not None:
            job.pending.cancel()
            job.pending = None
        if turn:
            self._done(job)

    def _launch(self, job: Supervised) -> bool:
        """Launch the hook from this thread and hand it to a pooled thread; False if it did
        not start (its turn, if any, is still the caller's)."""
        try:
            running = launch_hook(job)
        except Exception:
            logger.exception("launching %s failed; its result will retry when its deadline passes", job.row.label)
            return False
        if running is None:
            return False
        pool = self._background if job.background else self._foreground
        try:
            pool.submit(lambda: self._watch(job, running))
        except RuntimeError as err:  # no thread to be had: supervise it from this one
            logger.warning("no thread for %s (%s): supervising it from this one", job.row.label, err)
            self._watch(job, running)
        return True

    def _watch(self, job: Supervised, running: runner.Running) -> None:
        threading.current_thread().name = f"hook {job.row.label}"
        try:
            watch(job, running, self.abandoned)
        except Exception:
            logger.exception("supervising %s failed; its result will retry when its deadline passes", job.row.label)
        finally:
            self._done(job)

    def _done(self, job: Supervised) -> None:
        """``job`` is over (or never started): a foreground hook passes its turn on."""
        if not job.background:
            self._pass_turn()

    def _pass_turn(self) -> None:
        """A foreground turn is free: the next waiting hooks are launched from this thread
        until one runs (it holds the turn then) or none is left."""
        while True:
            with self._lock:
                if not self._waiting:
                    self._running -= 1
                    self._idle.notify_all()
                    return
                job = self._waiting.popleft()
            if self._launch(job):
                return

    def join(self, timeout: float) -> int:
        """Wait (up to ``timeout``) for every supervised hook to end; returns how many are left."""
        deadline = time.monotonic() + timeout
        left = self._background.join(timeout)
        with self._lock:
            while (self._running or self._waiting) and (remaining := deadline - time.monotonic()) > 0:
                self._idle.wait(remaining)
            return left + self._running + len(self._waiting)


SUPERVISORS = Supervisors()


def _read(row: Process, pwd: Path, snapshot: Snapshot | None, crawl: Crawl, wanted: Callable[[str], bool]) -> HookReport:
    snap_dir = snapshot.output_dir if snapshot else crawl_dir(crawl.pk)
    try:
        with open(row.stdout_path, "rb") as stream:
            return read_report(stream, hook_dir=pwd, snap_dir=snap_dir, on_outlinks=outlink_sink(snapshot, crawl, wanted), label=row.label)
    except OSError as err:
        report = HookReport()
        report.note(f"could not read stdout: {err}")
        return report


def _record_failure(key: str, machine: Machine, result: ArchiveResult, pwd: Path, reason: str) -> None:
    """A hook that cannot even be launched: record why (permanently) and let the result see it."""
    row, created = runner.create(kind=Process.Kind.HOOK, cmd=[], pwd=pwd, env={}, timeout=None, machine=machine,
                                 key=key, archiveresult_id=result.pk, attempt=result.attempts,
                                 label=f"{result.plugin}/{result.hook_name}")
    if created:
        runner.close_unlaunched(row, reason, permanent=True)
        logger.warning("%s: %s", row.label, reason)
    wake_rows(ArchiveResult, [result.pk])


def sweep_hooks(machine: Machine, grace: float, exclude_pid: int | None = None) -> int:
    """Close or kill the hooks this machine's dead workers left behind. Returns rows closed."""
    closed = 0
    for row in sweep.orphans(machine, "queued"):
        if row.parent_id is not None and runner.close_unlaunched(row, "never launched: its worker was gone"):
            closed += 1
            wake_rows(ArchiveResult, [row.archiveresult_id])
    for row in sweep.orphans(machine, "running"):
        if row.pid == exclude_pid:
            continue
        if runner.is_running(row.pid, row.pid_started):
            if row.parent_id is None:
                continue  # nobody to ask; the Process row's own deadline closes it
            logger.warning("killing orphaned %s (pid %s): its worker is gone", row.label, row.pid)
            reason = "killed: its worker was gone"
        else:
            reason = "gone: no exit code was recorded"
        runner.kill_orphan(row.pid, row.pid_started, row.pwd, grace)  # and whatever it left running
        if runner.finish(row, None, reason):
            closed += 1
            wake_rows(ArchiveResult, [row.archiveresult_id])
    return closed


def stop_hooks(worker: Process, graceful: bool) -> None:
    """The worker stops: wait for its hooks (they are being stopped), then kill and record
    any still running (a second signal cut the graceful stop short)."""
    try:
        left = SUPERVISORS.join(timeout=settings.ENGINE.hook_kill_grace + 5 if graceful else 0.5)
    except KeyboardInterrupt:
        left = -1  # a second signal: stop waiting for the hooks to wind down
    if left:
        logger.warning("hooks still running on the way out are killed")
        SUPERVISORS.abandoned.set()
    for hook in Process.objects.filter(parent=worker, status="running"):
        logger.warning("killing %s (pid %s) on the way out", hook.label, hook.pid)
        runner.kill_orphan(hook.pid, hook.pid_started, hook.pwd, grace=0.2)
        if runner.finish(hook, None, "killed: its worker stopped at once") and hook.archiveresult_id:
            wake_rows(ArchiveResult, [hook.archiveresult_id])


def sweep_machine(machine: Machine, grace: float = 3.0, exclude_pid: int | None = None) -> int:
    """Everything a side-effects worker sweeps: dead workers' rows, then their hooks."""
    return sweep.sweep_workers(machine, exclude_pid) + sweep_hooks(machine, grace, exclude_pid)
