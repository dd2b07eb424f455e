"""One step of the executor (see executor.py): the ready queue, the scheduling loop, kernel calls
inline or on the pool, and the handling of control-flow and transfer nodes.

`Step` is the plain, untraced step; step_recorder.TracedStep overrides a few of its per-node
methods to record statistics. Both sit below executor.py, which picks one per run.
"""
from __future__ import annotations

import queue
import time
from collections import deque

import numpy as np

from ..errors import CancelledError, OutOfRangeError, RuntimeFailure
from . import step_errors, straight_line, thread_budget, transfer
from .collective.run import start as start_collective
from .dead import DEAD
from .frames import FETCHED, RAN, TARGET, FrameDelivery, FrameState
from .plan import (ASYNC, BIG_INPUT, COLLECTIVE, ENTER, EXIT, FED, FORWARDS, LOOP_COND, MERGE, NORMAL, RECV, SEND, SWITCH,
                   Item, call_kernel)
from .resources import step_scope
from .step_errors import StepTimeout

__all__ = ["NumericsError", "Step", "StepStats"]


class StepStats:
    """Counts a step collects cheaply (the profile command asks for more)."""

    def __init__(self):
        self.nodes_executed = 0
        self.iterations: dict[str, int] = {}
        self.transfer_bytes = 0   # on a cluster: bytes sent between its tasks (graphtool.cluster)


