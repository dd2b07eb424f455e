"""The rendezvous: where a `_Send` on one device meets the `_Recv` on another.

One Rendezvous serves one step of a multi-device run. A key names one transfer of one value:

    (send_device, recv_device, tensor_name, frame_iter)

`frame_iter` is the tuple of (frame_name, iteration) pairs from the root frame down to the frame of
the node doing the transfer, so every iteration of a loop, and every iteration of a nested loop
within each outer iteration, gets its own key. Both devices compute the same tuple because
partitioning gives each device a copy of the loop's control skeleton with the same frame names.

`send` never blocks: the value is stored, or handed straight to a Recv already waiting for it.
`recv_async` never blocks either: it registers a callback that runs when the value is there (at
once, on the caller's thread, if it already is; otherwise on the sender's thread). Values on one
key are delivered in the order they were sent.

A failed step calls `abort(error)`: every waiting callback, and every later `recv_async`, gets the
error, so no device waits forever on a peer that has stopped. When the participants are named
(`Rendezvous(participants=...)`), the rendezvous also notices a deadlock: every participant has
either finished or is idle with only Recvs outstanding, so nobody can ever send again; it then
aborts with an error naming the values that never came.
"""
from __future__ import annotations

import threading
from collections import deque
from typing import Callable, Hashable

from ..errors import RuntimeFailure

# callback(value, is_dead) on arrival; callback(None, True, error) when the step is aborted.
RecvCallback = Callable[..., None]


def make_key(send_device: str, recv_device: str, tensor_name: str, frame_iter: tuple = ()) -> tuple:
    """A rendezvous key; `frame_iter` is ((frame_name, iteration), ...) from the root down."""
    return (send_device, recv_device, tensor_name, tuple(frame_iter))


def describe_key(key: tuple, short: Callable[[str], str] | None = None) -> str:
    """'x:0' from CPU:0 to CPU:1 (in loop/while iteration 3), for error messages; `short`
    spells the device names (default: the part after /device:)."""
    short = short or _short
    send_device, recv_device, tensor_name, frame_iter = key
    where = "".join(f" in frame '{frame}' iteration {it}" for frame, it in frame_iter)
    # A collective's pieces are named for people already ("collective group 1 instance 3 (...)").
    what = tensor_name if tensor_name.startswith("collective ") else f"tensor '{tensor_name}'"
    return f"{what} from {short(send_device)} to {short(recv_device)}{where}"


def _short(device: str) -> str:
    return device.rsplit("/device:", 1)[-1] if "/device:" in device else device


class Rendezvous:
    """A thread-safe table of values sent but not yet received, and receivers not yet served."""

    def __init__(self, participants: list[Hashable] | None = None):
        self._lock = threading.Lock()
        self._values: dict[tuple, deque] = {}        # key -> deque of (value, is_dead)
        self._waiters: dict[tuple, deque] = {}       # key -> deque of (callback, participant)
        self._error: BaseException | None = None
        self._origin: Hashable = None
        # Deadlock detection (only with named participants): un-served Recvs per participant,
        # and who is idle on Recvs only or finished.
        self._participants = set(participants) if participants is not None else None
        self._waiting: dict[Hashable, int] = {p: 0 for p in participants or ()}
        self._blocked: set = set()
        self._finished: set = set()

    @property
    def error(self) -> BaseException | None:
        """The error the step was aborted with (the first one), or None."""
        return self._error

    @property
    def origin(self) -> Hashable:
        """The participant whose failure aborted the step (None: unknown, or a deadlock)."""
        return self._origin

    # --- transfers ------------------------------------------------------------------------------
    def send(self, key: tuple, value, is_dead: bool = False) -> None:
        """Deliver `value` (or a dead marker) under `key`; never blocks. Ignored after an abort."""
        with self._lock:
            if self._error is not None:
                return
            waiters = self._waiters.get(key)
            if not waiters:
                self._values.setdefault(key, deque()).append((value, is_dead))
                return
            callback, participant = waiters.popleft()
            if not waiters:
                del self._waiters[key]
            self._served(participant)
        # Outside the lock: the callback may copy the value or hand it to another executor.
        callback(value, is_dead)

    def recv_async(self, key: tuple, callback: RecvCallback, participant: Hashable = None) -> None:
        """Call `callback(value, is_dead)` when the value under `key` arrives (at once if it is
        there), or `callback(None, True, error)` if the step is aborted first. `participant` (the
        receiving executor) lets the rendezvous tell a deadlock from a slow peer."""
        with self._lock:
            error = self._error
            values = self._values.get(key)
            if error is None and not values:
                self._waiters.setdefault(key, deque()).append((callback, participant))
                if participant in self._waiting:
                    self._waiting[participant] += 1
                return
            if error is None:
                assert values   # (returned above when nothing had been sent)
                value, is_dead = values.popleft()
                if not values:
                    del self._values[key]
        if error is not None:
            callback(None, True, error)
        else:
            callback(value, is_dead)

    # --- failure --------------------------------------------------------------------------------
    def abort(self, error: BaseException, origin: Hashable = None) -> None:
        """Fail the step: wake every waiting Recv with `error` (the first abort's error wins).
        `origin` names the participant that failed, for the error message."""
        with self._lock:
            if self._error is not None:
                return
            self._error, self._origin = error, origin
            waiters, self._waiters = self._waiters, {}
            self._values.clear()
        for queue in waiters.values():
            for callback, _ in queue:
                callback(None, True, error)

    # --- deadlock detection ---------------------------------------------------------------------
    def idle(self, participant: Hashable, outstanding: int) -> None:
        """`participant` has nothing ready to run and `outstanding` operations in flight. If they
        are all Recvs still waiting, it is blocked; when every participant is blocked or finished,
        no value can ever arrive, and the step is aborted with an error naming what is missing."""
        if self._participants is None:
            return
        with self._lock:
            if self._waiting.get(participant) != outstanding:
                return          # it still has work of its own in flight, or a value has arrived
            self._blocked.add(participant)
            error = self._deadlock_error()
        if error is not None:
            self.abort(error)

    def finished(self, participant: Hashable) -> None:
        """`participant` has completed its part of the step."""
        if self._participants is None:
            return
        with self._lock:
            self._finished.add(participant)
            self._blocked.discard(participant)
            error = self._deadlock_error()
        if error is not None:
            self.abort(error)

    def _served(self, participant: Hashable) -> None:
        if participant in self._waiting:
            self._waiting[participant] -= 1
            self._blocked.discard(participant)

    def _deadlock_error(self) -> RuntimeFailure | None:
        """Called with the lock held: the error to abort with when nobody can make progress."""
        if self._error is not None or not self._blocked or self._participants is None:
            return None   # (only named participants are ever blocked)
        if len(self._blocked) + len(self._finished) < len(self._participants):
            return None
        missing = [describe_key(key) for key in self._waiters]
        shown = "; ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
        return RuntimeFailure(f"the graph cannot finish: no device sends {shown}",
                              hint="every _Recv needs a _Send with the same tensor_name, send_device "
                                   "and recv_device that runs in the same step")
