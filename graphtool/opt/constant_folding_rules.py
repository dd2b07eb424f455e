"""constfold's SimplifyGraph stage: combine the two constants of a Mul chain or an Add/Sub chain.

    Mul(c1, Mul(x, c2))  ->  Mul(x, c1*c2)
    Add(c1, Sub(x, c2))  ->  Add(x, c1-c2)
    Sub(c1, Add(x, c2))  ->  Sub(c1-c2, x)
    Add(c1, Sub(c2, x))  ->  Sub(c1+c2, x)
    RealDiv(Mul(x, c2), c1)  ->  Mul(x, c2/c1)       (floating types only, as Grappler's
    Mul(c1, RealDiv(x, c2))  ->  Mul(x, c1/c2)        ConstantPushDown: integer division
    RealDiv(RealDiv(x, c2), c1)  ->  RealDiv(x, c2*c1)  does not re-associate)

Re-associating changes floating-point rounding, so the pass skips this stage under --strict-fp
(integer arithmetic wraps the same way in either order). The inner node must be used only by the
outer one (otherwise nothing is saved), and the outer node keeps its name, device and frame.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph, Node, TensorRef
from ..shapes import Shape, ShapeError, broadcast_shapes
from .base import PassContext, Rule, const_value_within

_ADD_OPS = frozenset({"Add", "AddV2"})
_ADD_SUB_OPS = _ADD_OPS | {"Sub"}


@dataclass
class Chain:
    """outer(c_outer, inner(x, c_inner)), operands in any order."""

    outer: Node
    outer_const: Node
    outer_const_slot: int
    inner: Node
    inner_const: Node
    inner_const_slot: int
    x: TensorRef


@dataclass
class Plan:
    """The replacement: `op` with `operands`, where None stands for a new Const holding `value`."""

    op: str
    operands: list[TensorRef | None]
    value: np.ndarray


def _const_slot(node: Node) -> int | None:
    """The slot of the Const among `node`'s two data inputs when exactly one of them is a Const."""
    if len(node.inputs) != 2:
        return None
    is_const = [ref.node.op == "Const" for ref in node.inputs]
    return is_const.index(True) if is_const.count(True) == 1 else None


def match_chain(outer: Node, inner_ops: frozenset[str], ctx: PassContext) -> Chain | None:
    outer_slot = _const_slot(outer)
    if outer_slot is None:
        return None
    inner_ref = outer.inputs[1 - outer_slot]
    inner = inner_ref.node
    if inner.op not in inner_ops or not ctx.can_rewrite(inner) or inner.device != outer.device:
        return None
    if len(inner.uses()) != 1 or inner.control_uses:
        return None  # someone else reads the inner value: combining would save nothing
    inner_slot = _const_slot(inner)
    if inner_slot is None:
        return None
    return Chain(outer, outer.inputs[outer_slot].node, outer_slot, inner, inner.inputs[inner_slot].node,
                 inner_slot, inner.inputs[1 - inner_slot])


def _signs(node: Node, const_slot: int) -> tuple[int, int]:
    """(sign of the other operand, sign of the constant) in node = ±other ± const."""
    if node.op != "Sub":
        return 1, 1
    return (1, -1) if const_slot == 1 else (-1, 1)


def _signed(value: np.ndarray, sign: int) -> np.ndarray:
    return value if sign > 0 else np.negative(value)  # wraps for unsigned ints, as TensorFlow does


