"""Kernels for queues (FIFOQueueV2, PaddingFIFOQueueV2, RandomShuffleQueueV2 and their ops).

A queue is a session resource (it outlives the step that created it, as TensorFlow's resource
manager keeps it): a queue op looks it up, or makes it, under (container, name), where the name is
the `shared_name` attr or, for a private queue, "_<N>_<node name>" as TensorFlow names it, made once
per session. Its output is a handle the other ops resolve in the same session.

Enqueues, dequeues and closes are asynchronous kernels (registry.py): each becomes an *attempt* in
the queue's enqueue or dequeue line, and the queue runs the attempts at the front of both lines
until neither makes progress, as TensorFlow's QueueBase::FlushUnlocked does. An attempt that cannot
finish waits in its line without holding a thread; the enqueue or dequeue that lets it progress
(in any step, on any thread) runs it and calls its `done`. Semantics carried over from TensorFlow
(queue_base.cc, fifo_queue.cc, padding_fifo_queue.cc, random_shuffle_queue_op.cc):
- an enqueue on a closed queue fails with Cancelled "<Kind> '<name>' is closed."; EnqueueMany
  inserts element by element, as room appears;
- a dequeue of n on a closed queue holding fewer than n fails with OutOfRange "<Kind> '<name>' is
  closed and has insufficient elements (requested n, current size k)" (elements a DequeueMany had
  taken go back); DequeueUpTo returns what is left instead, if anything is;
- a close without cancel_pending_enqueues queues behind the pending enqueues (they finish first);
  closing a closed queue that way fails with Cancelled "Queue '<name>' is already closed."; with
  cancel_pending_enqueues the queue closes at once and pending enqueues fail (Cancelled);
- RandomShuffleQueue keeps min_after_dequeue elements until closed; each dequeue takes element
  `u % size` (u: the next uint32 of Philox(seed, seed2), one sample at a time, as TensorFlow's
  SingleSampleAdapter) and moves the last element into its place;
- PaddingFIFOQueue's DequeueMany pads each component to the largest shape in the batch with
  zeros (empty strings);
- a waiting attempt stops (Cancelled) when its step fails or times out, or its session closes;
- `timeout_ms` is accepted and ignored, as in TensorFlow ("not supported yet"): a step's
  --timeout is what bounds a wait.
"""
from __future__ import annotations

import functools
import itertools
import os
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import CancelledError, OutOfRangeError
from ...shapes import Shape
from .philox import Philox
from .gpu_host_memory import device_holds, host_context, on_host
from .registry import CPU, GPU, KernelError, kernel
from .tensor_array import type_name

_DEFAULT_CONTAINER = "localhost"
_names = itertools.count()   # process-wide, as TensorFlow's ContainerInfo counter

# What an attempt's run function says (TensorFlow's RunResult).
NO_PROGRESS, PROGRESS, COMPLETE = 0, 1, 2
_INT32_MAX = 2 ** 31 - 1


class QueueHandle:
    """What a V2 queue op's scalar resource output holds."""

    __slots__ = ("container", "name")

    def __init__(self, container: str, name: str):
        self.container, self.name = container, name

    def __repr__(self) -> str:
        return f"QueueHandle({self.container}/{self.name})"


class Attempt:
    """One enqueue, dequeue or close waiting in a queue's line."""

    __slots__ = ("requested", "run", "done", "tokens", "cancelled", "batch", "outcome", "error")

    def __init__(self, requested: int, run: Callable[["Attempt"], int], done: Callable):
        self.requested = requested   # elements still to move
        self.run = run
        self.done = done             # the kernel's done callback
        self.tokens: list = []       # (CancellationManager, token)
        self.cancelled = False
        self.batch: list = []        # elements a DequeueMany has taken so far
        self.outcome: tuple = ()
        self.error: BaseException | None = None


