"""Reverse-mode differentiation of one frame's nodes: the walk the driver and every backward
loop body run.

A region is the computation of one frame: the frame the gradients are taken in, or the body of
a while loop being differentiated. Its units are its nodes (without the frame's own loop
machinery: Merge/Switch/LoopCond/NextIteration/Exit), plus one unit per loop nested directly in
it, which stands for the whole loop (inputs: its Enters' inputs, outputs: its Exits). Units on a
path from an x to y are visited in reverse topological order, each after every unit that reads
it, so the gradients arriving at a value from several consumers are complete (and summed with
AddN) before they are used.
"""
from __future__ import annotations

import heapq
from collections import defaultdict
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..builder.binding import GraphBuildError
from ..errors import InvalidGraphError, RuntimeFailure
from ..ir import Frame, Node, TensorRef
from ..ir.frames import ENTER_OPS, EXIT_OPS, NEXT_ITERATION_OPS
from . import registry
from .conds import CondBranch, is_loop_merge, is_loop_switch
from .forward import ForwardInfo, child_toward, is_ancestor
from .registry import GradContext
from .unsupported import NO_GRADIENT

if TYPE_CHECKING:
    from .while_loop import TopScope

Grads = dict[TensorRef, list[TensorRef]]


class DriverGradContext(GradContext):
    """The GradContext the driver passes: forward values through the current scope (popped from
    stacks inside backward loops), plus what the control-flow gradients need (any forward value,
    the cond structure) and the run (its name prefix names TensorArray gradients)."""

    def __init__(self, run: "Backprop", scope, node: Node):
        super().__init__(run.b, node, scope.forward_value)
        self.run = run

    def forward(self, ref: TensorRef) -> TensorRef:
        """Any forward value, usable in the backward computation."""
        return self._forward_value(ref)

    def merge_input_branch(self, slot: int) -> CondBranch | None:
        """The branch of the cond this Merge closes that its input `slot` comes from."""
        return self.run.info.conds.merge_input_branch(self.node, slot)


class Backprop:
    """What one add_gradients call shares: the builder, the forward analysis, the nodes on the
    paths from the xs to y, the name prefix, and counters for the report."""

    def __init__(self, builder, info: ForwardInfo, on_path: set[Node], prefix: str):
        self.b = builder
        self.info = info
        self.on_path = on_path
        self.prefix = prefix
        self.position = {node: i for i, node in enumerate(info.graph.nodes)}
        self.top: TopScope | None = None   # set by the driver
        self.loops = 0           # backward while loops built
        self.stacks = 0          # forward values saved on stacks

    # --- naming and placement ---------------------------------------------------------------
    @contextmanager
    def building(self, path: str, device: str | None = None):
        """Build under the absolute name scope `PREFIX/path/` (`PREFIX/` for an empty path) on
        `device` (the forward node's: backward nodes stay with the forward node they
        differentiate, as TensorFlow's colocate_gradients_with_ops does)."""
        scope = f"{self.prefix}/{path}/" if path else f"{self.prefix}/"
        with self.b.name_scope(scope), self.b.device(None), self.b.device(device or ""):
            yield

    @contextmanager
    def grad_scope(self, node: Node):
        """`PREFIX/<node>_grad/`, where the gradient of `node` is built. A backward node the
        builder refuses (its shapes or dtypes do not fit) means the forward graph is inconsistent
        around `node`: an InvalidGraphError naming it."""
        try:
            with self.building(f"{node.name}_grad", node.device):
                yield
        except GraphBuildError as exc:
            raise InvalidGraphError(f"cannot differentiate node '{node.name}' ({node.op}): {exc}",
                                    hint="its inputs' shapes or dtypes do not fit together "
                                         "(dftool inspect shows them)") from None

    # --- sums -------------------------------------------------------------------------------
    def aggregate(self, grads: list[TensorRef] | None) -> TensorRef | None:
        """One gradient from the partial gradients of a value (AddN, in arrival order)."""
        if not grads:
            return None
        if len(grads) == 1:
            return grads[0]
        return self.b.op("AddN", [list(grads)])

    def take(self, grads: Grads, ref: TensorRef) -> TensorRef | None:
        """The summed gradient of `ref`; the sum replaces the parts, so it is built once."""
        total = self.aggregate(grads.get(ref))
        if total is not None:
            grads[ref] = [total]
        return total

    # --- the walk ---------------------------------------------------------------------------
    def backprop_region(self, frame: Frame, scope, seeds: Grads) -> Grads:
        """Differentiate the region of `frame` given the gradients `seeds` of some of its values;
        returns every partial gradient that arrived (at the region's sources: the xs, a loop's
        Merge/Switch outputs and loop invariants)."""
        grads: Grads = defaultdict(list)
        for ref, parts in seeds.items():
            grads[ref].extend(parts)
        region = _Region(self, frame)
        for unit in region.reverse_topological():
            if isinstance(unit, Frame):
                self._backprop_loop(unit, scope, grads)
            else:
                self._backprop_node(unit, scope, grads)
        return grads

    def _backprop_node(self, node: Node, scope, grads: Grads) -> None:
        outputs = node.outputs
        if not any(grads.get(ref) for ref in outputs) or registry.is_not_differentiable(node.op):
            return
        function = registry.lookup(node.op)
        if function is None:
            raise RuntimeFailure(f"no gradient is registered for op '{node.op}' (node '{node.name}'), "
                                 f"which is on the path from x to y",
                                 hint=NO_GRADIENT.get(node.op, "differentiate with respect to a tensor past "
                                                               "it, or register a gradient"))
        with self.grad_scope(node):
            out_grads = [self.take(grads, ref) for ref in outputs]
            in_grads = function(DriverGradContext(self, scope, node), out_grads)
        if len(in_grads) != len(node.inputs):
            raise RuntimeFailure(f"the gradient of op '{node.op}' (node '{node.name}') returned "
                                 f"{len(in_grads)} entries for {len(node.inputs)} inputs")
        for ref, grad in zip(node.inputs, in_grads):
            if grad is not None and self.info.differentiable(ref):
                grads[ref].append(grad)

    def _backprop_loop(self, frame: Frame, scope, grads: Grads) -> None:
        loop = self.info.loop(frame)
        exit_grads = {}
        for exit_node in frame.exits:
            with self.grad_scope(exit_node):
                exit_grads[exit_node] = self.take(grads, exit_node.output(0))
        if all(grad is None for grad in exit_grads.values()):
            return
        from .while_loop import differentiate_loop  # while_loop builds its bodies with this walk

        for ref, grad in differentiate_loop(self, loop, scope, exit_grads):
            grads[ref].append(grad)