class ChainRule(Rule):
    """Shared matching and rewriting; subclasses say which ops chain and how the constants combine."""

    outer_ops: frozenset[str] = frozenset()
    inner_ops: frozenset[str] = frozenset()

    def __init__(self, state):
        self.state = state
        self._chain: Chain | None = None

    def plan(self, chain: Chain, a: np.ndarray, b: np.ndarray) -> Plan:  # pragma: no cover
        raise NotImplementedError

    def applies(self, node: Node, ctx: PassContext) -> bool:
        if node.op not in self.outer_ops or node.name in ctx.keep or ctx.is_side_effecting(node):
            return False
        dtype = node.attr("T")
        if not (dtype.is_floating or dtype.is_integer or dtype.is_complex):
            return False  # Add also concatenates strings, which does not re-associate
        self._chain = match_chain(node, self.inner_ops, ctx)
        return self._chain is not None

    def rewrite(self, node: Node, graph: Graph, ctx: PassContext) -> bool:
        chain, self._chain = self._chain, None
        assert chain is not None, "rewrite() follows an applies() that matched a chain"
        dtype = node.attr("T")
        # Sizes first: two filled constants of a few bytes each may claim gigabytes.
        a = const_value_within(chain.outer_const, ctx.fold_max_bytes)
        b = const_value_within(chain.inner_const, ctx.fold_max_bytes)
        if a is None or b is None:
            return False
        try:
            combined = broadcast_shapes(Shape(a.shape), Shape(b.shape)).num_elements()
        except ShapeError:
            return False
        if combined * dtype.itemsize > ctx.fold_max_bytes:
            return False
        with np.errstate(all="ignore"):
            plan = self.plan(chain, a, b)
        value = np.asarray(plan.value).astype(dtype.numpy, copy=False)
        controls = list(chain.outer_const.control_inputs) + list(chain.inner_const.control_inputs)
        if not self._keeps_shape(chain, value) or value.nbytes > ctx.fold_max_bytes:
            return False
        if not self.state.anchored(node, controls):
            return False
        const = self.state.add_const(node, value, dtype, list(dict.fromkeys(controls)))
        operands = [const.output(0) if ref is None else ref for ref in plan.operands]
        target = self._emit(node, plan.op, operands, dtype)
        for control in chain.inner.control_inputs:  # the inner node's ordering constraints survive it
            target.add_control_input(control)
        self.state.drop_orphans([chain.inner, chain.outer_const])  # the inner takes its Const along
        return True

    def _keeps_shape(self, chain: Chain, value: np.ndarray) -> bool:
        """x broadcast with the combined constant must give the shape the outer node had."""
        shapes = self.state.shapes
        try:
            new_shape = broadcast_shapes(shapes.shape(chain.x), tuple(value.shape))
        except ShapeError:
            return False
        return new_shape == shapes.shape(chain.outer.output(0))

    def _emit(self, node: Node, op: str, operands: list[TensorRef], dtype) -> Node:
        """Rewire `node` in place when the op stays; otherwise a new node takes its place."""
        if op == node.op:
            for slot, ref in enumerate(operands):
                node.set_input(slot, ref)
            return node
        new = self.state.add_like(node, op, operands, {"T": dtype})
        self.state.replace_node(node, new)
        return new


class MulChain(ChainRule):
    name = "mul_chains_combined"
    outer_ops = inner_ops = frozenset({"Mul"})

    def plan(self, chain: Chain, a: np.ndarray, b: np.ndarray) -> Plan:
        return Plan(chain.outer.op, [chain.x, None], np.multiply(a, b))


class AddSubChain(ChainRule):
    name = "add_sub_chains_combined"
    outer_ops = inner_ops = _ADD_SUB_OPS

    def plan(self, chain: Chain, a: np.ndarray, b: np.ndarray) -> Plan:
        # outer = so*inner + sa*a and inner = si*x + sb*b, so outer = so*si*x + (so*sb*b + sa*a).
        so, sa = _signs(chain.outer, chain.outer_const_slot)
        si, sb = _signs(chain.inner, chain.inner_const_slot)
        combined = np.add(_signed(b, so * sb), _signed(a, sa))
        if so * si < 0:
            return Plan("Sub", [None, chain.x], combined)                 # k - x
        if chain.outer.op in _ADD_OPS:
            return Plan(chain.outer.op, [chain.x, None], combined)        # x + k
        return Plan("Sub", [chain.x, None], np.negative(combined))        # x - (-k)


class MulDivChain(ChainRule):
    """Mul/RealDiv chains whose divisions are by the constant (x / c, never c / x)."""

    name = "mul_div_chains_combined"
    outer_ops = inner_ops = frozenset({"Mul", "RealDiv"})

    def applies(self, node: Node, ctx: PassContext) -> bool:
        if node.op not in self.outer_ops or "RealDiv" not in (node.op, *(ref.node.op for ref in node.inputs)):
            return False   # plain Mul chains are MulChain's
        if not (node.attr("T").is_floating or node.attr("T").is_complex) or not super().applies(node, ctx):
            return False
        chain = self._chain
        assert chain is not None   # super().applies() matched one
        divides_by_const = all(n.op != "RealDiv" or slot == 1 for n, slot in (
            (chain.outer, chain.outer_const_slot), (chain.inner, chain.inner_const_slot)))
        if not divides_by_const:
            self._chain = None
        return divides_by_const

    def plan(self, chain: Chain, a: np.ndarray, b: np.ndarray) -> Plan:
        outer_div, inner_div = chain.outer.op == "RealDiv", chain.inner.op == "RealDiv"
        if outer_div and inner_div:
            return Plan("RealDiv", [chain.x, None], np.multiply(b, a))
        if outer_div:
            return Plan("Mul", [chain.x, None], np.divide(b, a))
        return Plan("Mul", [chain.x, None], np.divide(a, b))


def simplify_rules(state) -> list[Rule]:
    return [MulChain(state), AddSubChain(state), MulDivChain(state)]
