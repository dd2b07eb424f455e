"""The arithmetic pass's removal rules, and what every arithmetic rule shares.

Each removal rule finds a node that computes one of its inputs again (`x * 1`, `Neg(Neg(x))`,
`Reshape(x, shape(x))`, ...) and *bypasses* it: its users read that input instead. A bypass must
keep three things a plain rewiring would lose:
- ordering: the bypassed nodes' control inputs are passed on to their users;
- deadness (v1 cond): a node is dead when any of its inputs is; the inputs the bypass drops (the
  constant `1`, the permutation of a Transpose, ...) may be dead while `x` is not, so their
  dependencies are passed on too (a Const's own control inputs, i.e. its cond pivot);
- the exact dtype and shape: `x * ones([3, 4])` with x of shape [4] is NOT x.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from ..dtypes import COMPLEX, FLOATING, INTEGER, DType, bool_
from ..ir import Graph, Node, TensorRef
from ..shape_inference import infer_shapes
from ..shapes import Shape, has_rank
from .base import PassContext, Rule, redirect_outputs

CONST_OPS = frozenset({"Const", "HostConst"})
_SWITCH_OPS = frozenset({"Switch", "RefSwitch"})


class GraphFacts:
    """What the rules may assume at the start of a sweep: static dtypes, shapes and values (shape
    inference), loop frames, and which nodes may be dead (downstream of a Switch). Nodes created
    during the sweep are unknown here, so rules decline on them until the next sweep."""

    def __init__(self, graph: Graph):
        self._shapes = infer_shapes(graph)
        self._frames = graph.frames()
        self._maybe_dead = _downstream_of(n for n in graph.nodes if n.op in _SWITCH_OPS)

    def dtype(self, ref: TensorRef) -> DType:
        return self._shapes.dtype(ref)

    def shape(self, ref: TensorRef) -> Shape:
        return self._shapes.shape(ref)

    def value(self, ref: TensorRef) -> np.ndarray | None:
        """The fully known value of `ref`, or None."""
        return self._shapes.value(ref)

    def may_be_dead(self, node: Node) -> bool:
        return node in self._maybe_dead

    def one_frame(self, nodes=(), values=()) -> bool:
        """Do `nodes` run, and `values` live, in one loop frame (all known to this sweep)?"""
        frame_of = self._frames.frame_of
        found = {frame_of.get(n) for n in nodes}
        found |= {self._frames.output_frame(r.node) if r.node in frame_of else None for r in values}
        return None not in found and len(found) == 1

    def in_root_frame(self, node: Node) -> bool:
        frame = self._frames.frame_of.get(node)
        return frame is not None and frame.is_root


def _downstream_of(sources) -> set[Node]:
    seen: set[Node] = set()
    work = list(sources)
    while work:
        node = work.pop()
        if node not in seen:
            seen.add(node)
            work.extend(node.consumers())
    return seen


class FactRule(Rule):
    """A rule that reads the sweep's GraphFacts."""

    ops: frozenset[str] = frozenset()

    def __init__(self, facts: GraphFacts):
        self.facts = facts


# --- shared checks ------------------------------------------------------------------------------
def is_plain_number(dtype: DType) -> bool:
    """Integer, floating or complex (not bool, string, quantized or a handle)."""
    return dtype.is_integer or dtype.is_floating or dtype.is_complex


def is_inexact(dtype: DType) -> bool:
    """Floating or complex: rewrites may change the rounding of these."""
    return dtype.is_floating or dtype.is_complex


def broadcast_keeps_shape(x: Shape, other: tuple[int | None, ...] | Shape) -> bool:
    """Does broadcasting `x` against a tensor of shape `other` leave x's shape as it is?"""
    other = Shape.of(other)
    if not has_rank(other):
        return False
    if not has_rank(x):
        return other.rank == 0
    if other.rank > x.rank:
        return False
    aligned = x.dims[x.rank - other.rank:]
    return all(o == 1 or (o is not None and o == d) for d, o in zip(aligned, other.dims))


def single_int(value: np.ndarray | None) -> int | None:
    """The one integer in a scalar or 1-element array (ExpandDims' `dim`), else None."""
    if value is None or value.size != 1 or value.dtype.kind not in "iu":
        return None
    return int(value.reshape(-1)[0])


