"""The doorbell that wakes idle consumers: across processes by datagram, within one directly."""

from __future__ import annotations

import socket
import threading

from archivebox.broker.doorbell import Doorbell
from helpers import wait_until


class RecordingSender:
    """The ringing socket, remembering where it sent."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setblocking(False)
        self.sent: list[bytes] = []

    def sendto(self, data, address):
        self.sent.append(address)
        return self.sock.sendto(data, address)


def test_a_ring_wakes_a_waiting_thread_of_this_process_directly_and_other_listeners_by_datagram(tmp_path):
    here, other = Doorbell(tmp_path / "run", "q"), Doorbell(tmp_path / "run", "q")
    here.listen()
    other.listen()  # stands for another consumer process
    sender = here._sender = RecordingSender()
    seen_here, seen_other = here.seq, other.seq
    woke = threading.Event()
    waiter = threading.Thread(target=lambda: (here.wait(seen_here, 30), woke.set()))
    waiter.start()
    try:
        here.ring()
        wait_until(woke.is_set, timeout=10, message="the waiting thread to wake")
        wait_until(lambda: other.seq > seen_other, timeout=10, message="the other listener to hear the ring")
        assert sender.sent == [other._address(other._marker.name)]  # no datagram to itself
        assert here.seq == seen_here + 1
    finally:
        here.close()
        other.close()
        waiter.join(5)
