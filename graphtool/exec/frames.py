"""The dependency-counting executor's bookkeeping: per-iteration state, loop frames, and the
delivery of a finished node's outputs to its consumers (see executor.py for the scheduling loop).

Control flow follows TensorFlow's executor: values carry a frame and an iteration. Enter moves a
value into a child frame (created by the first Enter, one per parent iteration), NextIteration into
the next iteration (started only while fewer than `parallel_iterations` are outstanding), Exit back
to the parent. Switch sends its input to one port and a DEAD marker to the other; a node with a
dead input produces dead outputs without running; Merge fires on its first live input (or dead when
every input is dead, or at once on a dead Enter: a loop entered dead ends with dead Exits). Iteration and frame state is freed as soon as it is done, and input slots
are cleared when a node runs, so values are released after their last consumer.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from . import sequential_loop
from .dead import DEAD
from .plan import ENTER, EXIT, MERGE, NEXT_ITERATION, FrameTemplate, Item

# Per-step marks of an item (a bytearray indexed by item id). A node whose mark is exactly RAN
# needs nothing but delivery when it finishes: one comparison instead of a dict lookup for
# fetches, a test for targets and a store per node.
RAN, FETCHED, TARGET = 1, 2, 4


class IterationState:
    __slots__ = ("pending", "dead", "inputs", "outstanding_ops", "outstanding_frames", "children")

    def __init__(self, template: FrameTemplate):
        self.pending = template.initial_pending.copy()
        self.dead = [0] * len(template.items)
        self.inputs = [None] * template.num_slots
        self.outstanding_ops = 0
        self.outstanding_frames = 0
        self.children: dict[str, FrameState] = {}


class FrameState:
    __slots__ = ("template", "parent", "parent_iter", "iterations", "iteration_count",
                 "outstanding_iterations", "pending_enters", "live_enters", "loop_invariants",
                 "next_iter_roots", "dead_exits", "iterations_run", "entered")

    def __init__(self, template: FrameTemplate, parent: "FrameState | None", parent_iter: int):
        self.template = template
        self.parent = parent
        self.parent_iter = parent_iter
        self.iterations = {0: IterationState(template)}
        self.iteration_count = 0          # index of the newest iteration
        self.outstanding_iterations = 1
        self.pending_enters = template.num_enters
        self.live_enters = 0
        self.loop_invariants: list[tuple[Item, Sequence]] = []   # (Enter, its outputs)
        self.next_iter_roots: list[tuple[Item, tuple]] = []
        self.dead_exits: list[Item] = []
        self.iterations_run = 1
        self.entered: list | None = None   # a sequential loop's Enter values, until all have come


class FrameDelivery:
    """The part of an executor step that moves values: `_finish` (every executed node, except
    that the ready loop finishes a live ordinary node itself when no recorder hooks `_finish`),
    delivery into consumers' input slots, and the frames and iterations the values live in.
    Mixed into step.Step, whose attributes it uses (ready, marks, fetch_slots, results, ...)."""

    # Set by executor._Step.__init__ (declared here for the type checker; no defaults).
    ready: deque
    marks: bytearray
    fetch_slots: dict[Item, list[tuple[int, int]]]
    results: list
    fetched: list[bool]
    targets_done: set[Item]
    nodes_executed: int
    sequential_loops: bool
    stats: Any   # executor.StepStats (not imported: executor imports this module); uses .iterations

    # --- delivering outputs -------------------------------------------------------------------
    def _finish(self, tagged, outputs, is_dead: bool) -> None:
        item, frame, it = tagged
        self.nodes_executed += 1
        if self.marks[item.id] != RAN:   # its first run, a fetch or a target
            self._note_finished(item, outputs, is_dead)
        state = frame.iterations[it]
        kind = item.kind
        if kind < ENTER:
            self._deliver(item, outputs, is_dead, frame, it, state)
        elif kind == NEXT_ITERATION:
            if not is_dead:   # a dead value ends the loop: it starts no iteration
                target = frame.iterations.get(it + 1)
                if target is None:
                    if frame.outstanding_iterations >= frame.template.parallel_iterations:
                        frame.next_iter_roots.append((item, outputs))   # started when one finishes
                    else:
                        target = self._start_iteration(frame)
                if target is not None:
                    self._deliver(item, outputs, False, frame, it + 1, target)
        elif kind == EXIT:
            if is_dead:
                # Only the newest iteration's dead Exits matter: when the frame ends they tell the
                # parent that the loop produced nothing on this output (TensorFlow does the same).
                if it == frame.iteration_count:
                    frame.dead_exits.append(item)
            else:
                parent = frame.parent
                self._deliver(item, outputs, False, parent, frame.parent_iter,
                              parent.iterations[frame.parent_iter])
        else:   # Enter
            self._enter(item, outputs, is_dead, frame, it)
        count = state.outstanding_ops - 1   # this node is done
        state.outstanding_ops = count
        if count == 0:
            self._cleanup(frame, it)

    def _note_finished(self, item: Item, outputs, is_dead: bool) -> None:
        marks = self.marks
        mark = marks[item.id]
        marks[item.id] = mark | RAN
        # A dead Exit is not final: the loop's last iteration delivers the live value.
        if mark & FETCHED and not (item.kind == EXIT and is_dead):
            for position, port in self.fetch_slots[item]:
                self.results[position] = outputs[port]
                self.fetched[position] = True
        if mark & TARGET:
            self.targets_done.add(item)

    def _enter(self, item: Item, outputs, is_dead: bool, frame: "FrameState", it: int) -> None:
        template = item.child_frame
        assert template is not None   # the plan gives every Enter the frame it enters
        child = self._child_frame(frame, it, template)
        loop = template.sequential
        if loop is not None and self.sequential_loops:   # run whole once every Enter has come
            if child.entered is None:
                child.entered = []
            child.entered.append((item, outputs, is_dead))
            child.pending_enters -= 1
            if child.pending_enters == 0:
                self._run_sequentially(loop, child, frame, it)
            return
        self._enter_counted(item, outputs, is_dead, child)

    def _enter_counted(self, item: Item, outputs, is_dead: bool, child: "FrameState") -> None:
        if item.is_constant:
            child.loop_invariants.append((item, outputs))
            for index, state in list(child.iterations.items()):
                self._deliver(item, outputs, is_dead, child, index, state)
        else:
            self._deliver(item, outputs, is_dead, child, 0, child.iterations[0])
        child.pending_enters -= 1
        if not is_dead:
            child.live_enters += 1
        if child.pending_enters == 0:
            self._cleanup(child, 0)

    def _run_sequentially(self, loop, child: "FrameState", frame: "FrameState", it: int) -> None:
        """Run a loop instance whose Enters have all come (sequential_loop.py), and deliver its
        Exits' values to the parent iteration; with a dead Enter value, or a node of the loop that
        is a target of the step, count it the usual way instead."""
        entered, child.entered = child.entered, None
        assert entered is not None   # called once the last Enter has added its value
        marks = self.marks
        if any(dead for _, _, dead in entered) or any(marks[i] & TARGET for i in loop.item_ids):
            child.pending_enters = child.template.num_enters
            for item, outputs, is_dead in entered:
                self._enter_counted(item, outputs, is_dead, child)
            return
        result = sequential_loop.run(self, loop, child, entered)
        if result is None:   # the step failed (self.error)
            return
        exit_values, iterations, program = result
        for item_id in program.always_ids:
            marks[item_id] |= RAN
        if iterations:
            for item_id in program.body_ids:
                marks[item_id] |= RAN
        name = child.template.name
        self.stats.iterations[name] = self.stats.iterations.get(name, 0) + iterations + 1
        state = frame.iterations[it]
        del state.children[name]
        state.outstanding_frames -= 1
        for (exit_item, _), value in zip(program.exits, exit_values):
            outputs = (value,)
            if marks[exit_item.id] != RAN:   # fetched
                self._note_finished(exit_item, outputs, False)
            self._deliver(exit_item, outputs, False, frame, it, state)

    def _deliver(self, src: Item, outputs, src_dead: bool, frame: FrameState, it: int,
                 state: IterationState) -> None:
        """Fill `src`'s consumers' input slots in iteration `it` of `frame` (whose state is
        `state`), and queue the consumers that have all their inputs."""
        pending, dead, slots, ready = state.pending, state.dead, state.inputs, self.ready
        for port, plain, merges in src.live_ports:
            value = outputs[port]
            value_dead = value is DEAD
            for dst, local, slot in plain:
                slots[slot] = value
                if value_dead:
                    dead[local] += 1
                count = pending[local] - 1
                pending[local] = count
                if count == 0:
                    state.outstanding_ops += 1
                    ready.append((dst, frame, it))
            if merges:
                # A dead Enter makes the loop Merge it feeds dead at once, as in TensorFlow: the
                # Merge's NextIteration input never comes in iteration 0, so waiting for every
                # input to be dead would hang a loop on an untaken cond branch whose loop
                # constants are live (a gradient's stack handle entered from outside the cond).
                state.outstanding_ops += self._deliver_to_merges(merges, value, state, frame, it,
                                                                 value_dead and src.kind == ENTER)
        if src.control_out:
            self._deliver_control(src, src_dead, frame, it, state)

    def _deliver_to_merges(self, merges, value, state: IterationState, frame: FrameState, it: int,
                           kills: bool = False) -> int:
        """Deliver `value` to Merges (the first live input wins; later ones are ignored; a
        Merge whose inputs are all dead is dead, and so is one that a dead Enter feeds: `kills`);
        returns how many became ready."""
        pending, dead, ready = state.pending, state.dead, self.ready
        readied = 0
        for dst, local, slot, arity in merges:
            count = pending[local]
            if value is DEAD:
                dead[local] = arity if kills else dead[local] + 1
                if dead[local] == arity and count == 1:
                    pending[local] = 0
                    readied += 1
                    ready.append((dst, frame, it))
            elif count & 1:
                state.inputs[slot] = value
                pending[local] = count - 1
                if count == 1:
                    readied += 1
                    ready.append((dst, frame, it))
        return readied

    def _deliver_control(self, src: Item, src_dead: bool, frame: FrameState, it: int,
                         state: IterationState) -> None:
        """Count `src`'s control edges (a dead source makes its control consumers dead)."""
        pending, dead, ready = state.pending, state.dead, self.ready
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

    def _start_iteration(self, frame: FrameState) -> IterationState:
        frame.iteration_count += 1
        frame.outstanding_iterations += 1
        frame.iterations_run += 1
        frame.dead_exits.clear()
        index = frame.iteration_count
        state = frame.iterations[index] = IterationState(frame.template)
        for item, outputs in frame.loop_invariants:
            self._deliver(item, outputs, outputs[0] is DEAD, frame, index, state)
        return state

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
                state = self._start_iteration(frame)
                for item, outputs in roots:
                    self._deliver(item, outputs, False, frame, frame.iteration_count, state)
            it += 1
            if it > frame.iteration_count:
                break
        if frame.parent is not None and not frame.iterations and frame.pending_enters == 0:
            self._delete_frame(frame)

    def _delete_frame(self, frame: FrameState) -> None:
        parent, parent_iter = frame.parent, frame.parent_iter
        assert parent is not None   # the root frame is never deleted (see _cleanup)
        name = frame.template.name
        self.stats.iterations[name] = self.stats.iterations.get(name, 0) + frame.iterations_run
        state = parent.iterations[parent_iter]
        # A loop entered only with dead values (it sits on an untaken cond branch) never runs:
        # every value leaving it is dead, as in TensorFlow.
        dead_exits = frame.template.exits if frame.live_enters == 0 else frame.dead_exits
        for exit_item in dead_exits:
            for position, port in self.fetch_slots.get(exit_item, ()):
                self.results[position], self.fetched[position] = DEAD, True
            self._deliver(exit_item, (DEAD,), True, parent, parent_iter, state)
        del state.children[name]
        state.outstanding_frames -= 1
        if state.outstanding_ops == 0:
            self._cleanup(parent, parent_iter)
