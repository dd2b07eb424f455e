"""The gradient of a whole TensorFlow v1 while loop: a backward while loop.

For a forward loop that ran N iterations, the backward loop (frame `PREFIX/<loop>/while_context`,
built with GraphBuilder.while_loop) carries

    count                  N, counting down: it runs while count >= 1, so exactly N iterations
    one gradient per var   starting as the gradient of the var's Exit (zeros when nothing reads it);
                           each iteration differentiates the forward body once, from the gradient
                           of the var's next value back to the gradient of its value at the start
                           of that iteration; it leaves as the gradient of the var's initial value
    one sum per invariant  loop invariants (constant Enters) get a gradient in every iteration,
                           summed across iterations from zeros; it leaves as the invariant's gradient

The forward values the body's gradient needs are the ones of the iteration being undone: the
forward loop saved them on stacks (see stacks.py) and the backward loop pops them. Nested loops
work the same way one level down: an inner loop's gradient is built inside the outer backward
loop's body, with its iteration count saved per outer iteration like any other inner value.
"""
from __future__ import annotations

from collections import defaultdict

from .. import dtypes
from ..ir import Frame, Node, TensorRef
from ..shapes import Shape, ShapeError
from .loops import LoopInfo, LoopVar
from .stacks import GradLoopState


class TopScope:
    """The frame the gradients are taken in: forward values are used as they are."""

    def __init__(self, frame: Frame, context):
        self.frame = frame
        self.context = context          # the builder context of that frame (None: the root)

    def forward_value(self, ref: TensorRef) -> TensorRef:
        return ref

    def owner_context(self, frame: Frame):
        """The builder context owning values of `frame` (only the top frame's are tracked)."""
        return self.context if frame is self.frame else None

    def ordering_nodes(self) -> tuple[Node, ...]:
        return ()

    def after_inner_loop(self, exit_node: Node) -> None:
        """Nothing to order at the top: the backward loop runs once."""


class LoopScope:
    """Inside a backward loop: forward values of the loop's frame come from its stacks."""

    def __init__(self, state: GradLoopState, parent):
        self.state = state
        self.parent = parent

    def forward_value(self, ref: TensorRef) -> TensorRef:
        return self.state.real_value(ref)

    def owner_context(self, frame: Frame):
        return self.parent.owner_context(frame)

    def ordering_nodes(self) -> tuple[Node, ...]:
        return self.state.ordering_nodes()

    def after_inner_loop(self, exit_node: Node) -> None:
        """An inner backward loop finishes within one iteration of this one (its pops must not
        interleave with the next outer iteration's)."""
        self.state.pop_sync().add_control_input(exit_node)


def differentiate_loop(run, loop: LoopInfo, scope, exit_grads: dict[Node, TensorRef | None]
                       ) -> list[tuple[TensorRef, TensorRef]]:
    """Build the backward loop of `loop` in the current builder context (that of `scope`), given
    the gradients of its Exits; returns (Enter input, gradient) pairs."""
    info = run.info
    variables = [v for v in loop.vars if v.merge in run.on_path and info.differentiable(v.value)]
    invariants = [e for e in loop.invariants if e in run.on_path and info.differentiable(e.output(0))]
    if not variables and not invariants:
        return []
    return _BackwardLoop(run, loop, scope, variables, invariants).build(exit_grads)