# --- graph surgery -----------------------------------------------------------------------------
def remove_unused(graph: Graph, ctx: PassContext, node: Node) -> None:
    """Remove `node` if nothing uses it and it may go, then the producers that only it used."""
    work = [node]
    while work:
        node = work.pop()
        if graph.get(node.name) is not node or node.has_users or not ctx.can_rewrite(node):
            continue
        producers = list(dict.fromkeys(node.input_nodes()))
        graph.remove_node(node)
        work.extend(producers)


def _is_control_flow(node: Node) -> bool:
    return node.spec is None or node.spec.control_flow


def add_control_inputs(node: Node, controls) -> None:
    for control in controls:
        if control is not node:
            node.add_control_input(control)


class Bypass:
    """`path[0]` computes `value` again through `path` (outer node first): users of path[0] may read
    `value` instead. Every other data input of the path is dropped."""

    def __init__(self, value: TensorRef, path: list[Node]):
        self.value = value
        self.path = path

    def dropped_inputs(self) -> list[TensorRef]:
        kept = {n.output(0) for n in self.path[1:]} | {self.value}
        return [ref for node in self.path for ref in node.inputs if ref not in kept]


class BypassRule(FactRule):
    """Base of the removal rules: subclasses say, in `bypass(node, ctx)`, which input `node` computes
    again; this class checks what every bypass must respect and does the rewiring."""

    def bypass(self, node: Node, ctx: PassContext) -> Bypass | None:  # pragma: no cover - interface
        raise NotImplementedError

    def applies(self, node: Node, ctx: PassContext) -> bool:
        return node.op in self.ops and self._plan(node, ctx) is not None

    def rewrite(self, node: Node, graph: Graph, ctx: PassContext) -> bool:
        plan = self._plan(node, ctx)
        if plan is None:
            return False
        bypass, controls = plan
        for user in node.consumers():
            add_control_inputs(user, controls)
        redirect_outputs(graph, node, [bypass.value])
        for removed in [*bypass.path, *(ref.node for ref in bypass.dropped_inputs())]:
            remove_unused(graph, ctx, removed)
        return True

    def _plan(self, node: Node, ctx: PassContext) -> tuple[Bypass, list[Node]] | None:
        """The bypass and the control inputs its users must get, if it is safe."""
        if not ctx.can_rewrite(node):
            return None
        bypass = self.bypass(node, ctx)
        if bypass is None or not self._same_tensor_type(node.output(0), bypass.value):
            return None
        if not self.facts.one_frame(bypass.path, [bypass.value]):
            return None
        # `^node` users move to the value's producer; a Switch's control edges are not dead like
        # its outputs, so that would change when they run.
        if node.control_uses and _is_control_flow(bypass.value.node):
            return None
        controls = self._dependencies(bypass)
        if controls is None:
            return None
        # A control-flow user (Merge, NextIteration, ...) treats control inputs and deadness
        # specially: do not give it new ones.
        if controls and any(_is_control_flow(u) for u in node.consumers()):
            return None
        return bypass, controls

    def _same_tensor_type(self, old: TensorRef, new: TensorRef) -> bool:
        facts = self.facts
        return facts.dtype(old) == facts.dtype(new) and facts.shape(old).is_compatible_with(facts.shape(new))

    def _dependencies(self, bypass: Bypass) -> list[Node] | None:
        """Control inputs that keep the path's ordering and deadness for its users; None when a
        dropped input's deadness cannot be carried by a control edge (it comes from a Switch,
        whose control edges are not dead like its outputs)."""
        controls = {c: None for n in bypass.path for c in n.control_inputs}
        for ref in bypass.dropped_inputs():
            producer = ref.node
            if not self.facts.may_be_dead(producer):
                continue
            if producer.op in CONST_OPS:
                controls.update(dict.fromkeys(producer.control_inputs))
            elif _is_control_flow(producer):
                return None
            else:
                controls[producer] = None
        return list(controls)


# --- x op neutral -> x ----------------------------------------------------------------------------
# op -> (neutral value, which input may hold it: 0 left, 1 right)
_NEUTRAL = {"Mul": (1, (0, 1)), "Add": (0, (0, 1)), "AddV2": (0, (0, 1)), "Sub": (0, (1,)),
            "RealDiv": (1, (1,)), "Div": (1, (1,))}


