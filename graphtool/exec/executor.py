"""The dependency-counting executor, with TensorFlow v1 dynamic control flow.

Every node waits on a count of inputs not yet arrived; at zero it is ready. Ready nodes run inline
in the scheduling thread when cheap, or on a thread pool when expensive (numpy releases the GIL in
BLAS and big ufuncs, so independent heavy branches overlap). Finishing a node delivers its outputs
to its consumers' input slots and decrements their counts.

Control flow follows TensorFlow's executor: values carry a frame and an iteration. Enter moves a
value into a child frame (created by the first Enter, one per parent iteration), NextIteration into
the next iteration (started only while fewer than `parallel_iterations` are outstanding), Exit back
to the parent. Switch sends its input to one port and a DEAD marker to the other; a node with a
dead input produces dead outputs without running; Merge fires on its first live input (or dead when
every input is dead, or at once on a dead Enter: a loop entered dead ends with dead Exits).
Iteration and frame state is freed as soon as it is done, and input slots are cleared when a node
runs, so values are released after their last consumer.
"""
from __future__ import annotations

import queue
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..errors import RuntimeFailure
from . import step_errors, transfer
from .resources import step_scope
from .step_errors import StepTimeout
from . import thread_budget
from .thread_budget import ThreadBudget, usable_cores
from .plan import ENTER, EXIT, FED, LOOP_COND, MERGE, NORMAL, RECV, SEND, SWITCH, FrameTemplate, Item, Plan


class _Dead:
    __slots__ = ()

    def __repr__(self) -> str:
        return "DEAD"


DEAD = _Dead()
# Elementwise kernels on inputs at least this big are worth a thread-pool hop.
_BIG_INPUT = 1 << 16


class IterationState:
    __slots__ = ("pending", "dead", "inputs", "outstanding_ops", "outstanding_frames", "children")

    def __init__(self, template: FrameTemplate):
        self.pending = list(template.initial_pending)
        self.dead = [0] * len(template.items)
        self.inputs = [None] * template.num_slots
        self.outstanding_ops = 0
        self.outstanding_frames = 0
        self.children: dict[str, FrameState] = {}


class FrameState:
    __slots__ = ("template", "parent", "parent_iter", "iterations", "iteration_count",
                 "outstanding_iterations", "pending_enters", "live_enters", "loop_invariants",
                 "next_iter_roots", "dead_exits", "iterations_run")

    def __init__(self, template: FrameTemplate, parent: "FrameState | None", parent_iter: int):
        self.template = template
        self.parent = parent
        self.parent_iter = parent_iter
        self.iterations = {0: IterationState(template)}
        self.iteration_count = 0          # index of the newest iteration
        self.outstanding_iterations = 1
        self.pending_enters = template.num_enters
        self.live_enters = 0
        self.loop_invariants: list[tuple[Item, object]] = []
        self.next_iter_roots: list[tuple[Item, tuple]] = []
        self.dead_exits: list[Item] = []
        self.iterations_run = 1


class StepStats:
    """Counts a step collects cheaply (the profile command asks for more)."""

    def __init__(self):
        self.nodes_executed = 0
        self.iterations: dict[str, int] = {}


