"""The SQLite queue's storage: huey's order (priority, then first in first out), and
consumers on their own connections (as separate processes have) each take a task once."""

from __future__ import annotations

import threading

import pytest

from helpers import wait_until

from archivebox.broker.huey_ext import DoorbellSqliteStorage, build_huey, shutting_down


def storage(tmp_path, name="q"):
    return DoorbellSqliteStorage(name=name, filename=str(tmp_path / "queue.sqlite3"), wait_timeout=0.05)


def test_tasks_come_out_by_priority_then_in_order(tmp_path):
    queue = storage(tmp_path)
    for data, priority in ((b"a", None), (b"b", 5), (b"c", 0), (b"d", 5)):
        queue.enqueue(data, priority)
    assert queue.queue_size() == 4
    assert [bytes(queue.dequeue()) for _ in range(4)] == [b"b", b"d", b"a", b"c"]
    assert queue.dequeue() is None


def test_queues_in_one_file_do_not_mix(tmp_path):
    ticks, effects = storage(tmp_path, "ticks"), storage(tmp_path, "effects")
    ticks.enqueue(b"tick", None)
    assert effects.dequeue() is None
    assert bytes(ticks.dequeue()) == b"tick"


def test_consumers_on_their_own_connections_take_each_task_exactly_once(tmp_path):
    producer = storage(tmp_path)
    count = 2000
    for number in range(count):
        producer.enqueue(str(number).encode(), None)
    taken: list[list[bytes]] = [[] for _ in range(4)]

    def consume(mine: list[bytes]) -> None:
        queue = storage(tmp_path)  # a connection of its own, like another process
        while (data := queue.dequeue()) is not None:
            mine.append(bytes(data))

    threads = [threading.Thread(target=consume, args=(mine,)) for mine in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    everything = [data for mine in taken for data in mine]
    assert sorted(everything, key=int) == [str(n).encode() for n in range(count)]
    assert sum(1 for mine in taken if mine) > 1  # they did run side by side


def test_a_task_for_an_idle_worker_of_this_process_skips_the_queue_file(tmp_path):
    """While one of the process's own workers waits, a new task is handed to it in memory;
    with none idle it goes to the queue file, where any process may take it."""
    queue = DoorbellSqliteStorage(name="q", filename=str(tmp_path / "queue.sqlite3"), wait_timeout=30)
    got = []
    consumer = threading.Thread(target=lambda: got.append(queue.dequeue()))
    consumer.start()
    wait_until(lambda: queue.bell._waiting >= 1, timeout=10, interval=0.001, message="the consumer thread to wait")
    queue.enqueue(b"handed", None)
    queue.enqueue(b"queued", None)  # the one idle worker is taken: this one is written
    consumer.join(10)
    assert got == [b"handed"]
    assert queue.queue_size() == 1 and bytes(queue.dequeue()) == b"queued"


def test_handed_and_queued_tasks_are_each_taken_exactly_once(tmp_path):
    queue = DoorbellSqliteStorage(name="q", filename=str(tmp_path / "queue.sqlite3"), wait_timeout=0.01)
    queue.dequeue()
    count, taken, stop = 3000, [], threading.Event()

    def consume() -> None:
        while not stop.is_set():
            data = queue.dequeue()
            if data is not None:
                taken.append(bytes(data))

    consumers = [threading.Thread(target=consume) for _ in range(4)]
    for thread in consumers:
        thread.start()
    for number in range(count):
        queue.enqueue(str(number).encode(), None)
    try:
        wait_until(lambda: len(taken) >= count, timeout=60, message=f"{count} tasks taken")
    finally:
        stop.set()
    for thread in consumers:
        thread.join(10)
    assert sorted(taken, key=int) == [str(n).encode() for n in range(count)]


def test_running_a_task_reads_no_revoke_keys_and_revoking_is_refused(tmp_path):
    """Messages are hints and rows are what is cancelled: a task runs with no look-up of
    revoke keys in the queue file (stock Huey makes two per task), and ``revoke`` says why
    it cannot be done instead of writing a key nobody reads."""
    huey = build_huey("revokes", tmp_path, "")
    ran = []

    @huey.task()
    def note(value):
        ran.append(value)

    note(1)  # enqueued to the queue file: no worker of this process is waiting
    statements = []
    real_sql = huey.storage.sql
    huey.storage.sql = lambda query, *args, **kwargs: statements.append(query) or real_sql(query, *args, **kwargs)
    huey.execute(huey.dequeue())
    assert ran == [1]
    assert not [query for query in statements if " kv " in f" {query} "], statements
    with pytest.raises(NotImplementedError, match="cancel their row"):
        note.revoke()
    with pytest.raises(NotImplementedError, match="cancel their row"):
        huey.revoke_by_id("some-id")


def test_a_stop_signal_while_the_consumer_starts_stops_it_gracefully(tmp_path):
    """A SIGINT that came while the listeners started (a start-up sweep adopting a dead
    worker's hooks) raised KeyboardInterrupt out of start(): the consumer died without its
    listeners' on_stop, and the hooks it had just adopted ran on unwatched."""
    import os
    import signal

    huey = build_huey("startup-signal", tmp_path)
    stops = []

    class Listener:
        def on_start(self):
            os.kill(os.getpid(), signal.SIGINT)  # arrives before Huey's own start has run

        def on_loop(self):
            pass

        def on_stop(self, graceful):
            stops.append(graceful)

    huey.consumer_hooks = [lambda consumer: Listener()]
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        huey.create_consumer(workers=1, periodic=False).run()
    except KeyboardInterrupt:
        pytest.fail("the signal escaped the consumer's start as KeyboardInterrupt")
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        shutting_down.clear()  # this test process goes on running hooks in other tests
    assert stops == [True]
