"""Recording step statistics inside the executor (see step_stats.py for what is recorded).

`Executor.run(..., stats=StepStats())` runs the step as a `TracedStep`: the executor's own step
with a few methods overridden. An untraced step is the plain `Step`, so statistics cost nothing
when they are off (not even a flag tested per node).

Recording is on the executor's hot path, so a node execution costs as few Python calls as
possible (about one per overridden method) and everything that can wait for the end of the step
does (see `_hand_over`):

- `_compute` (a kernel run inline by the scheduling thread; `_finish` follows at once) only
  notes when the kernel started.
- `_compute_async` (a kernel on a pool thread) returns the outputs as a `TimedOutputs`, a tuple
  carrying when and on which thread the kernel ran, which the executor hands on unchanged to
  `_finish`: the timing travels with the value, with no table for pool threads to race on.
- `_process` (control-flow and transfer nodes) notes when the node started: for a `_Recv` that is
  when it began to wait for its value.
- `_finish` (every executed node, on the scheduling thread) appends one flat raw record: its
  times, its outputs' (dtype, shape) and the bytes of the buffers it brought into use.

Memory: a buffer counts from the moment the first output backed by it is produced until it is
garbage: CPython frees an array the moment its last reference goes, and the executor drops its
references as soon as the last consumer has taken its inputs. A weak reference per buffer sees
that moment; its callback is the raw list's own `append` (no Python frame runs), so a release
lands in the records between the last execution before it and the first one after it, and it
is timed by the latter's `_finish` clock (the executor drops inputs when it picks up the next
node, before that node's kernel allocates). A view or an alias (Identity, Reshape, Switch) is
backed by its input's buffer (numpy and cupy keep `.base` pointing at the owner) and adds
nothing. Buffers alive when the step ends (constants and variables the plan keeps, feeds,
fetched results) stay counted to the end. Values that cannot be weakly referenced (numpy
scalars, a few bytes each) are not tracked.

The raw records become NodeExecutions and a memory timeline only when somebody reads them
(DeviceStats builds them on first use), so the step itself stays close to its untraced speed.
"""
from __future__ import annotations

import math
import threading
import weakref
from time import perf_counter_ns

from . import transfer
from .step import Step
from .plan import RECV, SEND, WAITING_KINDS
from .step_stats import NodeExecution, StepStats, TensorInfo

SCHEDULER_LANE = "scheduler"
# A _Recv waits for its value without holding a thread: its wait is drawn on a lane of its own.
RENDEZVOUS_LANE = "rendezvous"
_RENDEZVOUS_THREAD = -1
_STATIC_FACTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # Executor -> {item id: facts}


# The executor's own methods, called without an attribute lookup per node.
_step_compute, _step_process, _step_finish = Step._compute, Step._process, Step._finish
_NOT_AN_ARRAY = (None, None)    # the (dtype, shape) recorded for a dead marker or a handle


class TimedOutputs(tuple):
    """A kernel's outputs plus `span` = (start_ns, end_ns, thread ident) of the kernel call."""

    span: tuple


class _BufferRef(weakref.ref):
    """A weak reference to a counted buffer. Its callback appends it to the raw records when the
    buffer is freed; it carries the size to release."""

    __slots__ = ("nbytes",)
    nbytes: int


def memory_timeline(deltas: list[tuple[int, int]], origin_ns: int) -> list[tuple[int, int]]:
    """(+/- bytes) events -> (time since origin, bytes in use after it), in time order (a
    release before an allocation at the same time)."""
    in_use, timeline = 0, []
    for t, delta in sorted(deltas):
        in_use += delta
        timeline.append((t - origin_ns, in_use))
    return timeline


