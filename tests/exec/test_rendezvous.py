"""The rendezvous: non-blocking sends, callback receives, per-key order, abort, deadlock detection."""
import threading

import pytest

from graphtool.errors import RuntimeFailure
from graphtool.exec.rendezvous import Rendezvous, describe_key, make_key

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"
KEY = make_key(CPU0, CPU1, "x:0")


class Received:
    """A recv callback that records what it was called with."""

    def __init__(self):
        self.calls = []
        self.event = threading.Event()

    def __call__(self, value, is_dead, error=None):
        self.calls.append((value, is_dead, error))
        self.event.set()


def test_send_first_then_recv_gets_the_value_at_once():
    rendezvous, got = Rendezvous(), Received()
    rendezvous.send(KEY, 41, False)
    rendezvous.recv_async(KEY, got)
    assert got.calls == [(41, False, None)]


def test_recv_first_is_called_back_when_the_value_arrives():
    rendezvous, got = Rendezvous(), Received()
    rendezvous.recv_async(KEY, got)
    assert got.calls == []
    rendezvous.send(KEY, None, True)
    assert got.calls == [(None, True, None)]


def test_keys_keep_iterations_and_devices_apart_and_values_arrive_in_order():
    rendezvous = Rendezvous()
    iteration = [make_key(CPU0, CPU1, "x:0", (("loop", i),)) for i in range(3)]
    for i in (2, 0, 1):
        rendezvous.send(iteration[i], f"it{i}", False)
    rendezvous.send(KEY, "first", False)
    rendezvous.send(KEY, "second", False)
    got = [Received() for _ in range(6)]
    for key, callback in zip(iteration + [KEY, KEY, make_key(CPU1, CPU0, "x:0")], got):
        rendezvous.recv_async(key, callback)
    assert [c.calls[0][0] for c in got[:5]] == ["it0", "it1", "it2", "first", "second"]
    assert got[5].calls == []  # the reverse direction is another channel


def test_abort_wakes_every_waiter_and_every_later_recv():
    rendezvous, waiting, later = Rendezvous(), Received(), Received()
    rendezvous.recv_async(KEY, waiting)
    error = RuntimeFailure("node 'a' failed")
    rendezvous.abort(error, origin=CPU0)
    rendezvous.abort(RuntimeFailure("second"), origin=CPU1)   # the first error wins
    rendezvous.send(KEY, 1, False)                              # ignored after the abort
    rendezvous.recv_async(KEY, later)
    assert waiting.calls == [(None, True, error)] and later.calls == [(None, True, error)]
    assert rendezvous.error is error and rendezvous.origin == CPU0


def test_deadlock_is_detected_when_every_participant_is_blocked_or_finished():
    rendezvous, got = Rendezvous(participants=["a", "b"]), Received()
    rendezvous.recv_async(KEY, got, participant="a")
    rendezvous.idle("a", outstanding=2)      # other work still in flight: not blocked
    rendezvous.idle("a", outstanding=1)      # only the Recv: blocked, but b may still send
    assert got.calls == []
    rendezvous.finished("b")                 # nobody left to send
    value, is_dead, error = got.calls[0]
    assert isinstance(error, RuntimeFailure)
    assert "cannot finish: no device sends tensor 'x:0' from CPU:0 to CPU:1" in str(error)


def test_a_served_participant_is_no_longer_blocked():
    rendezvous, got = Rendezvous(participants=["a", "b"]), Received()
    rendezvous.recv_async(KEY, got, participant="a")
    rendezvous.idle("a", outstanding=1)
    rendezvous.send(KEY, 5, False)           # b sends: a is served and busy again
    rendezvous.finished("b")
    assert got.calls == [(5, False, None)] and rendezvous.error is None


def test_describe_key_names_frames_and_iterations():
    key = make_key(CPU0, CPU1, "h:0", (("outer", 2), ("inner", 0)))
    assert describe_key(key) == ("tensor 'h:0' from CPU:0 to CPU:1 in frame 'outer' iteration 2 "
                                 "in frame 'inner' iteration 0")


@pytest.mark.parametrize("recv_first", [False, True])
def test_concurrent_senders_and_receivers_lose_nothing(recv_first):
    rendezvous, count = Rendezvous(), 2000
    keys = [make_key(CPU0, CPU1, "t", (("loop", i),)) for i in range(count)]
    received = {}
    lock = threading.Lock()

    def receiver():
        for i, key in enumerate(keys):
            def record(value, is_dead, error=None, i=i):
                with lock:
                    received[i] = value
            rendezvous.recv_async(key, record)

    def sender():
        for i, key in enumerate(keys):
            rendezvous.send(key, i, False)

    threads = [threading.Thread(target=f) for f in ((receiver, sender) if recv_first else (sender, receiver))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert received == {i: i for i in range(count)}
