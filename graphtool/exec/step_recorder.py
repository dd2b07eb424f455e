"""Recording step statistics inside the executor (see step_stats.py for what is recorded).

`Executor.run(..., stats=StepStats())` runs the step as a `TracedStep`: the executor's own step
with four methods wrapped. An untraced step is the plain `_Step`, so statistics cost nothing when
they are off (not even a flag tested per node).

- `_compute` (every kernel) times the kernel. Inline on the scheduling thread, `_finish` follows
  at once, so it only notes the start. On a pool thread it returns the outputs as a
  `TimedOutputs`, a tuple carrying when and on which thread the kernel ran, which the executor
  hands on unchanged to `_finish`: the timing travels with the value, with no table for pool
  threads to race on.
- `_process` (control-flow and transfer nodes) notes when the node started: for a `_Recv` that is
  when it began to wait for its value.
- `_finish` (every executed node, on the scheduling thread) appends one raw record and lets the
  MemoryTracker see new buffers.

The raw records become NodeExecutions only when somebody reads them (DeviceStats builds them on
first use), so the step itself stays close to its untraced speed.
"""
from __future__ import annotations

import math
import threading
import weakref
from time import perf_counter_ns

from . import transfer
from .executor import _Step
from .plan import RECV, SEND
from .step_stats import NodeExecution, StepStats, TensorInfo

SCHEDULER_LANE = "scheduler"
# A _Recv waits for its value without holding a thread: its wait is drawn on a lane of its own.
RENDEZVOUS_LANE = "rendezvous"
_RENDEZVOUS_THREAD = -1
_STATIC_FACTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # Executor -> {item id: facts}


class TimedOutputs(tuple):
    """A kernel's outputs plus `span` = (start_ns, end_ns, thread ident) of the kernel call."""

    span: tuple


class _BufferRef(weakref.ref):
    """A weak reference to a counted buffer; its callback needs the size to release."""

    __slots__ = ("nbytes",)


class MemoryTracker:
    """Bytes in use on one device during one step.

    A buffer counts from the moment the first output backed by it is produced until it is
    garbage: CPython frees an array the moment its last reference goes, and the executor drops
    its references as soon as the last consumer has taken its inputs; a weak reference's callback
    sees that moment. A view or an alias (Identity, Reshape, Switch) is backed by its input's
    buffer (numpy and cupy keep `.base` pointing at the owner) and adds nothing. Buffers alive
    when the step ends (constants and variables the plan keeps, feeds, fetched results) stay
    counted to the end. Values that cannot be weakly referenced (numpy scalars, a few bytes
    each) are not tracked.

    Releases happen on whichever thread drops a value, so events are (time, +bytes/-bytes)
    appended to a list (atomic in CPython) and summed only when the step is over."""

    def __init__(self):
        self.deltas: list[tuple[int, int]] = []
        self.allocated = 0                          # bytes the last outputs_seen brought into use
        self._refs: dict[int, _BufferRef] = {}      # id(owner) -> its weak reference
        self._on_release = self._released           # one bound method for every reference

    def outputs_seen(self, outputs, now: int) -> tuple:
        """(dtype, shape) of each output (None for values that are not arrays); counts the
        buffers not counted yet and leaves their bytes in `allocated`. Called for every
        execution, so it is written for speed: one pass, no helper calls."""
        allocated = 0
        infos = []
        refs = self._refs
        for value in outputs:
            try:
                info, base = (value.dtype, value.shape), value.base
            except AttributeError:      # a dead marker, a resource handle
                infos.append(None)
                continue
            infos.append(info)
            owner = value
            while base is not None and hasattr(base, "nbytes"):   # a view: count its owner
                owner, base = base, getattr(base, "base", None)
            known = refs.get(id(owner))
            if known is not None and known() is not None:
                continue
            nbytes = owner.nbytes
            try:
                ref = _BufferRef(owner, self._on_release)
            except TypeError:           # not weakly referenceable (numpy scalars): not tracked
                continue
            ref.nbytes = nbytes
            refs[id(owner)] = ref
            self.deltas.append((now, nbytes))
            allocated += nbytes
        self.allocated = allocated
        return tuple(infos)

    def _released(self, ref: _BufferRef) -> None:
        self.deltas.append((perf_counter_ns(), -ref.nbytes))

    def close(self) -> list[tuple[int, int]]:
        """Stop watching (releases after the step are not this step's); the raw deltas."""
        self._refs.clear()      # references that die never call back
        return self.deltas


