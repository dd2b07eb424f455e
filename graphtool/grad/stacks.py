"""Saving forward loop values for the backward loop: iteration counters and stacks.

For each forward loop being differentiated (frame F, entered from frame P):

    forward counter (in F):  Enter(0) -> Merge -> Switch(LoopCond) -> Identity -> +1 -> NextIteration
                             Switch:0 -> Exit: the number of iterations, in P
    per saved value v:       StackV2 (made where the gradients are taken) -Enter...-> StackPushV2(v) in F

Each push runs after the counter's increment of its iteration, and the counter's NextIteration
waits for the pushes, so iteration k's pushes all happen before iteration k+1's: the stack holds
the values in iteration order. A push in a cond branch is dead when its branch did not run; its
ordering edge goes through a ControlTrigger (which runs even when its inputs are dead) so that it
does not kill the counter.

The backward loop pops in reverse: a StackPopV2 of a value in a cond branch is guarded by a
Switch on the saved predicate (a branch that did not run pushed nothing), and the backward
counter's next value waits (through another ControlTrigger) for the iteration's pops, which
orders the pops of consecutive iterations the same way.

A value in an outer frame is not saved here: the outer loop's state provides it (an outer
backward loop pops it once per outer iteration) and the builder enters it as a loop constant.
Loop invariants are used as they are, and statically known values become constants.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import dtypes
from ..errors import RuntimeFailure
from ..ir import Frame, Node, TensorRef
from .building import current_context, entered, forward_node
from .forward import constant_enter_of, is_ancestor
from .loops import LoopInfo


@dataclass
class ForwardCounter:
    add: Node              # the increment: the iteration's pushes run after it
    next_iteration: Node   # waits for the iteration's pushes
    exit: Node             # the iteration count, in the parent frame


class GradLoopState:
    """One forward loop's gradient bookkeeping: its counter, the values saved for the backward
    loop, and that loop's builder context once its body is being built."""

    def __init__(self, run, loop: LoopInfo, parent):
        self.run = run
        self.loop = loop
        self.parent = parent            # the scope of the frame the loop was entered from
        self.context = None             # the backward loop's builder context
        self._values: dict[TensorRef, TensorRef] = {}
        self._pop_sync: Node | None = None
        self._push_sync: Node | None = None
        self.counter = self._build_counter()

    @property
    def frame(self) -> Frame:
        return self.loop.frame

    # --- the forward counter ----------------------------------------------------------------
    def _build_counter(self) -> ForwardCounter:
        run, loop = self.run, self.loop
        b, info = run.b, run.info
        outer = self.frame.parent
        entry = loop.vars[0].init
        entry_branch = info.conds.of(entry)
        outer_context = self.parent.owner_context(outer)
        base = f"{run.prefix}/{loop.label}/f_count"

        def in_outer(op, inputs, name, controls=(), **attrs) -> Node:
            node = forward_node(b, op, inputs, f"{base}/{name}", outer_context, controls, **attrs)
            info.record(node, outer, entry_branch)
            return node

        def in_loop(op, inputs, name, controls=(), **attrs) -> Node:
            node = forward_node(b, op, inputs, f"{base}/{name}", None, controls, **attrs)
            info.record(node, self.frame, None)
            return node

        with b.device(None), b.device(loop.loop_cond.device):
            # The start value runs exactly when the loop does (dead on an untaken cond branch),
            # and, in a nested loop, after the outer counter's increment of this outer iteration.
            pivot = in_outer("Identity", [entry], "pivot")
            start = in_outer("Const", [], "start", (pivot, *self.parent.ordering_nodes()),
                             value=np.asarray(0, np.int32), dtype=dtypes.int32)
            enter = in_loop("Enter", [start.output(0)], "Enter", frame_name=self.frame.name,
                            is_constant=False, parallel_iterations=loop.parallel_iterations)
            merge = in_loop("Merge", [[enter.output(0), enter.output(0)]], "Merge")
            switch = in_loop("Switch", [merge.output(0), loop.loop_cond.output(0)], "Switch")
            body = in_loop("Identity", [switch.output(1)], "Identity")
            one = in_loop("Const", [], "one", (body,), value=np.asarray(1, np.int32), dtype=dtypes.int32)
            add = in_loop("AddV2", [body.output(0), one.output(0)], "add")
            next_iteration = in_loop("NextIteration", [add.output(0)], "NextIteration")
            merge.set_input(1, next_iteration.output(0))
            exit_node = forward_node(b, "Exit", [switch.output(0)], f"{base}/Exit", outer_context)
            info.record(exit_node, outer, entry_branch)
        return ForwardCounter(add, next_iteration, exit_node)

    def ordering_nodes(self) -> tuple[Node, ...]:
        """Nodes an inner loop's counter start waits for (this loop's current increment), so
        inner pushes of consecutive outer iterations do not interleave."""
        return (self.counter.add,)

    # --- forward values in the backward loop ------------------------------------------------
    def real_value(self, ref: TensorRef) -> TensorRef:
        """The value `ref` had in the forward iteration the backward loop is undoing."""
        found = self._values.get(ref)
        if found is None:
            found = self._values[ref] = self._real_value(ref)
        return found

    def _real_value(self, ref: TensorRef) -> TensorRef:
        frame = self.run.info.frame_of(ref)
        if frame is not self.frame:
            if is_ancestor(frame, self.frame):
                return self.parent.forward_value(ref)
            raise RuntimeFailure(f"internal error: value '{ref.name}' of frame '{frame.name}' is used "
                                 f"by the gradient of loop '{self.frame.name}'")
        enter = constant_enter_of(ref, self.frame)
        if enter is not None:
            return self.parent.forward_value(enter.inputs[0])
        known = self.run.b.value(ref)
        if known is not None:
            return self._constant(ref, known)
        return self._pop(self._push(ref), ref)

    def _constant(self, ref: TensorRef, value: np.ndarray) -> TensorRef:
        run = self.run
        with entered(run.b, self.context), run.building(_value_path(ref)):
            return run.b.const(value, dtype=run.info.dtype(ref).base, name="value")

    def _push(self, ref: TensorRef) -> TensorRef:
        """Save `ref` on a new stack in every forward iteration; returns the stack's handle,
        made where the gradients are taken."""
        run = self.run
        b, info = run.b, run.info
        top = run.top
        run.stacks += 1
        with entered(b, top.context), run.building(_value_path(ref), ref.node.device):
            handle = b.op("StackV2", [-1], name="f_acc", elem_type=info.dtype(ref).base)
            inner = self._enter_chain(handle, top.frame)
            push = forward_node(b, "StackPushV2", [inner, ref], f"{b_scope(run, ref)}/push", None,
                                (self.counter.add,))
        branch = info.conds.of(ref)
        info.record(push, self.frame, branch)
        # A push on a cond branch may be dead: order it through a ControlTrigger (see module doc).
        (self._forward_sync() if branch is not None else self.counter.next_iteration).add_control_input(push)
        return handle

    def _enter_chain(self, handle: TensorRef, top_frame: Frame) -> TensorRef:
        """`handle` entered as a loop constant into each frame from the top one down to F."""
        path: list[Frame] = []
        frame: Frame | None = self.frame
        while frame is not top_frame:
            assert frame is not None, "the top frame encloses this one"
            path.append(frame)
            frame = frame.parent
        run = self.run
        for frame in reversed(path):
            enter = forward_node(run.b, "Enter", [handle], f"{b_scope(run, handle)}/Enter", None,
                                 frame_name=frame.name, is_constant=True,
                                 parallel_iterations=frame.parallel_iterations)
            run.info.record(enter, frame, None)
            handle = enter.output(0)
        return handle

    def _forward_sync(self) -> Node:
        if self._push_sync is None:
            run = self.run
            self._push_sync = forward_node(run.b, "ControlTrigger", [],
                                           f"{run.prefix}/{self.loop.label}/f_sync", None)
            run.info.record(self._push_sync, self.frame, None)
            self.counter.next_iteration.add_control_input(self._push_sync)
        return self._push_sync

    def _pop(self, handle: TensorRef, ref: TensorRef) -> TensorRef:
        run = self.run
        b, info = run.b, run.info
        branch = info.conds.of(ref)
        pred = self.real_value(branch.pred) if branch is not None else None
        with entered(b, self.context), run.building(_value_path(ref), ref.node.device):
            source = handle
            if branch is not None:
                # Only an iteration that ran the branch pushed a value.
                source = b.op("Switch", [handle, pred], name="guard")[branch.branch]
            value = b.op("StackPopV2", [source], name="pop", elem_type=info.dtype(ref).base)
            b.set_shape(value, info.shapes.shape(ref))
        self.pop_sync().add_control_input(value.node)
        return value

    def pop_sync(self) -> Node:
        """The ControlTrigger the backward counter's next value waits for: every pop of an
        iteration, and every inner backward loop, finishes before the next iteration starts."""
        if self._pop_sync is None:
            run = self.run
            with entered(run.b, self.context), run.building(self.loop.label):
                self._pop_sync = run.b.op("ControlTrigger", [], name="b_sync")
        return self._pop_sync

    @property
    def existing_pop_sync(self) -> Node | None:
        """The pop ControlTrigger if anything needs ordering (None: no pops, no inner loops)."""
        return self._pop_sync

    def bind_context(self, builder) -> None:
        """Called when the backward loop's body starts: pops are built in that loop."""
        self.context = current_context(builder)


def _value_path(ref: TensorRef) -> str:
    """The name scope (under the prefix) of what is made to save or restore `ref`."""
    return ref.node.name if ref.index == 0 else f"{ref.node.name}_{ref.index}"


def b_scope(run, ref: TensorRef) -> str:
    """The absolute scope of what is made for `ref` (for nodes named without the builder's scopes)."""
    return f"{run.prefix}/{_value_path(ref)}"