class TracedStep(Step):
    """The executor's step, recording a DeviceStats of its device into a StepStats."""

    def __init__(self, executor, *args):
        super().__init__(executor, *args)
        # Per-item facts (name, op, input names) are the same in every step of an executor.
        self._static = _STATIC_FACTS.setdefault(executor, {})

    def start_recording(self, stats: StepStats) -> None:
        """Record into `stats` (its origin is the time base); call before run()."""
        self._step_stats = stats
        self._scheduler = threading.get_ident()
        self.sequential_loops = False   # every node of every iteration is timed and recorded
        self._inline_start: int | None = None
        self._starts: dict[int, int] = {}        # id(tagged) -> when a _Recv began to wait
        # Raw records (tuples, see _finish) and released buffers (_BufferRefs), in the order
        # they happened: `_append` is also the callback of every buffer's weak reference.
        self._raw: list = []
        self._append = self._raw.append
        self._buffers: dict[int, _BufferRef] = {}   # id(owner) -> the weak reference counting it

    def run(self) -> list:
        try:
            return super().run()
        finally:
            self._hand_over()

    # --- the overridden executor methods ------------------------------------------------------
    def _compute(self, item, inputs):
        # Only the scheduling thread calls this (pool threads go through _compute_async).
        self._inline_start = perf_counter_ns()
        return _step_compute(self, item, inputs)

    def _compute_async(self, tagged, inputs) -> None:
        start = perf_counter_ns()
        try:
            outputs = TimedOutputs(_step_compute(self, tagged[0], inputs))
        except BaseException as exc:  # reported by the scheduling thread
            self.completions.put((tagged, None, self._kernel_error(tagged[0], inputs, exc)))
            return
        outputs.span = (start, perf_counter_ns(), threading.get_ident())
        self.completions.put((tagged, outputs, None))

    def _process(self, tagged) -> None:
        # Control-flow and transfer nodes finish within _process, except a _Recv, which finishes
        # when its value arrives: its start is kept by node instance.
        if tagged[0].kind in WAITING_KINDS:   # a _Recv or an asynchronous kernel
            self._starts[id(tagged)] = perf_counter_ns()
        else:
            self._inline_start = perf_counter_ns()
        _step_process(self, tagged)
        self._inline_start = None   # not left to the next node if this one failed

    def _finish(self, tagged, outputs, is_dead: bool) -> None:
        # Appends one flat record: (tagged, start, end, now, thread, is_dead, allocated bytes,
        # dtype, shape, dtype, shape, ...) with None, None for an output that is not an array.
        now = perf_counter_ns()
        start = self._inline_start
        if start is not None:
            self._inline_start = None
            end, thread = now, self._scheduler
        else:
            start, end, thread = self._untimed_span(tagged, outputs, now)
        if is_dead:
            self._append((tagged, start, end, now, thread, True, 0))
            _step_finish(self, tagged, outputs, is_dead)
            return
        # The outputs' dtypes and shapes, and the buffers not counted yet: inline, in one pass,
        # because this runs for every execution.
        infos: list[object]   # dtype, shape, dtype, shape, ... of the outputs
        infos, allocated, buffers = [], 0, self._buffers
        for value in outputs:
            try:
                base = value.base
            except AttributeError:              # a dead marker, a resource handle
                infos += _NOT_AN_ARRAY
                continue
            infos += (value.dtype, value.shape)
            owner = value
            while base is not None and hasattr(base, "nbytes"):   # a view: count its owner
                owner, base = base, getattr(base, "base", None)
            key = id(owner)
            known = buffers.get(key)
            if known is not None and known() is not None:
                continue
            try:
                ref = _BufferRef(owner, self._append)
            except TypeError:                   # not weakly referenceable (numpy scalars)
                continue
            ref.nbytes = nbytes = owner.nbytes
            buffers[key] = ref
            allocated += nbytes
        self._append((tagged, start, end, now, thread, False, allocated, *infos))
        _step_finish(self, tagged, outputs, is_dead)

    def _untimed_span(self, tagged, outputs, now: int) -> tuple[int, int, int]:
        """(start, end, thread) of an execution the scheduling thread did not time inline."""
        span = getattr(outputs, "span", None)
        if span is not None:                    # a kernel that ran on a pool thread
            return span
        if tagged[0].kind in WAITING_KINDS:     # a _Recv or async kernel: from when it began to wait
            return self._starts.pop(id(tagged), now), now, _RENDEZVOUS_THREAD
        return now, now, self._scheduler        # a dead node: it ran nothing

    # --- after the step -----------------------------------------------------------------------
    def _hand_over(self) -> None:
        """Give the device's stats the raw records, to be built into NodeExecutions on demand
        (everything that can wait does: this runs inside the step's time)."""
        self._buffers.clear()   # stop watching: references that die never call back
        raw, closed, scheduler, static = self._raw, perf_counter_ns(), self._scheduler, self._static
        origin, device = self._step_stats.origin_ns, self.plan.device.name

        def build():
            records = [entry for entry in raw if type(entry) is tuple]
            lanes = _LaneNames(scheduler, list(dict.fromkeys(record[4] for record in records)))
            return (_executions(records, origin, device, lanes, static),
                    memory_timeline(_memory_deltas(raw, closed), origin), lanes.used())

        # self.stats is the executor's own tally, which counts loop iterations.
        self._step_stats.device(device).add_recording(build, self.stats.iterations)