class Step(FrameDelivery):
    """The state of one execution: frames, the ready queue and the thread pool."""

    def __init__(self, executor, feeds, fetches, timeout, resources):
        self.plan = executor.plan
        self.threads = executor.threads
        self.budget = executor.budget
        self.check_numerics = executor.check_numerics
        self.feeds = feeds
        self.fetch_slots: dict[Item, list[tuple[int, int]]] = {}
        # FETCHED / TARGET per item id; RAN is added when it first runs (frames.py).
        self.marks = bytearray(len(self.plan.items))
        root = self.plan.root
        for position, (item, port) in enumerate(fetches):
            # Root-frame nodes, and the Exits of top-level loops (their outputs live in the root).
            if item.frame is not root and not (item.kind == EXIT and item.frame.parent is root):
                raise RuntimeFailure(f"cannot fetch '{item.name}:{port}': it is inside while-loop frame "
                                     f"'{item.frame.name}'", hint="fetch the loop's Exit output instead")
            self.fetch_slots.setdefault(item, []).append((position, port))
            self.marks[item.id] |= FETCHED
        self.results = [None] * len(fetches)
        self.fetched = [False] * len(fetches)
        self.targets = executor.targets
        for item in self.targets:
            self.marks[item.id] |= TARGET
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
        self.pool = None
        self.allow_dead = False
        self.schedule: straight_line.Schedule | None = None   # set for a straight-line step
        self.root: FrameState | None = None
        self.rendezvous = None   # set for plans with _Send/_Recv (see transfer.py)
        self.participant = None
        self.streams = executor.streams
        self.sequential_loops = True   # (a recorder turns them off: it times every node)

    @property
    def ran(self) -> bytes:
        """Which items ran at least once (for errors)."""
        return bytes(mark & 1 for mark in self.marks)

    def root_frame(self) -> FrameState:
        if self.root is None:
            self.root = FrameState(self.plan.root, None, 0)
            self.root.pending_enters = 0
        return self.root

    # --- the scheduling loop --------------------------------------------------------------------
    def run(self) -> list:
        results: list | None = None
        try:
            # TensorFlow produces inf/NaN and wraps integers silently; so do the kernels.
            with np.errstate(all="ignore"), step_scope(self.resources):
                if self.schedule is not None:
                    results = straight_line.run(self, self.schedule)
                else:
                    self._start()
                    self._loop(self.pool)
        except BaseException as exc:
            self._drain(exc)  # let kernels still running on the pool finish before unwinding
            raise
        if self.error is not None:
            self._drain(self.error)
            raise self.error
        if self.schedule is None:
            return self._collect()
        assert results is not None   # straight_line.run gives None only with self.error set
        return results

    def _start(self) -> None:
        root = self.root_frame()
        root_iteration = root.iterations[0]
        for item in self.plan.sources:
            root_iteration.outstanding_ops += 1
            self.ready.append((item, root, 0))

    def _loop(self, pool) -> None:
        while True:
            if self.error is None:   # after a failure, kernels still on the pool are only waited for
                self._run_ready(pool)
            if self.in_flight == 0:
                return
            self._wait_for_completion()

    def _run_ready(self, pool) -> None:
        """Run ready nodes until none is left (or the step fails): inline, or handed to the pool."""
        ready = self.ready
        popleft = ready.popleft
        deadline = self.deadline
        clock = time.monotonic
        compute, finish, process, wants_pool = self._compute, self._finish, self._process, self._wants_pool
        # Enter/Exit/NextIteration/LoopCond pass their value on without _process, and a live
        # ordinary node finishes without _finish, unless a recorder hooks them (it times and
        # records every node through them).
        pass_inline = type(self)._process is Step._process
        finish_inline = type(self)._finish is Step._finish
        # Identity and Const skip their kernel call unless something must see it run: a
        # recorder timing kernels, --check-numerics, or a device's streams.
        shortcuts = (type(self)._compute is Step._compute and not self.check_numerics
                     and self.streams is None)
        marks = self.marks
        tagged = self.last
        # Another device's failure aborts the rendezvous; a device busy in a loop notices it at
        # its next control-flow node instead of running the loop to its end.
        rendezvous = self.rendezvous
        while ready:
            # The deadline is checked between any two nodes (a loop of cheap nodes, or one
            # heavy kernel after another, stops at once); a kernel already running finishes.
            if deadline is not None and clock() > deadline:
                self.last = tagged
                self._check_deadline()
                break
            tagged = popleft()
            item, frame, it = tagged
            kind = item.kind
            if kind != NORMAL:
                if rendezvous is not None and rendezvous.error is not None:
                    self.last = tagged
                    self.error = rendezvous.error
                    break
                if pass_inline and (kind >= ENTER or kind == LOOP_COND):   # as in _process
                    state = frame.iterations[it]
                    slots, base = state.inputs, item.input_base
                    value = slots[base]
                    slots[base] = None
                    if state.dead[item.local]:
                        finish(tagged, item.dead_outputs, True)
                    else:
                        finish(tagged, (value,), False)
                    if self.error is not None:   # an Enter ran a whole loop (sequential_loop.py)
                        break
                    continue
                process(tagged)
                if self.error is not None:   # a Switch, a transfer or a kernel run by a recorder failed
                    break
                continue
            # The hot path: an ordinary node, inputs taken straight from its iteration's slots.
            state = frame.iterations[it]
            count = item.num_inputs
            if count == 1:
                slots, base = state.inputs, item.input_base
                inputs: tuple | list = (slots[base],)
                slots[base] = None
            elif count:
                slots, base = state.inputs, item.input_base
                inputs = slots[base:base + count]
                slots[base:base + count] = item.empty_inputs
            else:
                inputs = ()
            if state.dead[item.local]:
                finish(tagged, item.dead_outputs, True)
                continue
            shortcut = item.shortcut
            if shortcut and shortcuts:   # an Identity or a Const: no kernel call
                outputs = inputs if shortcut == FORWARDS else item.fixed_outputs
            # Worth a thread only when something else could run meanwhile.
            elif pool is not None and (ready or self.in_flight) and wants_pool(item, inputs):
                self._submit(pool, tagged, inputs, self.in_flight + 1 + len(ready))
                continue
            else:
                try:
                    if item.expensive:
                        outputs = self._compute_alone(item, inputs)
                    elif shortcuts:   # what _compute does without a recorder, streams or numerics check
                        outputs = call_kernel(item, inputs)
                    else:
                        outputs = compute(item, inputs)
                except BaseException as exc:
                    self.last = tagged
                    self.error = self._kernel_error(item, inputs, exc)
                    break
            if not finish_inline:
                finish(tagged, outputs, False)
                continue
            # _finish for a live ordinary node, inline (frames.py): the commonest case of all, and
            # a kernel's outputs are never dead, so consumers only count down.
            self.nodes_executed += 1
            if marks[item.id] != RAN:
                self._note_finished(item, outputs, False)
            slots, pending = state.inputs, state.pending
            readied = 0
            for port, plain, merges in item.live_ports:
                value = outputs[port]
                for dst, local, slot in plain:
                    slots[slot] = value
                    left = pending[local] - 1
                    pending[local] = left
                    if left == 0:
                        readied += 1
                        ready.append((dst, frame, it))
                if merges:
                    readied += self._deliver_to_merges(merges, value, state, frame, it)
            if item.control_out:
                self._deliver_control(item, False, frame, it, state)
            left = state.outstanding_ops + readied - 1
            state.outstanding_ops = left
            if left == 0:
                self._cleanup(frame, it)
        self.last = tagged

    def _drain(self, error: BaseException) -> None:
        if self.rendezvous is not None:  # wake Recvs still waiting, here and on other devices
            self.rendezvous.abort(error, self.participant)
        self._cancel_waiting(error)
        while self.in_flight:
            self.completions.get()
            self.in_flight -= 1

    def _cancel_waiting(self, error: BaseException) -> None:
        """Stop this step's asynchronous kernels still waiting (a dequeue, an enqueue into a
        full queue): they finish at once with `error`."""
        cancellation = getattr(self.resources, "cancellation", None)
        if cancellation is not None:
            cancellation.cancel(error)

    def _wait_for_completion(self) -> None:
        if self.rendezvous is not None:
            transfer.before_waiting(self)
        if self.error is not None:   # nothing new starts: wake what waits, then collect it
            self._cancel_waiting(self.error)
        while True:
            try:
                tagged, outputs, error = self.completions.get(timeout=0.05)
                break
            except queue.Empty:
                self._check_deadline()
                if self.rendezvous is not None and self.error is None:
                    # A collective member registers its next receive from a peer's thread, after
                    # this loop last said it was idle: say it again, so the rendezvous can still
                    # tell that nobody will ever send.
                    self.rendezvous.idle(self.participant, self.in_flight)
        self.in_flight -= 1
        self.running.pop(id(tagged), None)
        if error is not None:
            if self.error is None:
                self.error = error
            return
        if self.error is None:
            kind = tagged[0].kind
            if kind == RECV:
                is_dead = transfer.recv_control_dead(tagged)
            else:   # a collective whose members were all dead finishes dead, as a kernel on dead inputs
                is_dead = kind == COLLECTIVE and outputs is tagged[0].dead_outputs
            self._finish(tagged, outputs, is_dead)

    def _check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline and self.error is None:
            self.error = StepTimeout(f"step timed out after {self.timeout:.3g} s "
                                     f"({self.nodes_executed} nodes executed; {step_errors.where(self)})",
                                     hint="a loop that never ends? raise --timeout if it is just slow "
                                          "(a kernel already running, e.g. a BLAS call, is not interrupted)")
            self.ready.clear()
            if self.rendezvous is not None:  # wake this step's Recvs, and the other devices'
                self.rendezvous.abort(self.error, self.participant)
            self._cancel_waiting(self.error)

    # --- running one node ---------------------------------------------------------------------
    def _wants_pool(self, item: Item, inputs) -> bool:
        """Whether `item`'s kernel is worth a thread-pool hop (the caller has checked that
        something else could run meanwhile): the one place both ways of running decide it."""
        return item.expensive or (bool(inputs) and getattr(inputs[0], "size", 0) >= BIG_INPUT)

    def _submit(self, pool, tagged, inputs, concurrent: int) -> None:
        """Hand a kernel to the pool; `concurrent` estimates the heavy kernels that will run
        beside it (running and ready), which share the threads (thread_budget.py)."""
        self.in_flight += 1
        self.running[id(tagged)] = tagged
        granted = self.budget.claim(min(self.threads, concurrent), tagged[0].intra_op) if tagged[0].expensive else 1
        pool.submit(self._on_worker, tagged, inputs, granted)

    def _compute_alone(self, item: Item, inputs):
        """A heavy kernel the scheduling thread runs itself, with nothing else running: it may
        use every thread."""
        thread_budget.grant(self.budget.claim(1, item.intra_op))
        try:
            return self._compute(item, inputs)
        finally:
            self.budget.release()
            thread_budget.grant(1)

    def _on_worker(self, tagged, inputs, granted: int) -> None:
        """A pool thread runs a kernel for this step: kernels there see this step's resources
        and the threads the scheduling thread granted them."""
        thread_budget.grant(granted)
        try:
            with step_scope(self.resources):
                self._compute_async(tagged, inputs)
        finally:
            if tagged[0].expensive:   # claimed by the scheduling thread in _submit
                self.budget.release()

    def _compute_async(self, tagged, inputs) -> None:
        try:
            outputs = self._compute(tagged[0], inputs)
            self.completions.put((tagged, outputs, None))
        except BaseException as exc:  # reported by the scheduling thread
            self.completions.put((tagged, None, self._kernel_error(tagged[0], inputs, exc)))

    def _compute(self, item: Item, inputs):
        """Every kernel call goes through here, inline or on the pool."""
        if self.streams is None:
            outputs = call_kernel(item, inputs)
        else:   # on its stream, after waiting for the streams that made its inputs
            outputs = self.streams.launch(item, inputs)
            if type(outputs) is not tuple:
                outputs = (outputs,)
                if item.num_outputs != 1:
                    raise RuntimeFailure(f"kernel returned 1 output, the op has {item.num_outputs}")
            elif len(outputs) != item.num_outputs:
                raise RuntimeFailure(f"kernel returned {len(outputs)} outputs, the op has {item.num_outputs}")
        if self.check_numerics:
            _check_finite(item, outputs)
        return outputs

    def _process(self, tagged) -> None:
        """Run a node that is not an ordinary kernel: control flow, transfers, fed values (and an
        ordinary node when a recorder calls it)."""
        item, frame, it = tagged
        kind = item.kind
        state = frame.iterations[it]
        slots, base = state.inputs, item.input_base
        if kind >= ENTER or kind == LOOP_COND:  # pass their one value along
            value = slots[base]
            slots[base] = None   # release: the consumer holds it now
            if state.dead[item.local]:
                self._finish(tagged, item.dead_outputs, True)
            else:
                self._finish(tagged, (value,), False)
            return
        count = item.num_inputs
        inputs = slots[base:base + count]
        slots[base:base + count] = item.empty_inputs
        if kind == MERGE:
            is_dead = state.dead[item.local] == count and state.pending[item.local] == 0
        else:
            is_dead = state.dead[item.local] > 0
        if kind == MERGE:
            if is_dead:
                outputs: tuple = (DEAD, DEAD)
            else:
                # Only its first live input was written to its slots (frames.py): the one not None.
                index = 0
                while inputs[index] is None:
                    index += 1
                outputs = (inputs[index], item.value_indices[index])
        elif kind == SWITCH:
            if is_dead:
                outputs = (DEAD, DEAD)
            elif getattr(inputs[1], "ndim", 0) != 0:   # as TensorFlow's SwitchOp checks
                self.error = RuntimeFailure(f"node '{item.name}' (Switch): the predicate (input 1) must be "
                                            f"a scalar, but it is {_describe(inputs[1])}")
                return
            elif inputs[1]:
                outputs = (DEAD, inputs[0])
            else:
                outputs = (inputs[0], DEAD)
        elif kind == NORMAL:   # (the ready loop runs these itself; kept so that any node can come here)
            if is_dead:
                outputs = item.dead_outputs
            else:
                try:
                    outputs = self._compute(item, inputs)
                except BaseException as exc:
                    self.error = self._kernel_error(item, inputs, exc)
                    return
        elif kind == SEND or kind == RECV:  # transfer nodes run even when their inputs are dead
            transfer.run_transfer(self, tagged, inputs, is_dead)
            return
        elif kind == COLLECTIVE:   # so do collectives: their peers must learn of it (collective/)
            start_collective(self, tagged, inputs, is_dead)
            return
        elif kind == ASYNC:
            if is_dead:
                outputs = item.dead_outputs
            else:
                self._start_async(tagged, inputs)
                return
        elif kind == FED:
            outputs = self.feeds[item]
        else:  # ControlTrigger: live even when its inputs are dead
            outputs, is_dead = (), False
        self._finish(tagged, outputs, is_dead)

    def _start_async(self, tagged, inputs) -> None:
        """Start an asynchronous kernel (registry.py): it counts as in flight, holding no thread,
        until its `done` callback hands the result to the scheduling loop through the completion
        queue, from whichever thread calls it (once; later calls are ignored)."""
        item = tagged[0]
        completions = self.completions
        called: list[bool] = []

        def done(outputs=(), error: BaseException | None = None) -> None:
            if called:
                return
            called.append(True)
            if error is None:
                if type(outputs) is not tuple:
                    outputs = (outputs,)
                if len(outputs) != item.num_outputs:
                    error = RuntimeFailure(f"kernel returned {len(outputs)} outputs, the op has {item.num_outputs}")
            if error is not None:
                completions.put((tagged, None, self._kernel_error(item, inputs, error)))
            else:
                completions.put((tagged, outputs, None))

        self.in_flight += 1
        self.running[id(tagged)] = tagged
        try:
            item.kernel(item.ctx, done, *inputs)
        except BaseException as exc:   # failed before it could wait
            done(error=exc)

    def _kernel_error(self, item: Item, inputs, exc: BaseException) -> BaseException:
        if isinstance(exc, (KeyboardInterrupt, SystemExit, NumericsError)):
            return exc
        described = ", ".join(_describe(v) for v in inputs) or "no inputs"
        message = " ".join(str(exc).split()) or type(exc).__name__
        if isinstance(exc, (OutOfRangeError, CancelledError)):
            # TensorFlow's error codes the caller tells apart (OutOfRange ends an input
            # pipeline, Cancelled a closed queue): the same class, with the node named.
            return type(exc)(f"node '{item.name}' ({item.node.op}): {message}", hint=exc.hint)
        return RuntimeFailure(f"node '{item.name}' ({item.node.op}) failed on inputs [{described}]: {message}")

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



class NumericsError(RuntimeFailure):
    """--check-numerics found a NaN or Inf; the message names the node that produced it."""


def _check_finite(item: Item, outputs) -> None:
    assert item.ctx is not None   # only kernels' outputs are checked, and every kernel has its context
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
