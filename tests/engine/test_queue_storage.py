"""The SQLite queue's storage: huey's order (priority, then first in first out), and
consumers on their own connections (as separate processes have) each take a task once."""

from __future__ import annotations

import threading

from archivebox.broker.huey_ext import DoorbellSqliteStorage


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
