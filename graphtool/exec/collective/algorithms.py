"""The collective algorithms, written as one member's side of the exchange.

Each algorithm is a generator run by `Exchange` (exchange.py): it sends with `link.send(rank,
tag, array)` (never blocking) and receives with `piece = yield link.recv(rank, tag)`, which
suspends it until the value is there, without holding a thread. It returns the member's output.

- all-reduce: ring reduce-scatter, then ring all-gather (as NCCL, Horovod and TensorFlow's
  RingReducer do). The flat tensor is cut into one segment per member; a segment bigger than
  CHUNK_BYTES travels in chunks, and each chunk moves on to the next member as soon as it is
  reduced, so a large all-reduce is pipelined rather than done segment by segment. Every member
  sends and receives 2(n-1)/n of the tensor, whatever n is. Rank r ends the reduce-scatter owning
  segment r, fully reduced; the final op (Div) is applied there once, before the all-gather.
- reduce-scatter: the first half; rank r keeps its segment (block r of dim 0).
- all-gather: the second half, on the members' inputs.
- broadcast: a binary tree rooted at the sender, chunks forwarded as they arrive.
- all-to-all: every member sends block k of its input's dim 0 straight to rank k.

Members agree on shapes and dtypes by checking each received piece against their own: the first
member to see a difference fails the step, naming both sides.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# A segment bigger than this travels in chunks of at most this size (TensorFlow's ring reducer
# bounds its chunks at 4 MiB too): big enough that the per-message cost stays small, small enough
# that consecutive members work on different chunks at once.
CHUNK_BYTES = 4 << 20

MERGE = {"Add": np.add, "Mul": np.multiply, "Min": np.minimum, "Max": np.maximum}


class CollectiveMismatch(Exception):
    """Two members of one instance disagree on what they hold (shape, dtype) or on liveness."""


@dataclass(frozen=True)
class Piece:
    """What travels between members: a chunk, and what its sender holds as a whole (checked by
    the receiver). `nbytes` lets the transfer statistics count it as the array it carries."""

    data: np.ndarray | None       # None: the sender's input was dead
    dtype: str
    shape: tuple

    @property
    def nbytes(self) -> int:
        return 0 if self.data is None else int(self.data.nbytes)


class Link:
    """How a member reaches the others: `send(rank, tag, array)`, `recv(rank, tag)` (yielded).
    Implemented by exchange.Exchange over the rendezvous."""

    rank: int
    size: int

    def send(self, rank: int, tag: str, data: np.ndarray | None) -> None:
        raise NotImplementedError

    def recv(self, rank: int, tag: str):
        raise NotImplementedError


def _bounds(total: int, parts: int) -> list[int]:
    """np.array_split's boundaries: `parts` pieces whose sizes differ by at most one."""
    base, extra = divmod(total, parts)
    bounds = [0]
    for i in range(parts):
        bounds.append(bounds[-1] + base + (1 if i < extra else 0))
    return bounds


def _chunks(start: int, stop: int, count: int) -> list[slice]:
    return [slice(start + a, start + b) for a, b in zip(_bounds(stop - start, count), _bounds(stop - start, count)[1:])]


def chunk_count(largest_segment: int, itemsize: int) -> int:
    return max(1, math.ceil(largest_segment * itemsize / CHUNK_BYTES))