class RemoveNeutralOperand(BypassRule):
    """x*1, 1*x, x+0, 0+x, x-0, x/1 -> x, when the constant's broadcast leaves x's shape alone.

    Exact for integers; for floats x*1, x/1 and x-(+0) are exact, but x+(+0) turns -0.0 into +0.0,
    so under strict_fp an added zero must be -0.0 (and a subtracted one +0.0)."""

    name = "neutral_operand_removed"
    ops = frozenset(_NEUTRAL)

    def bypass(self, node: Node, ctx: PassContext) -> Bypass | None:
        neutral, slots = _NEUTRAL[node.op]
        if len(node.inputs) != 2 or not is_plain_number(self.facts.dtype(node.output(0))):
            return None
        for slot in slots:
            constant, x = node.inputs[slot], node.inputs[1 - slot]
            if self._is_neutral(node, constant, x, neutral, ctx):
                return Bypass(x, [node])
        return None

    def _is_neutral(self, node: Node, constant: TensorRef, x: TensorRef, neutral: int, ctx: PassContext) -> bool:
        value = self.facts.value(constant)
        if value is None or value.size == 0 or not np.all(value == neutral):
            return False
        if not broadcast_keeps_shape(self.facts.shape(x), value.shape):
            return False
        if ctx.strict_fp and neutral == 0 and is_inexact(self.facts.dtype(constant)):
            return _zero_sign_is_exact(value, subtracted=node.op == "Sub")
        return True


def _zero_sign_is_exact(zeros: np.ndarray, subtracted: bool) -> bool:
    """x + (-0.0) and x - (+0.0) are x for every float x (signed zeros included); x + (+0.0) is not."""
    parts = [zeros.real, zeros.imag] if zeros.dtype.kind == "c" else [zeros]
    # float64 keeps the sign of every zero (and numpy's signbit knows it, unlike bfloat16's)
    signs = np.concatenate([np.signbit(p.astype(np.float64)).reshape(-1) for p in parts])
    return not signs.any() if subtracted else bool(signs.all())


# --- f(g(x)) -> x -------------------------------------------------------------------------------
class InversePairRule(BypassRule):
    """outer(inner(x)) -> x when `cancels(outer, inner)` says the two undo each other."""

    inner_ops: frozenset[str] = frozenset()

    def bypass(self, node: Node, ctx: PassContext) -> Bypass | None:
        if not node.inputs:
            return None
        inner_ref = node.inputs[0]
        inner = inner_ref.node
        if inner_ref.index != 0 or inner.op not in self.inner_ops or not inner.inputs:
            return None
        if not self.cancels(node, inner):
            return None
        return Bypass(inner.inputs[0], [node, inner])

    def cancels(self, outer: Node, inner: Node) -> bool:  # pragma: no cover - interface
        raise NotImplementedError


class RemoveDoubleNegation(InversePairRule):
    """Neg(Neg(x)) -> x (exact: even the most negative integer wraps back to itself)."""

    name = "double_negation_removed"
    ops = inner_ops = frozenset({"Neg"})

    def cancels(self, outer: Node, inner: Node) -> bool:
        return True


class RemoveInverseTransposes(InversePairRule):
    """Transpose(Transpose(x, p1), p2) -> x when p1[p2[i]] == i for every i."""

    name = "inverse_transposes_removed"
    ops = inner_ops = frozenset({"Transpose"})

    def cancels(self, outer: Node, inner: Node) -> bool:
        first, second = (_permutation(self.facts.value(n.inputs[1])) for n in (inner, outer))
        if first is None or second is None or len(first) != len(second):
            return False
        return all(first[j] == i for i, j in enumerate(second))


def _permutation(value: np.ndarray | None) -> list[int] | None:
    if value is None or value.ndim != 1 or value.dtype.kind not in "iu":
        return None
    perm = [int(v) for v in value]
    return perm if sorted(perm) == list(range(len(perm))) else None


