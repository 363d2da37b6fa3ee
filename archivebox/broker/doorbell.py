"""Wake idle consumers the moment a task is enqueued, without polling.

SqliteHuey has no blocking pop: an idle worker sleeps between polls, which costs either
latency or CPU. A doorbell removes both. Each consuming process listens on one Linux
abstract-namespace datagram socket per queue and announces itself with an empty marker
file in ``<queue dir>/run/``. Enqueuing sends one byte to every listener of the queue;
the listener thread wakes one waiting worker thread per byte. A process that consumes
the queue it enqueues to (embedded workers) wakes one of its own threads directly.

Correctness never depends on the bell: a waiting worker also wakes after ``timeout``
and polls, so a lost datagram costs at most that much latency.

A process that consumes the queue it enqueues to can also skip the queue: while one of
its own worker threads waits for work, a new task is handed to it in memory
(:meth:`Doorbell.offer`) instead of being written to the queue and read back. Such a
task is lost if the process dies before running it, as a task it had popped would be;
messages are hints, and what they ask for is found again in the database.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import secrets
import socket
import threading
from collections import deque
from pathlib import Path

logger = logging.getLogger(__name__)


class Doorbell:
    def __init__(self, run_dir: Path, queue: str):
        self.run_dir = Path(run_dir)
        self.queue = queue
        self._namespace = hashlib.sha1(str(self.run_dir.resolve()).encode()).hexdigest()[:16]
        self._cond = threading.Condition()
        self._seq = 0
        self._waiting = 0  # this process's threads inside wait()
        self._offered: deque = deque()  # tasks handed to them, not taken yet
        self._listen_lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._listener_pid = 0
        self._marker: Path | None = None
        self._sender: socket.socket | None = None
        self._peers: list[tuple[str, bytes]] = []
        self._peers_mtime = -1
        self._closed = False

    # Listening side (consumers) --------------------------------------------------

    @property
    def seq(self) -> int:
        """A counter bumped by every ring this process hears; compare before and after a poll."""
        return self._seq

    def wait(self, seen_seq: int, timeout: float) -> None:
        """Block until a ring newer than ``seen_seq`` arrives, or ``timeout`` passes."""
        self.listen()
        with self._cond:
            if self._seq == seen_seq and not self._closed:
                self._waiting += 1
                try:
                    self._cond.wait(timeout)
                finally:
                    self._waiting -= 1

    def offer(self, item) -> bool:
        """Hand ``item`` to one of this process's threads waiting in :meth:`wait`, if one
        is idle (more wait than items are offered already); False if none is."""
        with self._cond:
            if self._closed or self._waiting <= len(self._offered):
                return False
            self._offered.append(item)
            self._seq += 1
            self._cond.notify()
            return True

    def take(self):
        """An item offered to this process's threads, or None."""
        try:
            return self._offered.popleft()
        except IndexError:
            return None

    def wake_all(self) -> None:
        """Release every waiting thread (used on shutdown)."""
        with self._cond:
            self._seq += 1
            self._cond.notify_all()

    def listen(self) -> None:
        if self._listener is not None and self._listener_pid == os.getpid():
            return
        with self._listen_lock:
            if self._listener is not None and self._listener_pid == os.getpid():
                return
            self.run_dir.mkdir(parents=True, exist_ok=True)
            name = f"{self.queue}.{os.getpid()}.{secrets.token_hex(4)}"
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.bind(self._address(name))
            marker = self.run_dir / name
            marker.touch()
            self._listener, self._listener_pid, self._marker = sock, os.getpid(), marker
            threading.Thread(target=self._receive, args=(sock,), name=f"doorbell-{self.queue}", daemon=True).start()

    def close(self) -> None:
        self._closed = True
        self.wake_all()
        if self._marker is not None:
            self._marker.unlink(missing_ok=True)
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def _receive(self, sock: socket.socket) -> None:
        while True:
            try:
                sock.recv(64)
            except OSError:
                return
            with self._cond:
                self._seq += 1
                self._cond.notify()

    # Ringing side (enqueuers) ----------------------------------------------------

    def ring(self) -> None:
        """Tell every consumer of this queue on this machine that a task is waiting."""
        if self._sender is None:
            sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sender.setblocking(False)
            self._sender = sender
        own = self._marker.name if self._marker is not None and self._listener_pid == os.getpid() else None
        if own is not None:
            # This process consumes the queue too (embedded workers): wake one of its own
            # waiting threads directly, without a datagram and a hop through the listener.
            with self._cond:
                self._seq += 1
                self._cond.notify()
        for marker, address in self._current_peers():
            if marker == own:
                continue
            try:
                self._sender.sendto(b"!", address)
            except BlockingIOError:
                continue  # the peer already has unread rings queued
            except OSError as err:
                if err.errno in (errno.ECONNREFUSED, errno.ENOENT):
                    self._forget(marker)
                else:
                    logger.debug("doorbell %s: ring to %s failed: %s", self.queue, marker, err)

    def _current_peers(self) -> list[tuple[str, bytes]]:
        try:
            mtime = os.stat(self.run_dir).st_mtime_ns
        except FileNotFoundError:
            return []
        if mtime != self._peers_mtime:
            prefix = self.queue + "."
            names = [e.name for e in os.scandir(self.run_dir) if e.name.startswith(prefix)]
            self._peers = [(name, self._address(name)) for name in names]
            self._peers_mtime = mtime
        return self._peers

    def _forget(self, marker: str) -> None:
        (self.run_dir / marker).unlink(missing_ok=True)
        self._peers_mtime = -1

    def _address(self, name: str) -> bytes:
        return f"\0archivebox.{self._namespace}.{name}".encode()
