"""The rendezvous of one task's share of a cluster step: local where it can be, remote where it must.

A key (send_device, recv_device, tensor_name, frame_iter) is the same as in a local run. A `_Send`
whose receiving device belongs to this task meets its `_Recv` here, as in a one-process run; one
whose receiver is on another task is handed to `forward`, which delivers it to that task's
rendezvous (TensorFlow's RecvTensor, pushed instead of pulled: the sender does not wait for the
receiver to ask). A value from another task arrives through `deliver`. Dead values travel too.

Only the master sees every task, so only it can tell a deadlock across tasks from a slow peer:
this rendezvous never declares one itself; it reports whether all of its local participants are
blocked on Recvs (`progress`) and the master decides.
"""
from __future__ import annotations

import threading
from typing import Callable

from ..exec.rendezvous import Rendezvous, describe_key

Forward = Callable[[tuple, object, bool], None]


class RemoteRendezvous(Rendezvous):
    def __init__(self, local_devices: list[str], participants: list, forward: Forward):
        super().__init__(participants=participants)
        self._local_devices = frozenset(local_devices)
        self._forward = forward
        self._count_lock = threading.Lock()
        self.sent_remote = 0
        self.received_remote = 0
        self.bytes_sent = 0

    def send(self, key: tuple, value, is_dead: bool = False) -> None:
        if key[1] in self._local_devices:
            super().send(key, value, is_dead)
            return
        if self.error is not None:
            return
        with self._count_lock:
            self.sent_remote += 1
            self.bytes_sent += int(getattr(value, "nbytes", 0) or 0)
        self._forward(key, value, is_dead)

    def deliver(self, key: tuple, value, is_dead: bool) -> None:
        """A value another task sent to a device of this one."""
        with self._count_lock:
            self.received_remote += 1
        super().send(key, value, is_dead)

    def _deadlock_error(self):
        return None   # the master decides, from every task's progress

    def progress(self) -> dict:
        """What the master's deadlock check needs: whether every local participant is finished
        or idle on Recvs only, the remote transfers so far, and the keys still awaited."""
        with self._lock:
            participants = self._participants or set()
            stuck = len(self._blocked) + len(self._finished) >= len(participants)
            finished = len(self._finished) >= len(participants)
            waiting = [describe_key(key) for key in list(self._waiters)[:8]]
            waiting_keys = list(self._waiters)[:64]
        return {"stuck": stuck, "finished": finished, "sent": self.sent_remote,
                "received": self.received_remote, "waiting": waiting, "waiting_keys": waiting_keys}