class Executor:
    """Runs a Plan once per call to run(); reusable across steps."""

    def __init__(self, plan: Plan, threads: int | None = None, check_numerics: bool = False,
                 targets: list[Item] = ()):
        self.plan = plan
        self.targets = list(targets)
        self.threads = max(1, threads if threads is not None else usable_cores())
        # Heavy kernels share the threads with the BLAS library's own (thread_budget.py).
        self.budget = ThreadBudget(self.threads)
        self.check_numerics = check_numerics
        self.last_stats = StepStats()   # the latest step's (concurrent steps: use run_step)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._has_transfers = any(item.kind in (SEND, RECV) for item in plan.items)
        # Devices with streams (GPUs) launch kernels through a stream runtime (streams.py).
        self.streams = plan.device.stream_runtime(plan)

    @property
    def device_names(self) -> list[str]:
        """The devices this executor runs on: one (a MultiDeviceExecutor has several)."""
        return [self.plan.device.name]

    def pool(self) -> ThreadPoolExecutor | None:
        """The worker threads, started on first use and kept for later steps."""
        if self.threads > 1 and self._pool is None:
            with self._pool_lock:   # concurrent first steps share one pool
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="dftool",
                                                    initializer=_quiet_numpy_warnings)
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def run(self, feeds: dict[Item, tuple], fetches: list[tuple[Item, int]], **options) -> list:
        """The fetched values of one step (run_step without its statistics)."""
        return self.run_step(feeds, fetches, **options)[0]

    def run_step(self, feeds: dict[Item, tuple], fetches: list[tuple[Item, int]], *,
                 timeout: float | None = None, resources=None, allow_dead: bool = False,
                 rendezvous=None, participant=None, stats=None) -> tuple[list, StepStats]:
        """Execute the plan; returns (fetched values, this step's StepStats). Several steps may
        run at once (from several threads): everything a step changes is its own. `feeds` maps
        FED items to their output tuples; the fetched values come in order (None for a dead
        fetch when `allow_dead`, else a dead fetch is an error). Raises RuntimeFailure naming the
        node on kernel errors, a timeout (StepTimeout), or a graph that cannot finish.
        `_Send`/`_Recv` nodes meet in `rendezvous` (shared with the other devices' executors of a
        multi-device step; `participant` names this one there); without one, a graph that sends
        to itself gets a private rendezvous. `stats` (a step_stats.StepStats) records every node
        execution and the memory in use; without it the step pays nothing for statistics."""
        step = _Step(self, feeds, fetches, timeout, resources) if stats is None else \
            _traced_step(self, stats, feeds, fetches, timeout, resources)
        step.allow_dead = allow_dead
        if rendezvous is None and self._has_transfers:
            rendezvous = transfer.local_rendezvous(participant)
        step.rendezvous, step.participant = rendezvous, participant
        step.pool = self.pool()
        try:
            return step.run(), step.stats
        finally:
            if self.streams is not None:   # the step's device work is done before results leave
                self.streams.finish_step()
            step.stats.nodes_executed = step.nodes_executed
            self.last_stats = step.stats


_TRACED_STEP: type | None = None   # step_recorder.TracedStep, imported on first use


def _traced_step(executor: Executor, stats, *args) -> "_Step":
    """A step that records into `stats` (step_recorder.py subclasses _Step, so it is imported
    here, once: an import statement per step costs microseconds)."""
    global _TRACED_STEP
    if _TRACED_STEP is None:
        from .step_recorder import TracedStep
        _TRACED_STEP = TracedStep
    step = _TRACED_STEP(executor, *args)
    step.start_recording(stats)
    return step