class Queue:
    """TensorFlow's QueueBase + FIFOQueue."""

    kind = "FIFOQueue"

    def __init__(self, name: str, capacity: int, dtypes: list, shapes: list[Shape]):
        self.name = name
        self.capacity = _INT32_MAX if capacity < 0 else capacity
        self.declared_capacity = capacity
        self.dtypes = [np.dtype(d.numpy) for d in dtypes]
        self.dtype_names = [d.name for d in dtypes]
        self.shapes = shapes
        self.lock = threading.Lock()
        self.closed = False
        self.elements: Any = deque()   # (a list in ShuffleQueue)
        self.enqueues: deque[Attempt] = deque()
        self.dequeues: deque[Attempt] = deque()

    # --- what the op kernels call -------------------------------------------------------------
    def size(self) -> int:
        with self.lock:
            return len(self.elements)

    def enqueue(self, managers, elements: list[tuple], done) -> None:
        """Insert `elements` (tuples of component arrays), waiting for room as needed."""
        if not elements:
            done()
            return

        def run(attempt: Attempt) -> int:
            if self.closed:
                attempt.error = CancelledError(f"{self.kind} '{self.name}' is closed.")
                return COMPLETE
            result = NO_PROGRESS
            while len(self.elements) < self.capacity:
                result = PROGRESS
                self.elements.append(elements[len(elements) - attempt.requested])
                attempt.requested -= 1
                if attempt.requested == 0:
                    return COMPLETE
            return result

        self._add(self.enqueues, Attempt(len(elements), run, done), managers, "Enqueue")

    def dequeue(self, managers, count: int, allow_smaller: bool, many: bool, done) -> None:
        """Take `count` elements (one element unbatched when not `many`)."""
        if many and count == 0:
            done(self._batch_outputs([]))
            return

        def run(attempt: Attempt) -> int:
            size = len(self.elements)
            if self.closed and size < attempt.requested:
                if attempt.batch:   # put back what this attempt took: it cannot complete
                    self._restore(attempt.batch)
                    attempt.requested += len(attempt.batch)
                    attempt.batch = []
                    size = len(self.elements)
                if allow_smaller and size > 0:
                    attempt.requested = size
                else:
                    if allow_smaller and self.enqueues:
                        return PROGRESS   # a pending enqueue may still bring elements
                    attempt.error = OutOfRangeError(
                        f"{self.kind} '{self.name}' is closed and has insufficient elements (requested "
                        f"{attempt.requested}, current size {size})")
                    return COMPLETE
            available = self._available(size)
            result = NO_PROGRESS
            while available > 0:
                result = PROGRESS
                attempt.batch.append(self._take())
                available -= 1
                attempt.requested -= 1
                if attempt.requested == 0:
                    attempt.outcome = self._batch_outputs(attempt.batch) if many else attempt.batch[0]
                    return COMPLETE
            return result

        self._add(self.dequeues, Attempt(1 if not many else count, run, done), managers, "Dequeue")

    def close(self, cancel_pending_enqueues: bool, done) -> None:
        if cancel_pending_enqueues:
            cancelled = []
            with self.lock:
                self.closed = True
                for attempt in self.enqueues:
                    if not attempt.cancelled:
                        attempt.cancelled = True
                        cancelled.append(attempt)
            for attempt in cancelled:
                self._finish(attempt, CancelledError("Enqueue operation was cancelled"))
            done()
            self._flush()
            return

        def run(attempt: Attempt) -> int:
            if self.closed:
                attempt.error = CancelledError(f"Queue '{self.name}' is already closed.")
            else:
                self.closed = True
            return COMPLETE

        self._add(self.enqueues, Attempt(0, run, done), (), "Close")

    def session_closed(self, error: BaseException) -> None:
        """The session is closing: the queue closes and every waiting attempt fails."""
        with self.lock:
            self.closed = True
            waiting = [a for line in (self.enqueues, self.dequeues) for a in line if not a.cancelled]
            for attempt in waiting:
                attempt.cancelled = True
            self.enqueues.clear()
            self.dequeues.clear()
        for attempt in waiting:
            self._finish(attempt, error)

    # --- the lines ----------------------------------------------------------------------------
    def _add(self, line: deque, attempt: Attempt, managers, what: str) -> None:
        refused = False
        with self.lock:
            for manager in managers:
                token = manager.register(lambda error, a=attempt: self._cancel(a, what, error))
                if token is None:   # the step or session is already cancelled
                    for registered, registered_token in attempt.tokens:
                        registered.deregister(registered_token)
                    attempt.tokens = []
                    refused = True
                    break
                attempt.tokens.append((manager, token))
            if not refused:
                line.append(attempt)   # it waits in its line until it can run
        if refused:
            attempt.done(error=CancelledError(f"{what} operation was cancelled"))
            return
        self._flush()

    def _cancel(self, attempt: Attempt, what: str, cause: BaseException) -> None:
        """Cancel a waiting attempt: a closing session's CancelledError is its error, anything
        else (its step failed or timed out: the step reports that) TF's "... was cancelled"."""
        with self.lock:
            if attempt.cancelled or (attempt not in self.enqueues and attempt not in self.dequeues):
                return
            attempt.cancelled = True
            if attempt.batch:   # a DequeueMany's elements go back
                self._restore(attempt.batch)
                attempt.batch = []
        self._finish(attempt, cause if isinstance(cause, CancelledError)
                     else CancelledError(f"{what} operation was cancelled"))
        self._flush()

    def _flush(self) -> None:
        finished: list[Attempt] = []
        with self.lock:
            changed = True
            while changed:
                changed = self._try_line(self.enqueues, finished)
                changed = self._try_line(self.dequeues, finished) or changed
        for attempt in finished:
            self._finish(attempt, attempt.error)

    def _try_line(self, line: deque, finished: list[Attempt]) -> bool:
        progress = False
        while line:
            attempt = line[0]
            if attempt.cancelled:
                line.popleft()
                continue
            try:
                result = attempt.run(attempt)
            except Exception as exc:   # a bad element (e.g. a padding failure): this attempt fails
                attempt.error, result = exc, COMPLETE
            if result == NO_PROGRESS:
                break
            progress = True
            if result == PROGRESS:
                break
            line.popleft()
            finished.append(attempt)
        return progress

    @staticmethod
    def _finish(attempt: Attempt, error: BaseException | None) -> None:
        for manager, token in attempt.tokens:
            manager.deregister(token)
        attempt.tokens = []
        if error is not None:
            attempt.done(error=error)
        else:
            attempt.done(attempt.outcome)

    # --- what the kinds of queue change -------------------------------------------------------
    def _available(self, size: int) -> int:
        """How many elements a dequeue may take now."""
        return size

    def _take(self) -> tuple:
        return self.elements.popleft()

    def _restore(self, batch: list[tuple]) -> None:
        self.elements.extendleft(reversed(batch))

    def _batch_outputs(self, batch: list[tuple]) -> tuple:
        outputs = []
        for index, dtype in enumerate(self.dtypes):
            if batch:
                outputs.append(np.stack([element[index] for element in batch]))
            else:
                outputs.append(np.zeros([0] + [int(d or 0) for d in self.shapes[index].as_list()], dtype=dtype))
        return tuple(outputs)

    # --- checks -------------------------------------------------------------------------------
    def check_new(self) -> None:
        """TensorFlow's Initialize checks, on the queue's attrs."""
        if self.shapes and len(self.shapes) != len(self.dtypes):
            raise KernelError(f"Different number of component types.  Types: {', '.join(self.dtype_names)}, "
                              f"Shapes: {', '.join(str(s) for s in self.shapes)}")
        for shape in self.shapes:
            if not shape.fully_defined:
                raise KernelError(f"{self.kind} requires fully defined shapes (the 'shapes' attr), got {shape}")

    def check_matches(self, kind: str, capacity: int, dtypes: list, shapes: list[Shape]) -> None:
        """A shared queue looked up by another node must be declared the same."""
        if kind != self.kind:
            raise KernelError(f"Shared queue '{self.name}' is a {self.kind}, but the node declares a {kind}")
        if capacity != self.declared_capacity:
            raise KernelError(f"Shared queue '{self.name}' has capacity {self.declared_capacity} but requested "
                              f"capacity was {capacity}")
        names = [d.name for d in dtypes]
        if names != self.dtype_names:
            raise KernelError(f"Shared queue '{self.name}' has component types {', '.join(self.dtype_names)} but "
                              f"requested component types were {', '.join(names)}")
        if [s.as_list() for s in shapes] != [s.as_list() for s in self.shapes]:
            raise KernelError(f"Shared queue '{self.name}' has component shapes "
                              f"{[str(s) for s in self.shapes]} but requested component shapes were "
                              f"{[str(s) for s in shapes]}")

    def check_tuple(self, components: tuple) -> tuple:
        """One element to enqueue: its components checked against the queue's types and shapes,
        copied (the queue keeps them past the step)."""
        self._check_types(components)
        for index, value in enumerate(components):
            if self.shapes and not self._shape_ok(index, Shape(value.shape)):
                raise KernelError(f"Shape mismatch in tuple component {index}. Expected {self.shapes[index]}, "
                                  f"got {Shape(value.shape)}")
        return tuple(_private(value) for value in components)

    def check_many(self, components: tuple) -> list[tuple]:
        """The elements of a batch to enqueue (EnqueueMany): dimension 0 of every component."""
        self._check_types(components)
        batch = None
        for index, value in enumerate(components):
            if value.ndim == 0:
                raise KernelError(f"Expected batch of {self.kind} components, component {index} is a scalar "
                                  f"(EnqueueMany needs a leading batch dimension)")
            if batch is None:
                batch = value.shape[0]
            elif value.shape[0] != batch:
                raise KernelError(f"All input tensors must have the same size in the 0th dimension. "
                                  f"Component 0 has {batch}, and component {index} has {value.shape[0]}")
            if self.shapes and not self._shape_ok(index, Shape(value.shape[1:])):
                raise KernelError(f"Shape mismatch in tuple component {index}. Expected "
                                  f"{Shape([batch]).concatenate(self.shapes[index])}, got {Shape(value.shape)}")
        copies = [_private(value) for value in components]
        return [tuple(copy[i, ...] for copy in copies) for i in range(batch or 0)]   # 0-d arrays, not scalars

    def check_many_dequeue(self) -> None:
        if not self.shapes:
            raise KernelError(f"{self.kind}'s DequeueMany and DequeueUpTo require the components to have "
                              f"specified shapes.")

    def _check_types(self, components: tuple) -> None:
        got = [value.dtype for value in components]
        if len(got) != len(self.dtypes) or any(g != want for g, want in zip(got, self.dtypes)):
            have = ", ".join(type_name(g) for g in got)
            raise KernelError(f"Signature mismatch, have: resource, {have} expected: resource, "
                              f"{', '.join(self.dtype_names)}")

    def _shape_ok(self, index: int, shape: Shape) -> bool:
        return shape.as_list() == self.shapes[index].as_list()