class RemoveCastRoundTrip(InversePairRule):
    """Cast(Cast(x, A->B), B->A) -> x when every A value is exactly representable in B
    (int32->int64->int32, float16->float32->float16; never float32->float16->float32)."""

    name = "cast_round_trip_removed"
    ops = inner_ops = frozenset({"Cast"})

    def cancels(self, outer: Node, inner: Node) -> bool:
        source = self.facts.dtype(inner.inputs[0])
        middle = self.facts.dtype(inner.output(0))
        return self.facts.dtype(outer.output(0)) == source and is_lossless_cast(source, middle)


# The classic types only: float8, int4 and friends have odd NaN/zero rules, so no round trips there.
_CASTABLE = frozenset((*INTEGER, *FLOATING, *COMPLEX, bool_))


def is_lossless_cast(source: DType, target: DType) -> bool:
    """Is casting `source` to `target` and back the identity for every value? (numpy's "safe"
    casting is not the answer: it calls int64 -> float64 safe.)"""
    if source not in _CASTABLE or target not in _CASTABLE or target.is_bool:
        return False
    if source.is_bool:
        return True  # 0 and 1 survive any numeric type, and x != 0 brings them back
    if source.is_integer and target.is_integer:
        return bool(np.can_cast(source.numpy_dtype, target.numpy_dtype, casting="safe"))
    if source.is_integer:
        info = np.iinfo(source.numpy)
        return info.bits - (0 if source.is_unsigned else 1) <= ml_dtypes.finfo(target.numpy).nmant + 1
    if target.is_integer or (source.is_complex and not target.is_complex):
        return False
    return _float_fits(ml_dtypes.finfo(source.numpy), ml_dtypes.finfo(target.numpy))


def _float_fits(source, target) -> bool:
    """Does every value of float format `source` (subnormals, inf, nan included) exist in `target`?"""
    return (target.nmant >= source.nmant and target.maxexp >= source.maxexp
            and target.minexp - target.nmant <= source.minexp - source.nmant)


class RemoveSameTypeCast(BypassRule):
    """Cast(x, A->A) -> x."""

    name = "same_type_cast_removed"
    ops = frozenset({"Cast"})

    def bypass(self, node: Node, ctx: PassContext) -> Bypass | None:
        if len(node.inputs) != 1 or self.facts.dtype(node.inputs[0]) != self.facts.dtype(node.output(0)):
            return None
        return Bypass(node.inputs[0], [node])


class RemoveNoOpReshape(BypassRule):
    """Reshape(x, s) -> x when x's static shape already is s: both fully known and equal, or of
    one rank with equal non-zero known dims and at most one unknown dim, at the same place (the
    element count fixes it: Reshape(ids, [-1]) of a vector, as embedding lookups write)."""

    name = "noop_reshape_removed"
    ops = frozenset({"Reshape"})

    def bypass(self, node: Node, ctx: PassContext) -> Bypass | None:
        if len(node.inputs) != 2:
            return None
        before, after = self.facts.shape(node.inputs[0]), self.facts.shape(node.output(0))
        if not (has_rank(before) and has_rank(after) and before.rank == after.rank):
            return None
        unknown = [i for i, dim in enumerate(before.dims) if dim is None]
        if [i for i, dim in enumerate(after.dims) if dim is None] != unknown or len(unknown) > 1:
            return None
        known = [(a, b) for a, b in zip(before.dims, after.dims) if a is not None]
        if any(a != b for a, b in known) or (unknown and any(a == 0 for a, _ in known)):
            return None
        return Bypass(node.inputs[0], [node])


class RemoveEmptyReduction(BypassRule):
    """Sum(x, []) -> x (likewise Mean, Prod, Max, Min, All, Any, EuclideanNorm): reducing over no
    axis returns the input unchanged, whatever keep_dims says."""

    name = "empty_reduction_removed"
    ops = frozenset({"Sum", "Mean", "Prod", "Max", "Min", "All", "Any", "EuclideanNorm"})

    def bypass(self, node: Node, ctx: PassContext) -> Bypass | None:
        if len(node.inputs) != 2:
            return None
        axes = self.facts.value(node.inputs[1])
        if axes is None or axes.size != 0:
            return None
        return Bypass(node.inputs[0], [node])