def _memory_deltas(raw: list, closed: int) -> list[tuple[int, int]]:
    """(time, +/- bytes) events from the raw records: each record's allocation when its kernel
    ended; each release at the `_finish` clock of the first record after it (or when the step
    was closed). The executor drops a node's inputs when it picks up the next node, so that
    clock follows the release within microseconds."""
    deltas: list[tuple[int, int]]
    released: list[int]
    deltas, released = [], []
    for entry in raw:
        if type(entry) is not tuple:
            released.append(entry.nbytes)
            continue
        now, allocated = entry[3], entry[6]
        deltas.extend((now, -nbytes) for nbytes in released)
        released.clear()
        if allocated:
            deltas.append((entry[2], allocated))
    deltas.extend((closed, -nbytes) for nbytes in released)
    return deltas


class _LaneNames:
    """Thread idents -> lane names: the scheduling thread, pool threads by their thread names
    (looked up when the records are built, after the step: the pool's threads live on)."""

    def __init__(self, scheduler: int, threads: list[int]):
        self._scheduler = scheduler
        self._threads = threads
        self._names: dict | None = None

    def name(self, thread: int) -> str:
        if self._names is None:
            self._names = {t.ident: t.name for t in threading.enumerate()}
            self._names[self._scheduler] = SCHEDULER_LANE
            self._names[_RENDEZVOUS_THREAD] = RENDEZVOUS_LANE
        return self._names.get(thread) or f"thread {thread}"

    def used(self) -> list[str]:
        """The lanes of the records, the scheduler first, then in order of first use."""
        return list(dict.fromkeys([SCHEDULER_LANE] + [self.name(t) for t in self._threads]))


def _executions(records: list[tuple], origin: int, device: str, lanes: _LaneNames, static: dict) -> list[NodeExecution]:
    frame_ids: dict[int, int] = {}
    infos_cache: dict[tuple, tuple] = {}
    executions = []
    for record in records:
        (item, frame, it), start, end, _, thread, is_dead, allocated = record[:7]
        infos = record[7:]
        facts = static.get(item.id)
        if facts is None:
            facts = static[item.id] = (item.name, item.node.op, _input_names(item.node))
        outputs = infos_cache.get(infos)
        if outputs is None:
            outputs = infos_cache[infos] = _tensor_infos(infos)
        executions.append(NodeExecution(
            facts[0], facts[1], device, start - origin, end - origin, lanes.name(thread),
            frame.template.name, it, frame_ids.setdefault(id(frame), len(frame_ids)), facts[2],
            outputs, is_dead, _rendezvous_key(item, frame, it), allocated))
    return executions


def _input_names(node) -> tuple[str, ...]:
    return tuple([ref.name for ref in node.inputs] + ["^" + c.name for c in node.control_inputs])


def _tensor_infos(infos: tuple) -> tuple:
    """Raw dtype, shape, dtype, shape, ... -> TensorInfos (bytes = elements x item size, as numpy
    counts); None for an output that is not an array."""
    result: list[TensorInfo | None] = []
    for dtype, shape in zip(infos[::2], infos[1::2]):
        if shape is None:
            result.append(None)
            continue
        dims = tuple(int(d) for d in shape)
        itemsize = getattr(dtype, "itemsize", 0)
        result.append(TensorInfo(getattr(dtype, "name", str(dtype)), dims, math.prod(dims) * itemsize))
    return tuple(result)


def _rendezvous_key(item, frame, it) -> tuple | None:
    """The key a _Send/_Recv used in the rendezvous (as transfer.py builds it)."""
    if item.kind != SEND and item.kind != RECV:
        return None
    return item.transfer_key + (transfer.frame_iter(frame, it),)