class PaddingQueue(Queue):
    """TensorFlow's PaddingFIFOQueue: shapes may be partial; DequeueMany pads."""

    kind = "PaddingFIFOQueue"

    def check_new(self) -> None:
        if len(self.shapes) != len(self.dtypes):
            raise KernelError(f"Shapes must be provided for all components, but received {len(self.dtypes)} dtypes "
                              f"and {len(self.shapes)} shapes.")
        for shape in self.shapes:
            if not shape.known_rank:
                raise KernelError(f"{self.kind} requires shapes of known rank, got {shape}")

    def check_many_dequeue(self) -> None:
        return None   # partial shapes are what it is for

    def _shape_ok(self, index: int, shape: Shape) -> bool:
        return self.shapes[index].is_compatible_with(shape)

    def _batch_outputs(self, batch: list[tuple]) -> tuple:
        outputs = []
        for index, dtype in enumerate(self.dtypes):
            values = [element[index] for element in batch]
            declared = self.shapes[index].as_list()
            if values:
                shape = [max(v.shape[d] for v in values) for d in range(len(declared))]
            else:
                shape = [0 if d is None else d for d in declared]
            fill = b"" if dtype == object else 0
            out = np.full((len(values), *shape), fill, dtype=dtype)
            for row, value in enumerate(values):
                out[row][tuple(slice(0, n) for n in value.shape)] = value
            outputs.append(out)
        return tuple(outputs)