class _BackwardLoop:
    def __init__(self, run, loop: LoopInfo, scope, variables: list[LoopVar], invariants: list[Node]):
        self.run = run
        self.loop = loop
        self.scope = scope
        self.variables = variables
        self.invariants = invariants
        self.state = GradLoopState(run, loop, scope)

    def build(self, exit_grads) -> list[tuple[TensorRef, TensorRef]]:
        run, b = self.run, self.run.b
        shapes = run.info.shapes
        run.loops += 1
        with run.building(self.loop.label, self.loop.loop_cond.device):
            count = self.scope.forward_value(self.state.counter.exit.output(0))
            grads = [exit_grads.get(v.exit) or self._zeros_for(v) for v in self.variables]
            sums = [b.op("ZerosLike", [self.scope.forward_value(e.inputs[0])]) for e in self.invariants]
            invariants = ([Shape.scalar()] + [shapes.shape(v.value) for v in self.variables]
                          + [shapes.shape(e.output(0)) for e in self.invariants])
        with run.building("", self.loop.loop_cond.device):
            exits = b.while_loop(self._condition, self._body, [count, *grads, *sums],
                                 shape_invariants=invariants,
                                 parallel_iterations=self.loop.parallel_iterations,
                                 name=self.loop.label)
        self.scope.after_inner_loop(exits[0].node)
        n = len(self.variables)
        return ([(v.init, g) for v, g in zip(self.variables, exits[1:1 + n])]
                + [(e.inputs[0], s) for e, s in zip(self.invariants, exits[1 + n:])])

    def _zeros_for(self, var: LoopVar) -> TensorRef:
        """The gradient of a var whose final value nothing differentiable reads: zeros shaped
        like that value (like its initial value when the loop keeps the shape)."""
        b, shapes = self.run.b, self.run.info.shapes
        # A list's scalar shape says nothing of its length (PushBack changes it): only its Exit does.
        if var.exit is not None:
            like = var.exit.output(0)
        elif shapes.shape(var.value).fully_defined and shapes.dtype(var.value).base is not dtypes.variant:
            like = var.init
        else:
            like = self._add_exit(var)
        return b.op("ZerosLike", [self.scope.forward_value(like)])

    def _add_exit(self, var: LoopVar) -> TensorRef:
        """An Exit for a var that has none (frozen graphs drop unused ones), to shape its zeros."""
        from .building import forward_node

        run = self.run
        node = forward_node(run.b, "Exit", [var.switch.output(0)], f"{var.switch.name}/grad_exit",
                            self.scope.owner_context(self.loop.frame.parent))
        run.info.record(node, self.loop.frame.parent, run.info.conds.of(var.init))
        return node.output(0)

    def _condition(self, count, *_):
        return self.run.b.op("GreaterEqual", [count, 1], name="b_count")

    def _body(self, count, *values):
        run, b = self.run, self.run.b
        self.state.bind_context(b)
        inner = LoopScope(self.state, self.scope)
        n = len(self.variables)
        grads, sums = values[:n], values[n:]
        seeds = defaultdict(list)
        for var, grad in zip(self.variables, grads):
            seeds[var.result].append(grad)
        arrived = run.backprop_region(self.loop.frame, inner, seeds)
        new_grads = [self._var_gradient(var, grad, arrived) for var, grad in zip(self.variables, grads)]
        new_sums = [self._accumulate(enter, total, arrived) for enter, total in zip(self.invariants, sums)]
        with run.building(self.loop.label):
            remaining = b.op("Sub", [count, 1], name="b_count_next")
            sync = self.state.existing_pop_sync
            if sync is not None:
                with b.control_dependencies([sync]):
                    remaining = b.op("Identity", [remaining], name="b_count_sync")
        return [remaining, *new_grads, *new_sums]

    def _var_gradient(self, var: LoopVar, grad: TensorRef, arrived) -> TensorRef:
        """The gradient of the var's value at the start of the iteration: what reached its Merge
        output and the Switch output the body reads; zeros when the body ignores the var."""
        run, b = self.run, self.run.b
        with run.grad_scope(var.switch):
            total = run.aggregate(arrived.get(var.value, []) + arrived.get(var.body_value, []))
            if total is None:
                return b.op("ZerosLike", [grad])
            return _with_shape(b, total, run.info.shapes.shape(var.value))

    def _accumulate(self, enter: Node, total: TensorRef, arrived) -> TensorRef:
        run = self.run
        with run.grad_scope(enter):
            grad = run.aggregate(arrived.get(enter.output(0)))
            if grad is None:
                return total
            # AddN adds variants too: the gradient of a TensorList invariant is a list.
            add = run.b.op("AddN", [[total, grad]]) if run.info.dtype(enter.output(0)).base is dtypes.variant \
                else run.b.op("AddV2", [total, grad])
            return _with_shape(run.b, add, run.info.shapes.shape(enter.output(0)))


def _with_shape(b, ref: TensorRef, shape: Shape) -> TensorRef:
    """Tell the builder what a gradient's shape is (that of the forward value it is the gradient
    of) when inference lost track, so it fits the backward loop's shape invariant."""
    try:
        b.set_shape(ref, shape)
    except (ShapeError, ValueError):
        pass  # incompatible: the loop's own check reports it, naming the loop var
    return ref


__all__ = ["LoopScope", "TopScope", "differentiate_loop"]