def memory_timeline(deltas: list[tuple[int, int]], origin_ns: int) -> list[tuple[int, int]]:
    """(+/- bytes) events -> (time since origin, bytes in use after it), in time order."""
    in_use, timeline = 0, []
    for t, delta in sorted(deltas):
        in_use += delta
        timeline.append((t - origin_ns, in_use))
    return timeline


class TracedStep(_Step):
    """The executor's step, recording a DeviceStats of its device into a StepStats."""

    def __init__(self, executor, *args):
        super().__init__(executor, *args)
        # Per-item facts (name, op, input names) are the same in every step of an executor.
        self._static = _STATIC_FACTS.setdefault(executor, {})

    def start_recording(self, stats: StepStats) -> None:
        """Record into `stats` (its origin is the time base); call before run()."""
        self._step_stats = stats
        self._scheduler = threading.get_ident()
        self._inline_start: int | None = None
        self._starts: dict[int, int] = {}        # id(tagged) -> when a _Recv began to wait
        self._raw: list[tuple] = []
        self._memory = MemoryTracker()

    def run(self) -> list:
        try:
            return super().run()
        finally:
            self._hand_over()

    # --- the wrapped executor methods ---------------------------------------------------------
    def _compute(self, item, inputs):
        start = perf_counter_ns()
        outputs = _Step._compute(self, item, inputs)
        thread = threading.get_ident()
        if thread == self._scheduler:
            self._inline_start = start
            return outputs
        outputs = TimedOutputs(outputs)
        outputs.span = (start, perf_counter_ns(), thread)
        return outputs

    def _process(self, tagged) -> None:
        # Control-flow and transfer nodes finish within _process, except a _Recv, which finishes
        # when its value arrives: its start is kept by node instance.
        if tagged[0].kind == RECV:
            self._starts[id(tagged)] = perf_counter_ns()
        else:
            self._inline_start = perf_counter_ns()
        _Step._process(self, tagged)
        self._inline_start = None   # not left to the next node if this one failed

    def _finish(self, tagged, outputs, is_dead: bool) -> None:
        end = perf_counter_ns()
        start = self._inline_start
        thread = self._scheduler
        if start is not None:
            self._inline_start = None
        else:
            span = getattr(outputs, "span", None)
            if span is not None:                 # a kernel that ran on a pool thread
                start, end, thread = span
            elif tagged[0].kind == RECV:
                start, thread = self._starts.pop(id(tagged), end), _RENDEZVOUS_THREAD
            else:                                # a dead node: it ran nothing
                start = end
        if is_dead:
            infos, allocated = (), 0
        else:
            infos, allocated = self._memory.outputs_seen(outputs, end), self._memory.allocated
        self._raw.append((tagged, start, end, thread, infos, is_dead, allocated))
        _Step._finish(self, tagged, outputs, is_dead)

    # --- after the step -----------------------------------------------------------------------
    def _hand_over(self) -> None:
        """Give the device's stats the raw records, to be built into NodeExecutions on demand."""
        raw, deltas = self._raw, self._memory.close()
        origin, device = self._step_stats.origin_ns, self.plan.device.name
        lanes = _LaneNames(self._scheduler, list(dict.fromkeys(record[3] for record in raw)))
        static = self._static

        def build():
            return (_executions(raw, origin, device, lanes, static), memory_timeline(deltas, origin),
                    lanes.used())

        # self.stats is the executor's own tally, which counts loop iterations.
        self._step_stats.device(device).add_recording(build, self.stats.iterations)


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


def _executions(raw: list[tuple], origin: int, device: str, lanes: _LaneNames, static: dict) -> list[NodeExecution]:
    frame_ids: dict[int, int] = {}
    infos_cache: dict[tuple, tuple] = {}
    executions = []
    for (item, frame, it), start, end, thread, infos, is_dead, allocated in raw:
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
    """Raw (dtype, shape) pairs -> TensorInfos (bytes = elements x item size, as numpy counts)."""
    result = []
    for info in infos:
        if info is None:
            result.append(None)
            continue
        dtype, shape = info
        dims = tuple(int(d) for d in shape)
        itemsize = getattr(dtype, "itemsize", 0)
        result.append(TensorInfo(getattr(dtype, "name", str(dtype)), dims, math.prod(dims) * itemsize))
    return tuple(result)


def _rendezvous_key(item, frame, it) -> tuple | None:
    """The key a _Send/_Recv used in the rendezvous (as transfer.py builds it)."""
    if item.kind != SEND and item.kind != RECV:
        return None
    return item.transfer_key + (transfer.frame_iter(frame, it),)