class ShuffleQueue(Queue):
    """TensorFlow's RandomShuffleQueue."""

    kind = "RandomShuffleQueue"

    def __init__(self, name, capacity, dtypes, shapes, min_after_dequeue: int, seed: int, seed2: int):
        super().__init__(name, capacity, dtypes, shapes)
        self.min_after_dequeue = min_after_dequeue
        self.seeds = (seed, seed2)
        if seed == 0 and seed2 == 0:   # both unset: random seeds
            seed, seed2 = (int.from_bytes(os.urandom(8), "little") for _ in range(2))
        self.generator = Philox.from_seeds(seed, seed2)
        self.samples: list[int] = []
        self.calls = 0
        self.elements = []   # random access (a list, where the FIFO queues keep a deque)

    def check_matches(self, kind, capacity, dtypes, shapes, min_after_dequeue=0, seeds=(0, 0)) -> None:
        super().check_matches(kind, capacity, dtypes, shapes)
        if min_after_dequeue != self.min_after_dequeue:
            raise KernelError(f"Shared queue '{self.name}' has min_after_dequeue {self.min_after_dequeue} but "
                              f"requested min_after_dequeue was {min_after_dequeue}")
        if tuple(seeds) != self.seeds:
            raise KernelError(f"Shared queue '{self.name}' has random seeds {self.seeds} but requested seeds "
                              f"were {tuple(seeds)}")

    def _next_uint32(self) -> int:
        if not self.samples:   # one Philox call gives four samples, used one at a time
            self.samples = [int(v) for v in self.generator.blocks(1, start=self.calls)[0]][::-1]
            self.calls += 1
        return self.samples.pop()

    def _available(self, size: int) -> int:
        return size if self.closed else size - self.min_after_dequeue

    def _take(self) -> tuple:
        elements = self.elements
        index = self._next_uint32() % len(elements)
        element = elements[index]
        elements[index] = elements[-1]
        elements.pop()
        return element

    def _restore(self, batch: list[tuple]) -> None:
        self.elements.extend(reversed(batch))