def is_loop_machinery(node: Node) -> bool:
    """A node that makes a while loop a loop rather than computing in it."""
    return (node.op == "LoopCond" or node.op in NEXT_ITERATION_OPS or node.op in EXIT_OPS
            or is_loop_merge(node) or is_loop_switch(node))


class _Region:
    """The units of one frame on the paths from the xs to y, and their dependencies."""

    def __init__(self, run: Backprop, frame: Frame):
        self.run = run
        self.frame = frame
        self.units: dict[object, None] = {}
        for node in sorted(run.on_path, key=run.position.__getitem__):
            unit = self.unit_of(node)
            if unit is not None:
                self.units[unit] = None

    def unit_of(self, node: Node):
        """The node itself, the nested loop (a Frame) it belongs to, or None outside the region."""
        if node not in self.run.on_path:
            return None
        info = self.run.info
        frame = info.node_frame(node)
        if frame is self.frame:
            if node.op in ENTER_OPS:
                entered = info.frame_of(node)
                return entered if entered is not frame else None
            return None if is_loop_machinery(node) else node
        if frame is not None and frame is not self.frame and is_ancestor(self.frame, frame):
            return child_toward(self.frame, frame)
        return None

    def _outputs(self, unit) -> list[TensorRef]:
        if isinstance(unit, Frame):
            return [exit_node.output(0) for exit_node in unit.exits]
        return unit.outputs

    def _inputs(self, unit) -> list[TensorRef]:
        if isinstance(unit, Frame):
            return [enter.inputs[0] for enter in unit.enters]
        return list(unit.inputs)

    def _linked(self, refs, endpoint) -> list:
        """Distinct units at the other end of `refs` (consumers or producers) in this region."""
        found: dict[object, None] = {}
        for node in endpoint(refs):
            unit = self.unit_of(node)
            if unit is not None and unit in self.units:
                found[unit] = None
        return list(found)

    def consumers(self, unit) -> list:
        return self._linked(self._outputs(unit),
                            lambda refs: (c for ref in refs for c, _ in ref.node.uses(ref.index)))

    def producers(self, unit) -> list:
        return self._linked(self._inputs(unit), lambda refs: (ref.node for ref in refs))

    def _order_key(self, unit) -> int:
        position = self.run.position
        if isinstance(unit, Frame):
            return max(position.get(node, -1) for node in unit.exits + unit.enters)
        return position.get(unit, -1)

    def reverse_topological(self):
        """Every unit after all units that read it; among ready ones, the latest in the file
        first (deterministic)."""
        pending = {unit: len([c for c in self.consumers(unit) if c is not unit]) for unit in self.units}
        ready = [(-self._order_key(u), i, u) for i, u in enumerate(self.units) if pending[u] == 0]
        heapq.heapify(ready)
        counter = len(self.units)
        done = 0
        while ready:
            _, _, unit = heapq.heappop(ready)
            done += 1
            yield unit
            for producer in self.producers(unit):
                if producer is unit:
                    continue
                pending[producer] -= 1
                if pending[producer] == 0:
                    counter += 1
                    heapq.heappush(ready, (-self._order_key(producer), counter, producer))
        if done != len(self.units):
            stuck = sorted(getattr(u, "name", str(u)) for u, n in pending.items() if n > 0)
            raise RuntimeFailure(f"cannot order the gradient computation in frame "
                                 f"'{self.frame.name or '(root)'}': a cycle through {', '.join(stuck[:3])}")