class _Step:
    """The state of one execution: frames, the ready queue and the thread pool."""

    def __init__(self, executor: Executor, feeds, fetches, timeout, resources):
        self.plan = executor.plan
        self.threads = executor.threads
        self.budget = executor.budget
        self.check_numerics = executor.check_numerics
        self.feeds = feeds
        self.fetch_slots: dict[Item, list[tuple[int, int]]] = {}
        root = self.plan.root
        for position, (item, port) in enumerate(fetches):
            # Root-frame nodes, and the Exits of top-level loops (their outputs live in the root).
            if item.frame is not root and not (item.kind == EXIT and item.frame.parent is root):
                raise RuntimeFailure(f"cannot fetch '{item.name}:{port}': it is inside while-loop frame "
                                     f"'{item.frame.name}'", hint="fetch the loop's Exit output instead")
            self.fetch_slots.setdefault(item, []).append((position, port))
        self.results = [None] * len(fetches)
        self.fetched = [False] * len(fetches)
        self.targets = executor.targets
        self.targets_done: set[Item] = set()
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.running: dict[int, tuple] = {}   # id(tagged) -> tagged, for kernels on the pool
        self.last = None   # the node the scheduling thread took last (for a timeout's message)
        self.timeout = timeout
        self.resources = resources
        self.ready: deque = deque()
        self.completions: queue.SimpleQueue = queue.SimpleQueue()
        self.in_flight = 0
        self.error: BaseException | None = None
        self.stats = StepStats()
        self.nodes_executed = 0
        self.ran = bytearray(len(self.plan.items))  # which items ran at least once (for errors)
        self.pool = None
        self.allow_dead = False
        self.root = FrameState(self.plan.root, None, 0)
        self.root.pending_enters = 0
        self.rendezvous = None   # set for plans with _Send/_Recv (see transfer.py)
        self.participant = None
        self.streams = executor.streams

    # --- the scheduling loop --------------------------------------------------------------------
    def run(self) -> list:
        root_iteration = self.root.iterations[0]
        for item in self.plan.sources:
            root_iteration.outstanding_ops += 1
            self.ready.append((item, self.root, 0))
        try:
            # TensorFlow produces inf/NaN and wraps integers silently; so do the kernels.
            with np.errstate(all="ignore"), step_scope(self.resources):
                self._loop(self.pool)
        except BaseException as exc:
            self._drain(exc)  # let kernels still running on the pool finish before unwinding
            raise
        if self.error is not None:
            self._drain(self.error)
            raise self.error
        return self._collect()

    def _loop(self, pool) -> None:
        ready = self.ready
        deadline = self.deadline
        clock = time.monotonic
        while True:
            while ready and self.error is None:
                # The deadline is checked between any two nodes (a loop of cheap nodes, or one
                # heavy kernel after another, stops at once); a kernel already running finishes.
                if deadline is not None and clock() > deadline:
                    self._check_deadline()
                    break
                tagged = ready.popleft()
                self.last = tagged
                item, frame, it = tagged
                if item.kind != NORMAL:
                    self._process(tagged)
                    continue
                # The hot path: an ordinary node, inputs taken straight from its iteration's slots.
                state = frame.iterations[it]
                count = item.num_inputs
                if count:
                    base = item.input_base
                    inputs = state.inputs[base:base + count]
                    state.inputs[base:base + count] = item.empty_inputs
                else:
                    inputs = ()
                if state.dead[item.local]:
                    self._finish(tagged, item.dead_outputs, True)
                    continue
                # Worth a thread only when something else could run meanwhile.
                if pool is not None and (ready or self.in_flight) and (
                        item.expensive or (count and getattr(inputs[0], "size", 0) >= _BIG_INPUT)):
                    self.in_flight += 1
                    self.running[id(tagged)] = tagged
                    granted = 1
                    if item.expensive:   # it will share the cores with what runs and is ready
                        granted = self.budget.claim(min(self.threads, self.in_flight + len(ready)), item.intra_op)
                    pool.submit(self._on_worker, tagged, inputs, granted)
                    continue
                try:
                    if item.expensive:   # alone: it may use every thread
                        thread_budget.grant(self.budget.claim(1, item.intra_op))
                        try:
                            outputs = self._compute(item, inputs)
                        finally:
                            self.budget.release()
                            thread_budget.grant(1)
                    else:
                        outputs = self._compute(item, inputs)
                except BaseException as exc:
                    self.error = self._kernel_error(item, inputs, exc)
                    break
                self._finish(tagged, outputs, False)
            if self.in_flight == 0:
                return
            self._wait_for_completion()

    def _drain(self, error: BaseException) -> None:
        if self.rendezvous is not None:  # wake Recvs still waiting, here and on other devices
            self.rendezvous.abort(error, self.participant)
        while self.in_flight:
            self.completions.get()
            self.in_flight -= 1

    def _wait_for_completion(self) -> None:
        if self.rendezvous is not None:
            transfer.before_waiting(self)
        while True:
            try:
                tagged, outputs, error = self.completions.get(timeout=0.05)
                break
            except queue.Empty:
                self._check_deadline()
        self.in_flight -= 1
        self.running.pop(id(tagged), None)
        if error is not None:
            if self.error is None:
                self.error = error
            return
        if self.error is None:
            self._finish(tagged, outputs, tagged[0].kind == RECV and transfer.recv_control_dead(tagged))

    def _check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline and self.error is None:
            self.error = StepTimeout(f"step timed out after {self.timeout:.3g} s "
                                     f"({self.nodes_executed} nodes executed; {step_errors.where(self)})",
                                        hint="a loop that never ends? raise --timeout if it is just slow "
                                             "(a kernel already running, e.g. a BLAS call, is not interrupted)")
            self.ready.clear()
            if self.rendezvous is not None:  # wake this step's Recvs, and the other devices'
                self.rendezvous.abort(self.error, self.participant)

    # --- running one node ---------------------------------------------------------------------
    def _on_worker(self, tagged, inputs, granted: int) -> None:
        """A pool thread runs a kernel for this step: kernels there see this step's resources
        and the threads the scheduling thread granted them."""
        thread_budget.grant(granted)
        try:
            with step_scope(self.resources):
                self._compute_async(tagged, inputs)
        finally:
            if tagged[0].expensive:   # claimed by the scheduling thread when it submitted the kernel
                self.budget.release()

    def _take_inputs(self, tagged):
        item, frame, it = tagged
        state = frame.iterations[it]
        base, count = item.input_base, item.num_inputs
        inputs = state.inputs[base:base + count]
        state.inputs[base:base + count] = [None] * count   # release: the consumer holds them now
        if item.kind == MERGE:
            return inputs, state.dead[item.local] == count and state.pending[item.local] == 0
        return inputs, state.dead[item.local] > 0

    def _compute_async(self, tagged, inputs) -> None:
        try:
            outputs = self._compute(tagged[0], inputs)
            self.completions.put((tagged, outputs, None))
        except BaseException as exc:  # reported by the scheduling thread
            self.completions.put((tagged, None, self._kernel_error(tagged[0], inputs, exc)))

    def _compute(self, item: Item, inputs):
        if self.streams is None:
            outputs = item.kernel(item.ctx, *inputs)
        else:   # on its stream, after waiting for the streams that made its inputs
            outputs = self.streams.launch(item, inputs)
        if type(outputs) is not tuple:
            outputs = (outputs,)
        if len(outputs) != item.num_outputs:
            raise RuntimeFailure(f"kernel returned {len(outputs)} outputs, the op has {item.num_outputs}")
        if self.check_numerics:
            _check_finite(item, outputs)
        return outputs

    def _process(self, tagged) -> None:
        item = tagged[0]
        kind = item.kind
        inputs, is_dead = self._take_inputs(tagged)
        if kind >= ENTER or kind == LOOP_COND:  # pass their value along
            self._finish(tagged, item.dead_outputs if is_dead else (inputs[0],), is_dead)
            return
        if kind == NORMAL:
            if is_dead:
                outputs = (DEAD,) * item.num_outputs
            else:
                try:
                    outputs = self._compute(item, inputs)
                except BaseException as exc:
                    self.error = self._kernel_error(item, inputs, exc)
                    return
        elif kind == MERGE:
            if is_dead:
                outputs = (DEAD, DEAD)
            else:
                index = next(i for i, v in enumerate(inputs) if v is not None and v is not DEAD)
                outputs = (inputs[index], item.value_indices[index])
        elif kind == SWITCH:
            if is_dead:
                outputs = (DEAD, DEAD)
            elif getattr(inputs[1], "ndim", 0) != 0:   # as TensorFlow's SwitchOp checks
                self.error = RuntimeFailure(f"node '{item.name}' (Switch): the predicate (input 1) must be "
                                            f"a scalar, but it is {_describe(inputs[1])}")
                return
            elif bool(inputs[1]):
                outputs = (DEAD, inputs[0])
            else:
                outputs = (inputs[0], DEAD)
        elif kind == SEND or kind == RECV:  # transfer nodes run even when their inputs are dead
            transfer.run_transfer(self, tagged, inputs, is_dead)
            return
        elif kind == FED:
            outputs = self.feeds[item]
        else:  # ControlTrigger: live even when its inputs are dead
            outputs, is_dead = (), False
        self._finish(tagged, outputs, is_dead)

    def _kernel_error(self, item: Item, inputs, exc: BaseException) -> BaseException:
        if isinstance(exc, (KeyboardInterrupt, SystemExit, NumericsError)):
            return exc
        described = ", ".join(_describe(v) for v in inputs) or "no inputs"
        message = " ".join(str(exc).split()) or type(exc).__name__
        return RuntimeFailure(f"node '{item.name}' ({item.node.op}) failed on inputs [{described}]: {message}")

    # --- delivering outputs -------------------------------------------------------------------
    def _finish(self, tagged, outputs, is_dead: bool) -> None:
        item, frame, it = tagged
        self.nodes_executed += 1
        self.ran[item.id] = 1
        kind = item.kind
        fetch_slots = self.fetch_slots.get(item)
        # A dead Exit is not final: the loop's last iteration delivers the live value.
        if fetch_slots is not None and not (kind == EXIT and is_dead):
            for position, port in fetch_slots:
                self.results[position] = outputs[port]
                self.fetched[position] = True
        if self.targets:
            self.targets_done.add(item)
        if kind < ENTER:
            self._deliver(item, outputs, is_dead, frame, it)
        elif kind == ENTER:
            child = self._child_frame(frame, it, item.child_frame)
            if item.is_constant:
                child.loop_invariants.append((item, outputs))
                for index in list(child.iterations):
                    self._deliver(item, outputs, is_dead, child, index)
            else:
                self._deliver(item, outputs, is_dead, child, 0)
            child.pending_enters -= 1
            if not is_dead:
                child.live_enters += 1
            if child.pending_enters == 0:
                self._cleanup(child, 0)
        elif kind == EXIT:
            if is_dead:
                # Only the newest iteration's dead Exits matter: when the frame ends they tell the
                # parent that the loop produced nothing on this output (TensorFlow does the same).
                if it == frame.iteration_count:
                    frame.dead_exits.append(item)
            else:
                self._deliver(item, outputs, False, frame.parent, frame.parent_iter)
        elif not is_dead:  # NextIteration; a dead value ends the loop: it starts no iteration
            self._next_iteration(item, outputs, frame, it)
        state = frame.iterations[it]
        state.outstanding_ops -= 1
        if state.outstanding_ops == 0:
            self._cleanup(frame, it)

    def _deliver(self, src: Item, outputs, src_dead: bool, frame: FrameState, it: int) -> None:
        state = frame.iterations[it]
        pending, dead, slots, ready = state.pending, state.dead, state.inputs, self.ready
        # A dead Enter makes the loop Merge it feeds dead at once, as in TensorFlow: the Merge's
        # NextIteration input never comes in iteration 0, so waiting for every input to be dead
        # would hang a loop on an untaken cond branch whose loop constants are live (a stack
        # handle entered from outside the cond, say).
        enter_kills_merge = src_dead and src.kind == ENTER
        for port, edges in src.live_ports:
            value = outputs[port]
            # Each edge: (consumer, its local id, the input slot it fills, is it a Merge, its arity).
            for dst, local, slot, is_merge, arity in edges:
                if is_merge:
                    count = pending[local]
                    if value is DEAD:
                        # (every input counts as dead: that is what makes it fire dead)
                        dead[local] = arity if enter_kills_merge else dead[local] + 1
                        if dead[local] == arity and count == 1:
                            pending[local] = 0
                            state.outstanding_ops += 1
                            ready.append((dst, frame, it))
                    elif count & 1:  # the first live input wins; later ones are ignored
                        slots[slot] = value
                        pending[local] = count - 1
                        if count == 1:
                            state.outstanding_ops += 1
                            ready.append((dst, frame, it))
                    continue
                slots[slot] = value
                if value is DEAD:
                    dead[local] += 1
                count = pending[local] - 1
                pending[local] = count
                if count == 0:
                    state.outstanding_ops += 1
                    ready.append((dst, frame, it))
        for dst in src.control_out:
            local = dst.local
            if dst.kind == MERGE:
                count = pending[local] - 2
                pending[local] = count
                if count == 0 or (count == 1 and dead[local] == dst.num_inputs):
                    pending[local] = 0
                    state.outstanding_ops += 1
                    ready.append((dst, frame, it))
                continue
            if src_dead:
                dead[local] += 1
            count = pending[local] - 1
            pending[local] = count
            if count == 0:
                state.outstanding_ops += 1
                ready.append((dst, frame, it))

    # --- frames and iterations ----------------------------------------------------------------
    def _child_frame(self, frame: FrameState, it: int, template: FrameTemplate) -> FrameState:
        state = frame.iterations[it]
        child = state.children.get(template.name)
        if child is None:
            child = FrameState(template, frame, it)
            state.children[template.name] = child
            state.outstanding_frames += 1
        return child

    def _next_iteration(self, item: Item, outputs, frame: FrameState, it: int) -> None:
        target = it + 1
        if target in frame.iterations:
            self._deliver(item, outputs, False, frame, target)
        elif frame.outstanding_iterations >= frame.template.parallel_iterations:
            frame.next_iter_roots.append((item, outputs))  # started when an iteration finishes
        else:
            self._start_iteration(frame)
            self._deliver(item, outputs, False, frame, target)

    def _start_iteration(self, frame: FrameState) -> None:
        frame.iteration_count += 1
        frame.outstanding_iterations += 1
        frame.iterations_run += 1
        frame.dead_exits.clear()
        index = frame.iteration_count
        frame.iterations[index] = IterationState(frame.template)
        for item, outputs in frame.loop_invariants:
            self._deliver(item, outputs, outputs[0] is DEAD, frame, index)

    def _iteration_done(self, frame: FrameState, it: int) -> bool:
        state = frame.iterations.get(it)
        if state is None or state.outstanding_ops or state.outstanding_frames:
            return False
        if it == 0:
            return frame.pending_enters == 0
        return (it - 1) not in frame.iterations

    def _cleanup(self, frame: FrameState, it: int) -> None:
        """Delete finished iterations (in order), start queued ones, and finish the frame."""
        while self._iteration_done(frame, it):
            del frame.iterations[it]
            frame.outstanding_iterations -= 1
            if frame.next_iter_roots:
                roots, frame.next_iter_roots = frame.next_iter_roots, []
                self._start_iteration(frame)
                for item, outputs in roots:
                    self._deliver(item, outputs, False, frame, frame.iteration_count)
            it += 1
            if it > frame.iteration_count:
                break
        if frame.parent is not None and not frame.iterations and frame.pending_enters == 0:
            self._delete_frame(frame)

    def _delete_frame(self, frame: FrameState) -> None:
        parent, parent_iter = frame.parent, frame.parent_iter
        name = frame.template.name
        self.stats.iterations[name] = self.stats.iterations.get(name, 0) + frame.iterations_run
        dead_outputs = None
        # A loop entered only with dead values (it sits on an untaken cond branch) never runs:
        # every value leaving it is dead, as in TensorFlow.
        dead_exits = frame.template.exits if frame.live_enters == 0 else frame.dead_exits
        for exit_item in dead_exits:
            dead_outputs = dead_outputs or (DEAD,)
            for position, port in self.fetch_slots.get(exit_item, ()):
                self.results[position], self.fetched[position] = DEAD, True
            self._deliver(exit_item, dead_outputs, True, parent, parent_iter)
        state = parent.iterations[parent_iter]
        del state.children[name]
        state.outstanding_frames -= 1
        if state.outstanding_ops == 0:
            self._cleanup(parent, parent_iter)

    # --- results ------------------------------------------------------------------------------
    def _collect(self) -> list:
        unfinished_targets = [t for t in self.targets if t not in self.targets_done]
        if not all(self.fetched) or unfinished_targets:
            raise step_errors.stuck_error(self, unfinished_targets)
        for (item, entries) in self.fetch_slots.items():
            for position, port in entries:
                if self.results[position] is DEAD and self.allow_dead:
                    self.results[position] = None
                elif self.results[position] is DEAD:
                    raise RuntimeFailure(f"fetch '{item.name}:{port}' is dead: it lies on a branch of a "
                                         f"cond (Switch) that was not taken")
        return self.results


def _quiet_numpy_warnings() -> None:
    np.seterr(all="ignore")


class NumericsError(RuntimeFailure):
    """--check-numerics found a NaN or Inf; the message names the node that produced it."""


def _check_finite(item: Item, outputs) -> None:
    for port, value in enumerate(outputs):
        kind = getattr(getattr(value, "dtype", None), "kind", "")
        if kind in "fc" and kind and not bool(item.ctx.xp.isfinite(value).all()):
            what = "NaN" if bool(item.ctx.xp.isnan(value).any()) else "Inf"
            raise NumericsError(f"--check-numerics: node '{item.name}' ({item.node.op}) produced {what} "
                                f"in output {port} {_describe(value)}")


def _describe(value) -> str:
    if value is DEAD:
        return "dead"
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is None:
        return type(value).__name__
    return f"{dtype}{list(shape)}"