def host_kernel(op: str, asynchronous: bool = False):
    """Register the decorated function as `op`'s CPU kernel and, running from host memory, as its
    GPU kernel (TensorFlow keeps queues, readers and their handles in host memory): device inputs
    are copied to the host, outputs a device can hold are uploaded (for an asynchronous kernel,
    when it finishes)."""
    def register(fn):
        kernel(op, devices=(CPU,), asynchronous=asynchronous)(fn)
        if asynchronous:
            @functools.wraps(fn)   # keeps the signature, so the same attrs are bound
            def gpu_async(ctx, done, *inputs, **attrs):
                device = ctx.device

                def uploaded(outputs=(), error=None):
                    if error is None:
                        try:
                            outputs = tuple(device.to_device(out) if device_holds(out.dtype) else out
                                            for out in outputs)
                        except Exception as exc:
                            outputs, error = (), exc
                    done(outputs, error=error)

                fn(host_context(ctx), uploaded, *(_on_host(ctx, value) for value in inputs), **attrs)
            kernel(op, devices=(GPU,), asynchronous=True)(gpu_async)
        else:
            kernel(op, devices=(GPU,))(on_host(fn))
        return fn
    return register


def _on_host(ctx, value):
    return value if isinstance(value, np.ndarray) else ctx.xp.asnumpy(value)