def final_divide(values: np.ndarray, size: int) -> np.ndarray:
    """TensorFlow's final_op Div: by the group size, truncating for integers."""
    if np.issubdtype(values.dtype, np.integer):
        return (np.abs(values) // size * np.sign(values)).astype(values.dtype)
    return (values / np.asarray(size, dtype=values.dtype)).astype(values.dtype)


def ring_reduce(link: Link, check, flat: np.ndarray, merge: str, final: str | None, scatter: bool):
    """All-reduce (scatter False: every member gets the whole result) or reduce-scatter (True:
    member r gets segment r) of `flat` (this member's copy, updated in place)."""
    n, r = link.size, link.rank
    nxt, prev = (r + 1) % n, (r - 1) % n
    bounds = _bounds(flat.size, n)
    k = chunk_count(max(b - a for a, b in zip(bounds, bounds[1:])), flat.itemsize)
    chunks = [_chunks(bounds[i], bounds[i + 1], k) for i in range(n)]
    combine = MERGE[merge]
    # Reduce-scatter: at step s, member r passes segment (r - s - 1) on and receives segment
    # (r - s - 2); after n - 1 steps it owns segment r.
    for c in range(k):
        link.send(nxt, f"reduce step 0 chunk {c}", flat[chunks[(r - 1) % n][c]])
    for s in range(n - 1):
        segment = (r - s - 2) % n
        for c in range(k):
            piece = yield link.recv(prev, f"reduce step {s} chunk {c}")
            part = chunks[segment][c]
            check(piece, part.stop - part.start)
            flat[part] = combine(flat[part], piece.data)
            if s < n - 2:
                link.send(nxt, f"reduce step {s + 1} chunk {c}", flat[part])
            elif final == "Div":
                flat[part] = final_divide(flat[part], n)
            if s == n - 2 and not scatter:   # segment r is complete: it starts around the ring
                link.send(nxt, f"gather step 0 chunk {c}", flat[part])
    if scatter:
        return flat[bounds[r]:bounds[r + 1]]
    yield from _ring_gather_steps(link, check, flat, chunks)
    return flat


def ring_gather(link: Link, check, blocks: np.ndarray):
    """All-gather: `blocks` has one row per member, this member's input in row `rank`."""
    n, r = link.size, link.rank
    flat = blocks.reshape(-1)
    per = flat.size // n
    k = chunk_count(per, flat.itemsize)
    chunks = [_chunks(i * per, (i + 1) * per, k) for i in range(n)]
    for c in range(k):
        link.send((r + 1) % n, f"gather step 0 chunk {c}", flat[chunks[r][c]])
    yield from _ring_gather_steps(link, check, flat, chunks, own=r + 1)
    return blocks


def _ring_gather_steps(link: Link, check, flat: np.ndarray, chunks: list, own: int | None = None):
    """The all-gather ring after step 0's sends: at step s member r receives segment
    (own - s - 2), stores it and passes it on. `own` is the segment it sent first, plus one
    (default: its rank plus one, as after a reduce-scatter)."""
    n, r = link.size, link.rank
    start = r + 1 if own is None else own
    nxt, prev = (r + 1) % n, (r - 1) % n
    for s in range(n - 1):
        segment = (start - s - 2) % n
        for c, part in enumerate(chunks[segment]):
            piece = yield link.recv(prev, f"gather step {s} chunk {c}")
            check(piece, part.stop - part.start)
            flat[part] = piece.data
            if s < n - 2:
                link.send(nxt, f"gather step {s + 1} chunk {c}", flat[part])


def tree_broadcast(link: Link, check, flat: np.ndarray, source: int):
    """Binary tree rooted at `source`: each member receives from its parent and forwards every
    chunk to its (at most two) children as soon as it has it."""
    n, r = link.size, link.rank
    relative = (r - source) % n
    children = [(source + q) % n for q in (2 * relative + 1, 2 * relative + 2) if q < n]
    k = chunk_count(flat.size, flat.itemsize)
    chunks = _chunks(0, flat.size, k)
    for c, part in enumerate(chunks):
        if relative != 0:
            parent = (source + (relative - 1) // 2) % n
            piece = yield link.recv(parent, f"broadcast chunk {c}")
            check(piece, part.stop - part.start)
            flat[part] = piece.data
        for child in children:
            link.send(child, f"broadcast chunk {c}", flat[part])
    return flat


def all_to_all(link: Link, check, blocks: np.ndarray):
    """`blocks` has one row per member: row k goes to rank k; the output's row k comes from rank k."""
    n, r = link.size, link.rank
    out = np.empty_like(blocks)
    out[r] = blocks[r]
    for k in range(n):
        if k != r:
            link.send(k, f"all-to-all block {r}", blocks[k].reshape(-1))
    for k in range(n):
        if k != r:
            piece = yield link.recv(k, f"all-to-all block {k}")
            check(piece, out[k].size)
            out[k] = piece.data.reshape(out[k].shape)
    return out