class FetchedEmptyReductionToIdentity(FactRule):
    """A fetched Sum(x, []) (or any reduction over no axis) becomes Identity(x) under the same
    name: its users and fetchers see the same tensor, and the axes constant goes. Kept nodes
    (--keep) are left exactly as they are."""

    name = "empty_reduction_to_identity"
    ops = RemoveEmptyReduction.ops

    def applies(self, node: Node, ctx: PassContext) -> bool:
        if node.op not in self.ops or len(node.inputs) != 2 or not ctx.is_protected(node):
            return False
        if node.name in ctx.keep or ctx.is_side_effecting(node):
            return False
        axes = self.facts.value(node.inputs[1])
        return (axes is not None and axes.size == 0
                and self.facts.dtype(node.inputs[0]) == self.facts.dtype(node.output(0))
                and self.facts.one_frame([node, node.inputs[1].node]))

    def rewrite(self, node: Node, graph: Graph, ctx: PassContext) -> bool:
        name, axes = node.name, node.inputs[1].node
        identity = graph.add_node("Identity", ctx.new_name(graph, node, "arithmetic"), inputs=[node.inputs[0]],
                                  control_inputs=node.control_inputs, device=node.device,
                                  attrs={"T": self.facts.dtype(node.output(0))})
        redirect_outputs(graph, node, [identity.output(0)])
        graph.remove_node(node)
        graph.rename(identity, name)
        remove_unused(graph, ctx, axes)
        return True


# --- Squeeze / ExpandDims --------------------------------------------------------------------------
def squeezed_axes(shape: Shape, squeeze_dims: list[int]) -> list[int] | None:
    """The axes Squeeze(squeeze_dims) removes from a tensor of `shape`, or None if unknown: the
    listed ones, or with none listed every size-1 axis (then all dims must be known)."""
    if not has_rank(shape):
        return None
    rank = shape.rank
    if squeeze_dims:
        if any(not -rank <= d < rank for d in squeeze_dims):
            return None
        return sorted({d % rank for d in squeeze_dims})
    if not shape.fully_defined:
        return None
    return [i for i, d in enumerate(shape.dims) if d == 1]


def expanded_axis(node: Node, facts: GraphFacts, input_rank: int) -> int | None:
    """The axis ExpandDims `node` inserts into a tensor of rank `input_rank` (normalized)."""
    axis = single_int(facts.value(node.inputs[1])) if len(node.inputs) == 2 else None
    if axis is None or not -input_rank - 1 <= axis <= input_rank:
        return None
    return axis % (input_rank + 1)


class RemoveExpandThenSqueeze(InversePairRule):
    """Squeeze(ExpandDims(x, a), [a]) -> x."""

    name = "expand_squeeze_removed"
    ops = frozenset({"Squeeze"})
    inner_ops = frozenset({"ExpandDims"})

    def cancels(self, outer: Node, inner: Node) -> bool:
        x_shape = self.facts.shape(inner.inputs[0])
        if not has_rank(x_shape):
            return False
        axis = expanded_axis(inner, self.facts, x_shape.rank)
        if axis is None:
            return False
        expanded = Shape([*x_shape.dims[:axis], 1, *x_shape.dims[axis:]])
        return squeezed_axes(expanded, outer.attr("squeeze_dims")) == [axis]


class RemoveSqueezeThenExpand(InversePairRule):
    """ExpandDims(Squeeze(x, [a]), a) -> x, when x's axis a is statically 1 (otherwise Squeeze
    would fail at run time, and removing it would hide the error)."""

    name = "squeeze_expand_removed"
    ops = frozenset({"ExpandDims"})
    inner_ops = frozenset({"Squeeze"})

    def cancels(self, outer: Node, inner: Node) -> bool:
        x_shape = self.facts.shape(inner.inputs[0])
        removed = squeezed_axes(x_shape, inner.attr("squeeze_dims"))
        if removed is None or len(removed) != 1 or x_shape[removed[0]] != 1:   # (None: unknown rank)
            return False
        return expanded_axis(outer, self.facts, len(x_shape) - 1) == removed[0]


REMOVAL_RULES = (RemoveNeutralOperand, RemoveDoubleNegation, RemoveInverseTransposes, RemoveCastRoundTrip,
                 RemoveSameTypeCast, RemoveNoOpReshape, RemoveEmptyReduction, FetchedEmptyReductionToIdentity,
                 RemoveExpandThenSqueeze, RemoveSqueezeThenExpand)