def _private(value) -> np.ndarray:
    array = np.array(value, copy=True)
    array.flags.writeable = False
    return array


# --- op kernels ---------------------------------------------------------------------------------

def _handle_output(container: str, name: str, legacy: bool):
    if legacy:   # the Ref(string) handle of the legacy ops: [container, name]
        return np.array([container.encode(), name.encode()], dtype=object)
    handle = np.empty((), dtype=object)
    handle[()] = QueueHandle(container, name)
    return handle


def session_resource(ctx, kind: str, container: str, shared_name: str, make: Callable[[str], Any]):
    """(container, name, resource): the session's `kind` resource (a queue, a reader) a resource
    op names, made by `make(name)` on first use. Its name is `shared_name`, or for a private one
    "_<N>_<node name>" as TensorFlow names it (N: a process-wide counter), fixed per session."""
    session = ctx.resources.session
    container = container or _DEFAULT_CONTAINER
    name = shared_name or session.lookup_or_create((kind + "Name", ctx.node_name),
                                                   lambda: f"_{next(_names)}_{ctx.node_name}")
    return container, name, session.lookup_or_create((kind, container, name), lambda: make(name))


def _make_queue(ctx, make: Callable[[str], Queue], matches: Callable[[Queue], None], container: str,
                shared_name: str, legacy: bool):
    created: list[Queue] = []

    def create(name: str) -> Queue:
        queue = make(name)
        queue.check_new()
        created.append(queue)
        return queue

    container, name, queue = session_resource(ctx, "Queue", container, shared_name, create)
    if not isinstance(queue, Queue):
        ctx.fail(f"resource {container}/{name} is not a queue")
    if not created:
        matches(queue)
    return _handle_output(container, name, legacy)


def _queue_kernel(op: str, legacy: bool):
    @host_kernel(op)
    def queue_op(ctx, *, component_types, shapes, capacity, container, shared_name):
        kind = op.removesuffix("V2")
        cls = PaddingQueue if kind == "PaddingFIFOQueue" else Queue
        return _make_queue(ctx, lambda name: cls(name, capacity, component_types, list(shapes)),
                           lambda q: q.check_matches(kind, capacity, component_types, list(shapes)),
                           container, shared_name, legacy)
    return queue_op


def _shuffle_kernel(op: str, legacy: bool):
    @host_kernel(op)
    def shuffle_queue_op(ctx, *, component_types, shapes, capacity, min_after_dequeue, seed, seed2, container,
                         shared_name):
        if min_after_dequeue < 0:
            ctx.fail(f"min_after_dequeue ({min_after_dequeue}) must be non-negative")
        if capacity >= 0 and min_after_dequeue >= capacity:
            ctx.fail(f"min_after_dequeue ({min_after_dequeue}) must be less than capacity ({capacity})")
        return _make_queue(ctx, lambda name: ShuffleQueue(name, capacity, component_types, list(shapes),
                                                          min_after_dequeue, seed, seed2),
                           lambda q: q.check_matches("RandomShuffleQueue", capacity, component_types, list(shapes),
                                                     min_after_dequeue, (seed, seed2)),
                           container, shared_name, legacy)
    return shuffle_queue_op


for _legacy in (False, True):
    _suffix = "" if _legacy else "V2"
    _queue_kernel("FIFOQueue" + _suffix, _legacy)
    _queue_kernel("PaddingFIFOQueue" + _suffix, _legacy)
    _shuffle_kernel("RandomShuffleQueue" + _suffix, _legacy)


