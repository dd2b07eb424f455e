"""arithmetic: algebraic simplifications in the spirit of Grappler's ArithmeticOptimizer.

    before: y = AddN(x, x, x)                    after: y' = Mul(x, 3)
    before: y = (m1 + 2.0) + (m2 + 3.0)          after: y = (m1 + m2) + (2.0 + 3.0)   (constfold: 5.0)
    before: y = Neg(Neg(x)) * 1                  after: users of y read x

Rules (each a small Rule; the removal rules live in arithmetic_rules.py):
- a sum of one tensor k times (AddN, or a tree of Add/AddV2/AddN) -> x * k;
- (m1 + s1) + (m2 + s2) -> (m1 + m2) + (s1 + s2) for same-shape tensors m and small s (scalars or
  small constants), so the small sum can be folded and the big tensors are added once less;
- removal of identities: x*1, 1*x, x+0, 0+x, x-0, x/1 (only when the constant's broadcast keeps
  x's shape), Neg(Neg(x)), inverse Transposes, Reshape to x's own shape, Cast to the same type,
  exact Cast round trips (int32->int64->int32), Squeeze/ExpandDims pairs that cancel;
- a (conjugate) transpose of a matrix product's operand folded into the product's flags
  (arithmetic_matmul.py).
Under strict_fp the rewrites that may change floating-point results are skipped: sums of more than
three copies of a float (2x and 3x round the same as x+x and x+x+x; 4x need not), hoisting of float
sums (it reassociates), and x+(+0.0) (it turns -0.0 into +0.0).
Fetched and kept nodes are never removed; new nodes are named '<node>/arithmetic...' and take the
device of the node they replace; nothing is rewritten across loop frames, and constants are only
created outside loops (a Const in a loop frame would need the loop's pivot as a control input).
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from ..dtypes import DType
from ..ir import Graph, Node, TensorRef
from ..ops import registry
from .arithmetic_rules import (REMOVAL_RULES, FactRule, GraphFacts, add_control_inputs, broadcast_keeps_shape,
                               is_inexact, is_plain_number, remove_unused)
from .arithmetic_matmul import FoldTransposeIntoMatMul
from .base import Pass, PassContext, PassResult, apply_rules, redirect_outputs, register_pass

PASS_NAME = "arithmetic"
_MAX_SWEEPS = 10
_SUM_OPS = frozenset({"AddN", "Add", "AddV2"})
_BINARY_ADDS = frozenset({"Add", "AddV2"})
# x+x and x+x+x are rounded once, like 2*x and 3*x (2x is exact); longer float sums are not.
_EXACT_FLOAT_COPIES = 3
# A constant this small counts as a "scalar" worth hoisting out of a sum.
_SMALL_CONSTANT_ELEMENTS = 64


class SumRule(FactRule):
    """Shared by the rules that fold inner sums into a rewrite of an outer one."""

    def absorbable(self, inner: Node, outer: Node, ctx: PassContext) -> bool:
        """May `inner` (a sum feeding `outer`) be folded into outer's rewrite and then removed?"""
        return (inner.op in _SUM_OPS and len(inner.uses()) == 1 and not inner.control_uses
                and ctx.can_rewrite(inner) and inner.device == outer.device
                and self.facts.dtype(inner.output(0)) == self.facts.dtype(outer.output(0)))

    def applies(self, node: Node, ctx: PassContext) -> bool:
        return node.op in self.ops and self.match(node, ctx) is not None

    def rewrite(self, node: Node, graph: Graph, ctx: PassContext) -> bool:
        plan = self.match(node, ctx)
        if plan is None:
            return False
        self.apply(plan, node, graph, ctx)
        return True

    def match(self, node: Node, ctx: PassContext):  # pragma: no cover - interface
        raise NotImplementedError

    def apply(self, plan, node: Node, graph: Graph, ctx: PassContext) -> None:  # pragma: no cover
        raise NotImplementedError


def _controls_of(nodes: list[Node]) -> list[Node]:
    return list(dict.fromkeys(c for n in nodes for c in n.control_inputs))


