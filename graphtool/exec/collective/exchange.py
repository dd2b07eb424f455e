"""One member's run of a collective, over the step's rendezvous.

The executor starts a member like a `_Recv` (exec/step.py): it counts as in flight and holds no
thread. `start_member` checks the input, then drives the member's algorithm (algorithms.py), a
generator that yields each receive it needs: `Exchange` registers the receive with the
rendezvous and resumes the generator when the piece arrives, on whichever thread delivers it (or
at once, in a loop, when it is already there: no recursion however many chunks). One receive is
outstanding at a time, registered under the executor's name, so the rendezvous's deadlock check
(and on a cluster the master's) sees a member waiting for a peer that will never send.

Every member first tells its ring successor what it holds (dtype, shape, or that its input is
dead) and checks what its predecessor holds: members that disagree fail the step, naming both;
if every member is dead (the collective sits in an untaken cond branch on every device) the
output is dead, as any op's would be; if only some are, the step fails instead of waiting
forever. `timeout_seconds` bounds the member's wait, as in TensorFlow.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass

import numpy as np

from ...errors import RuntimeFailure
from ..rendezvous import make_key
from .algorithms import CollectiveMismatch, Link, Piece, all_to_all, ring_gather, ring_reduce, tree_broadcast
from .spec import CollectiveSpec

Finish = Callable[[object, BaseException | None], None]
DEAD_RESULT = object()   # what a member's run returns when every member was dead


@dataclass(frozen=True)
class _Receive:
    rank: int
    tag: str


def _describe(dtype: str, shape: tuple) -> str:
    return f"{dtype}[{','.join(str(d) for d in shape)}]"


class Exchange(Link):
    """The link of one member's run (rendezvous keys carry the step's frame and iteration)."""

    def __init__(self, spec: CollectiveSpec, shape: tuple, rendezvous, participant, frame_iter: tuple,
                 finish: Finish):
        self.spec, self.rank, self.size = spec, spec.rank, len(spec.devices)
        self.shape = shape   # what this member holds (a broadcast receiver: what it expects)
        self._rendezvous, self._participant, self._frame_iter = rendezvous, participant, frame_iter
        self._finish_step = finish
        self._lock = threading.Lock()
        self._finished = False
        self._timer: threading.Timer | None = None
        self._generator: Generator | None = None
        self.waiting_for = ""   # what the member waits for (for a timeout's message)

    # --- Link ------------------------------------------------------------------------------------
    def _key(self, sender: int, receiver: int, tag: str) -> tuple:
        devices = self.spec.devices
        return make_key(devices[sender], devices[receiver], f"{self.spec.title} ({tag})", self._frame_iter)

    def send(self, rank: int, tag: str, data: np.ndarray | None) -> None:
        # A copy: in one process the peer gets the array itself, and this member goes on
        # writing into its buffer.
        piece = Piece(None if data is None else np.array(data, copy=True), self.spec.dtype.name, self.shape)
        self._rendezvous.send(self._key(self.rank, rank, tag), piece)

    def recv(self, rank: int, tag: str) -> _Receive:
        return _Receive(rank, tag)

    # --- driving the generator ----------------------------------------------------------------
    def run(self, generator: Generator) -> None:
        self._generator = generator
        if self.spec.timeout > 0:
            self._timer = threading.Timer(self.spec.timeout, self._timed_out)
            self._timer.daemon = True
            self._timer.start()
        self._advance(None)

    def _advance(self, value) -> None:
        """Resume the generator with `value` until it waits for a piece not yet here, or ends."""
        assert self._generator is not None
        while not self._finished:
            try:
                request = self._generator.send(value)
            except StopIteration as stop:
                self._finish(stop.value, None)
                return
            except BaseException as exc:
                self._finish(None, exc)
                return
            got: list = []
            pending = [True]   # while recv_async runs, an arrival is handled by this loop
            lock = threading.Lock()

            def arrived(piece, is_dead: bool, error: BaseException | None = None) -> None:
                with lock:
                    if pending[0]:
                        got.append((piece, error))
                        return
                self._arrived(piece, error)

            self.waiting_for = f"{self.spec.devices[request.rank]} ({request.tag})"
            self._rendezvous.recv_async(self._key(request.rank, self.rank, request.tag), arrived, self._participant)
            with lock:
                pending[0] = False
            if not got:
                return   # `arrived` resumes the generator from the sender's thread
            piece, error = got[0]
            if error is not None:
                self._finish(None, error)
                return
            value = piece

    def _arrived(self, piece, error: BaseException | None) -> None:
        if error is not None:
            self._finish(None, error)
        else:
            self._advance(piece)

    def _timed_out(self) -> None:
        self._finish(None, RuntimeFailure(f"{self.spec.title} timed out after {self.spec.timeout:g} s "
                                          f"(timeout_seconds) waiting for {self.waiting_for}"))

    def _finish(self, result, error: BaseException | None) -> None:
        with self._lock:
            if self._finished:
                return
            self._finished = True
        if self._timer is not None:
            self._timer.cancel()
        self._finish_step(result, error)


def member(link: Exchange, value: np.ndarray | None):
    """The member's whole run: the agreement on what each holds, then the algorithm. `value` is
    the input as a host array (None when dead; a broadcast receiver's is an empty buffer)."""
    spec = link.spec
    n, r = link.size, link.rank
    dead = value is None
    if n > 1:
        link.send((r + 1) % n, "what each member holds", None if dead else np.empty(0, spec.dtype))
        header = yield link.recv((r - 1) % n, "what each member holds")
        _agree(link, header, dead)
    if dead:
        return DEAD_RESULT
    assert value is not None

    def check(piece: Piece, size: int) -> None:
        if piece.data is None or piece.data.size != size:   # agreed above, so only a broken peer
            raise CollectiveMismatch(f"{spec.title}: a piece from a peer has the wrong size")

    out_shape = output_shape(spec.kind, link.shape, n)
    if spec.kind in ("reduce", "reduce_scatter"):
        flat = np.array(value, copy=True).reshape(-1)
        if n == 1:   # the reduction of one tensor is the tensor (and Div by one changes nothing)
            return flat.reshape(out_shape)
        reduced = yield from ring_reduce(link, check, flat, spec.merge, spec.final, spec.kind == "reduce_scatter")
        return reduced.reshape(out_shape)
    if spec.kind == "gather":
        blocks = np.empty((n, value.size), dtype=value.dtype)
        blocks[r] = value.reshape(-1)
        if n > 1:
            blocks = yield from ring_gather(link, check, blocks)
        return blocks.reshape(out_shape)
    if spec.kind == "all_to_all":
        blocks = np.array(value, copy=True).reshape(n, -1)
        if n > 1:
            blocks = yield from all_to_all(link, check, blocks)
        return blocks.reshape(out_shape)
    assert spec.kind == "broadcast"
    flat = np.array(value, copy=True).reshape(-1)
    if n > 1:
        flat = yield from tree_broadcast(link, check, flat, spec.source)
    return flat.reshape(out_shape)


def output_shape(kind: str, shape: tuple, size: int) -> tuple:
    """A member's output shape, from what it holds: dim 0 grows for a gather and shrinks for a
    reduce-scatter (the caller has checked it divides)."""
    if kind == "gather":
        return (shape[0] * size, *shape[1:])
    if kind == "reduce_scatter":
        return (shape[0] // size, *shape[1:])
    return shape


def _agree(link: Exchange, header: Piece, dead: bool) -> None:
    """Compare this member with its predecessor (whose device is named in the error)."""
    spec = link.spec
    previous = spec.devices[(spec.rank - 1) % len(spec.devices)]
    here = spec.devices[spec.rank]
    if (header.data is None) != dead:
        dead_one, live_one = (here, previous) if dead else (previous, here)
        raise CollectiveMismatch(
            f"{spec.title}: the member on {dead_one} has a dead input (a cond branch not taken) but the one "
            f"on {live_one} runs; every member must run, or none")
    if dead:
        return
    if header.dtype != spec.dtype.name or tuple(header.shape) != tuple(link.shape):
        raise CollectiveMismatch(f"{spec.title}: the member on {previous} holds {_describe(header.dtype, header.shape)} "
                                 f"but the one on {here} holds {_describe(spec.dtype.name, link.shape)}")