def queue_of(ctx, handle) -> Queue:
    """The queue a handle input names, in the running step's session."""
    value = handle[()] if getattr(handle, "ndim", None) == 0 else None
    if isinstance(value, QueueHandle):
        container, name = value.container, value.name
    elif getattr(handle, "shape", None) == (2,) and handle.dtype == object:
        container, name = (part.decode() if isinstance(part, bytes) else str(part) for part in handle)
    else:
        ctx.fail(f"input 0 is not a queue handle (got {type_name(getattr(handle, 'dtype', None))} "
                 f"{list(getattr(handle, 'shape', ()))})")
    queue = ctx.resources.session.lookup(("Queue", container, name))
    if not isinstance(queue, Queue):
        ctx.fail(f"Resource {container}/{name} does not exist (a queue handle from another session?)")
    return queue


def managers(ctx) -> tuple:
    """The cancellation managers a waiting attempt registers with: its step's and its session's."""
    resources = ctx.resources
    return (resources.cancellation, resources.session.cancellation)


def _enqueue_kernel(op: str):
    @host_kernel(op, asynchronous=True)
    def enqueue(ctx, done, handle, *components, Tcomponents, timeout_ms):
        queue = queue_of(ctx, handle)
        elements = [queue.check_tuple(components)]
        queue.enqueue(managers(ctx), elements, lambda outputs=(), error=None: done((), error=error))
    return enqueue


def _enqueue_many_kernel(op: str):
    @host_kernel(op, asynchronous=True)
    def enqueue_many(ctx, done, handle, *components, Tcomponents, timeout_ms):
        queue = queue_of(ctx, handle)
        elements = queue.check_many(components)
        queue.enqueue(managers(ctx), elements, lambda outputs=(), error=None: done((), error=error))
    return enqueue_many


def _check_output_types(ctx, queue: Queue, component_types) -> None:
    names = [d.name for d in component_types]
    if names != queue.dtype_names:
        ctx.fail(f"Signature mismatch, have: {', '.join(names)} expected: {', '.join(queue.dtype_names)}")


def _dequeue_kernel(op: str):
    @host_kernel(op, asynchronous=True)
    def dequeue(ctx, done, handle, *, component_types, timeout_ms):
        queue = queue_of(ctx, handle)
        _check_output_types(ctx, queue, component_types)
        queue.dequeue(managers(ctx), 1, False, False, done)
    return dequeue


def _dequeue_many_kernel(op: str, allow_smaller: bool):
    @host_kernel(op, asynchronous=True)
    def dequeue_many(ctx, done, handle, n, *, component_types, timeout_ms):
        queue = queue_of(ctx, handle)
        _check_output_types(ctx, queue, component_types)
        count = int(n)
        if count < 0:
            ctx.fail(f"Dequeue requested a negative number of elements ({count})")
        queue.check_many_dequeue()
        queue.dequeue(managers(ctx), count, allow_smaller, True, done)
    return dequeue_many


def _close_kernel(op: str):
    @host_kernel(op, asynchronous=True)
    def close(ctx, done, handle, *, cancel_pending_enqueues):
        queue_of(ctx, handle).close(cancel_pending_enqueues, lambda outputs=(), error=None: done((), error=error))
    return close


for _suffix in ("V2", ""):
    _enqueue_kernel("QueueEnqueue" + _suffix)
    _enqueue_many_kernel("QueueEnqueueMany" + _suffix)
    _dequeue_kernel("QueueDequeue" + _suffix)
    _dequeue_many_kernel("QueueDequeueMany" + _suffix, False)
    _dequeue_many_kernel("QueueDequeueUpTo" + _suffix, True)
    _close_kernel("QueueClose" + _suffix)

    @host_kernel("QueueSize" + _suffix)
    def queue_size(ctx, handle):
        return np.array(queue_of(ctx, handle).size(), dtype=np.int32)

    @host_kernel("QueueIsClosed" + _suffix)
    def queue_is_closed(ctx, handle):
        queue = queue_of(ctx, handle)
        with queue.lock:
            return np.array(queue.closed, dtype=np.bool_)