class AggregateSameInput(SumRule):
    """AddN(x, x, x), or (x + x) + x -> Mul(x, 3)."""

    name = "same_input_sums_to_mul"
    ops = _SUM_OPS

    def match(self, root: Node, ctx: PassContext) -> tuple[TensorRef, int, list[Node]] | None:
        plan = self._plan(root, ctx)
        if plan is None:
            return None
        # Sweeps go producers first: leave (x + x) + x to the enclosing sum when that one is a
        # sum of copies of x as well, so that ((x + x) + x) + x becomes 4 * x, not 3 * x + x.
        top = self._enclosing_sum(root, ctx)
        return plan if top is root or self._plan(top, ctx) is None else None

    def _enclosing_sum(self, node: Node, ctx: PassContext) -> Node:
        """The outermost sum whose tree `node` would be folded into."""
        while len(node.uses()) == 1:
            user = node.uses()[0][0]
            if user.op not in _SUM_OPS or not self.absorbable(node, user, ctx):
                break
            node = user
        return node

    def _plan(self, root: Node, ctx: PassContext) -> tuple[TensorRef, int, list[Node]] | None:
        if not ctx.can_rewrite(root):
            return None
        leaves, tree = self._sum_tree(root, ctx)
        copies = len(leaves)
        if copies < 2:
            return None
        x = leaves[0]
        # A lone Add(x, x) would trade one node for two (Mul + Const); AddN is Grappler's case.
        if any(leaf != x for leaf in leaves) or (root.op != "AddN" and len(tree) < 2):
            return None
        dtype = self.facts.dtype(root.output(0))
        if dtype != self.facts.dtype(x) or not _mul_supports(dtype) or not _representable(copies, dtype):
            return None
        if ctx.strict_fp and (dtype.is_complex or (dtype.is_floating and copies > _EXACT_FLOAT_COPIES)):
            return None  # complex x*(k+0j) is not x+...+x when x has an infinite part
        # The factor is a new Const: only outside loops, where it needs no frame pivot.
        if not all(self.facts.in_root_frame(n) for n in tree):
            return None
        return x, copies, tree

    def _sum_tree(self, root: Node, ctx: PassContext) -> tuple[list[TensorRef], list[Node]]:
        """The summed tensors of the tree of sums rooted at `root`, and the tree's nodes."""
        leaves, tree, work = [], [root], list(root.inputs)
        while work:
            ref = work.pop()
            if ref.index == 0 and self.absorbable(ref.node, root, ctx):
                tree.append(ref.node)
                work.extend(ref.node.inputs)
            else:
                leaves.append(ref)
        return leaves, tree

    def apply(self, plan, root: Node, graph: Graph, ctx: PassContext) -> None:
        x, copies, tree = plan
        dtype = self.facts.dtype(root.output(0))
        factor = graph.add_node("Const", ctx.new_name(graph, root, PASS_NAME, "factor"), device=root.device,
                                attrs={"dtype": dtype, "value": np.array(copies, dtype=dtype.numpy)})
        product = graph.add_node("Mul", ctx.new_name(graph, root, PASS_NAME), inputs=[x, factor.output(0)],
                                 control_inputs=_controls_of(tree), attrs={"T": dtype}, device=root.device)
        redirect_outputs(graph, root, [product.output(0)])
        remove_unused(graph, ctx, root)


def _mul_supports(dtype: DType) -> bool:
    allowed = registry.get("Mul").attrs["T"].allowed
    return allowed is None or dtype in allowed


def _representable(number: int, dtype: DType) -> bool:
    return bool(np.array(number).astype(dtype.numpy) == number)


class HoistSmallAddends(SumRule):
    """(m1 + s1) + (m2 + s2) -> (m1 + m2) + (s1 + s2), m1 and m2 of one fully known shape, s1 and s2
    scalars or small constants whose broadcast keeps that shape. Integer sums wrap around the same
    in any order; float sums are reassociated, so not under strict_fp."""

    name = "small_addends_hoisted"
    ops = _BINARY_ADDS

    def match(self, outer: Node, ctx: PassContext) -> tuple[list[tuple[TensorRef, TensorRef]], list[Node]] | None:
        dtype = self.facts.dtype(outer.output(0))
        if ctx.is_side_effecting(outer) or not is_plain_number(dtype) or (ctx.strict_fp and is_inexact(dtype)):
            return None
        inners = [ref.node for ref in outer.inputs]
        if len(inners) != 2 or inners[0] is inners[1] or any(ref.index != 0 for ref in outer.inputs):
            return None
        if not all(inner.op in _BINARY_ADDS and self.absorbable(inner, outer, ctx) for inner in inners):
            return None
        first, second = (self._split(inner) for inner in inners)
        if first is None or second is None or not self.facts.one_frame([outer, *inners]):
            return None
        splits = [first, second]
        (m1, s1), (m2, s2) = splits
        shape = self.facts.shape(m1)
        same_shape = shape.fully_defined and self.facts.shape(m2) == shape == self.facts.shape(outer.output(0))
        if not same_shape or not all(broadcast_keeps_shape(shape, self.facts.shape(s)) for s in (s1, s2)):
            return None
        return splits, inners

    def _split(self, inner: Node) -> tuple[TensorRef, TensorRef] | None:
        """(big, small) operands of `inner`, when exactly one of them is small."""
        a, b = inner.inputs
        small_a, small_b = self._is_small(a), self._is_small(b)
        if small_a == small_b:
            return None
        return (b, a) if small_a else (a, b)

    def _is_small(self, ref: TensorRef) -> bool:
        size = self.facts.shape(ref).num_elements()
        if size is None:   # not fully defined
            return False
        return size == 1 or (size <= _SMALL_CONSTANT_ELEMENTS and self.facts.value(ref) is not None)

    def apply(self, plan, outer: Node, graph: Graph, ctx: PassContext) -> None:
        ((m1, s1), (m2, s2)), inners = plan
        dtype = self.facts.dtype(outer.output(0))

        def add(a: TensorRef, b: TensorRef, suffix: str) -> TensorRef:
            return graph.add_node("AddV2", ctx.new_name(graph, outer, PASS_NAME, suffix), inputs=[a, b],
                                  attrs={"T": dtype}, device=outer.device).output(0)

        outer.set_input(0, add(m1, m2, "tensors"))
        outer.set_input(1, add(s1, s2, "small"))
        add_control_inputs(outer, _controls_of(inners))
        for inner in inners:
            remove_unused(graph, ctx, inner)


RULES = (*REMOVAL_RULES, AggregateSameInput, HoistSmallAddends, FoldTransposeIntoMatMul)


@register_pass
class ArithmeticOptimizer(Pass):
    """Runs the rules in sweeps (shape facts are recomputed between sweeps, so nodes a sweep
    creates are looked at by the next) until a sweep changes nothing."""

    name = PASS_NAME
    description = "algebraic simplifications: x*1, Neg(Neg(x)), inverse transposes, x+x+x -> 3*x, ..."

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        totals: Counter[str] = Counter()
        for _ in range(_MAX_SWEEPS):
            facts = GraphFacts(graph)
            result = apply_rules(graph, ctx, [rule(facts) for rule in RULES])
            if not result.changed:
                break
            totals.update(result.stats)
        return PassResult.from_counts(**totals)
