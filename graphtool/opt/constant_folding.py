"""constfold: compute at optimization time what does not depend on any feed (Grappler's constant folding).

Three stages, in this order:

1. MaterializeShapes — Shape/ShapeN/Size/Rank whose answer static shape inference knows, and
   BroadcastGradientArgs of known shape vectors, become Consts; so does any other small integer
   value inference computed from shapes (StridedSlice(Shape(x[5,?]), 0) -> 5):

       before: x[2,3] -> Shape -> Reshape(y, .)       after: Const([2,3]) -> Reshape(y, .)

2. FoldGraph — a node whose data inputs are all Consts is run once with its real CPU kernel and
   replaced by one Const per used output:

       before: Const(2) -> Add <- Const(3);  Add -> Mul(x, .)     after: Const(5) -> Mul(x, .)

3. SimplifyGraph (not under --strict-fp; see constant_folding_rules) — constants of Mul or
   Add/Sub chains are combined: Mul(c1, Mul(x, c2)) -> Mul(x, c1*c2).

What must not change: fetched nodes keep their names (a folded fetch becomes a Const of the same
name), --keep nodes are left alone, side-effecting and random ops are never evaluated, and a Const
made for a node runs exactly where and when that node ran — it inherits the node's control inputs
and those of its constant inputs, so it stays inside its loop frame (tied to the pivot) or cond
branch (dead when the branch is not taken), as TensorFlow does.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable

import numpy as np

from .. import dtypes
from ..exec import kernels
from ..exec.devices import CPUDevice
from ..ir import Graph, Node, TensorRef
from ..ir.frames import ENTER_OPS, EXIT_OPS
from ..placement.cost_model import CostEstimator, CostModel
from ..proto.attr_value_pb2 import AttrValue
from ..shape_inference import infer_shapes
from ..shapes import has_rank
from ..tensor import from_ndarray
from .base import Pass, PassContext, PassResult, apply_rules, const_value_within, redirect_outputs, register_pass

PASS_NAME = "constfold"

_SHAPE_OPS = frozenset({"Shape", "ShapeN", "Size", "Rank", "BroadcastGradientArgs"})
# Values shape inference knows are shape-like (small); bigger constants come from FoldGraph.
_MAX_INFERRED_ELEMENTS = 1024
# Work one fold may do (the cost model's FLOP estimate from static shapes; about a second of
# numpy): two filled constants of a few bytes each can ask a Conv2D for minutes while their
# inputs and output stay within --fold-max-bytes.
_MAX_FOLD_FLOPS = 2e9
_SWITCH_OPS = frozenset({"Switch", "RefSwitch"})
_HANDLE_DTYPES = (dtypes.resource, dtypes.variant)
# Belt and braces: the registry marks these stateful already, but a random op must never be folded
# even if a registration forgets the flag (folding would freeze one draw into the graph).
_RANDOM_OPS = frozenset({"Multinomial", "TruncatedNormal", "ParameterizedTruncatedNormal", "RandomShuffle"})
# Counts that describe work done; the others (skips, failures) do not make the pass "changed".
_REWRITE_COUNTS = ("shapes_materialized", "values_materialized", "nodes_folded", "mul_chains_combined", "add_sub_chains_combined",
                   "mul_div_chains_combined")


def is_random(op: str) -> bool:
    return op in _RANDOM_OPS or ("Random" in op and not op.startswith("Stateless"))


def evaluate(node: Node, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run `node`'s CPU kernel on `inputs`; one array per output, in the op's declared dtypes.
    Raises whatever the kernel raises (callers treat that as 'cannot fold')."""
    kernel_def = kernels.lookup(node.op, kernels.CPU)
    if kernel_def is None:
        raise LookupError(f"op {node.op} has no CPU kernel")
    out_dtypes = node.spec.output_dtypes(node)
    ctx = kernels.KernelContext(np, node.name, node.op, out_dtypes, CPUDevice())
    with np.errstate(all="ignore"):  # 1/0 folds to inf exactly as the executor would compute it
        outputs = kernels.bind(kernel_def, node)(ctx, *inputs)
    if type(outputs) is not tuple:
        outputs = (outputs,)
    if len(outputs) != len(out_dtypes):
        raise ValueError(f"kernel returned {len(outputs)} outputs, the op has {len(out_dtypes)}")
    return [np.asarray(out).astype(dtype.base.numpy, copy=False) for out, dtype in zip(outputs, out_dtypes)]


def unique_nodes(nodes: Iterable[Node], exclude: Node | None = None) -> list[Node]:
    return [n for n in dict.fromkeys(nodes) if n is not exclude]


def _downstream_of_cond_switches(graph: Graph) -> set[Node]:
    """Nodes that may receive a dead tensor from a cond: everything reachable from a Switch that
    no LoopCond drives (conservative). Loop bodies need no entry here: the frame rule ties their
    Consts to the loop already, and a loop's Exit outputs are live."""
    seen: set[Node] = set()
    stack = [n for n in graph.nodes if n.op in _SWITCH_OPS and n.inputs[1].node.op != "LoopCond"]
    while stack:
        node = stack.pop()
        for consumer in node.consumers():
            if consumer not in seen:
                seen.add(consumer)
                stack.append(consumer)
    return seen


class FoldState:
    """What the three stages share during one run: static shapes, frames, and the counts."""

    def __init__(self, graph: Graph, ctx: PassContext):
        self.graph = graph
        self.ctx = ctx
        self.shapes = infer_shapes(graph)
        self.costs = CostEstimator(CostModel(), self.shapes)
        self._frames = graph.frames()
        self._frame_of = dict(self._frames.frame_of)  # grows with the nodes this pass creates
        self._maybe_dead = _downstream_of_cond_switches(graph)
        self.counts: Counter[str] = Counter()

    # --- where nodes run ----------------------------------------------------------------------
    def frame(self, node: Node):
        return self._frame_of.get(node, self._frames.root)

    def output_frame(self, node: Node):
        """The frame `node`'s outputs (and control edges) live in; the pass never creates Enter/Exit."""
        if node.op in ENTER_OPS or node.op in EXIT_OPS:
            return self._frames.output_frame(node)
        return self.frame(node)

    def anchored(self, node: Node, controls: list[Node]) -> bool:
        """Would a source node with these control inputs run in `node`'s frame? (A Const with no
        input is in the root frame: inside a loop it must hang off a node of the loop.)"""
        frame = self.frame(node)
        return frame.is_root or any(self.output_frame(c) is frame for c in controls)

    def may_be_dead(self, node: Node) -> bool:
        return node in self._maybe_dead

    def _adopt(self, new: Node, like: Node) -> None:
        self._frame_of[new] = self.frame(like)
        if self.may_be_dead(like):
            self._maybe_dead.add(new)

    # --- creating and replacing nodes ---------------------------------------------------------
    def add_const(self, like: Node, value: np.ndarray, dtype, controls: list[Node], suffix: str = "") -> Node:
        """A Const holding `value` named 'like/constfold', on `like`'s device, in its frame."""
        const = self.graph.add_node(
            "Const", self.ctx.new_name(self.graph, like, PASS_NAME, suffix), control_inputs=controls,
            attrs={"value": AttrValue(tensor=from_ndarray(value, dtype)), "dtype": dtype}, device=like.device)
        self._adopt(const, like)
        return const

    def add_like(self, like: Node, op: str, inputs: list[TensorRef], attrs: dict) -> Node:
        """A new non-Const node standing in for `like` (same device, frame, static shapes)."""
        node = self.graph.add_node(op, self.ctx.new_name(self.graph, like, PASS_NAME), inputs=inputs,
                                   control_inputs=like.control_inputs, attrs=attrs, device=like.device)
        self._adopt(node, like)
        for old, new in zip(like.outputs, node.outputs):
            if old in self.shapes.info:
                self.shapes.info[new] = self.shapes.info[old]
        return node

    def replace_node(self, old: Node, new: Node) -> None:
        """`new` (one output) takes over `old`'s users, and its name when `old` is fetched."""
        redirect_outputs(self.graph, old, [new.output(0)])
        inputs = list(old.input_nodes())
        self.graph.remove_node(old)
        if self.ctx.is_protected(old):
            self.graph.rename(new, old.name)
        self.drop_orphans(inputs)

    def drop_orphans(self, nodes: Iterable[Node]) -> None:
        """Remove the producers a rewrite left without users, and theirs in turn; only pure nodes
        (never fetched, kept or side-effecting ones), so nothing observable goes."""
        stack = unique_nodes(nodes)
        while stack:
            node = stack.pop()
            if node.has_users or not self.ctx.can_rewrite(node) or self.graph.get(node.name) is not node:
                continue
            producers = unique_nodes(node.input_nodes())
            self.graph.remove_node(node)
            stack.extend(producers)

    def replace_outputs(self, node: Node, values: dict[int, np.ndarray], controls: list[Node]) -> bool:
        """Give each used output of `node` with a known value its own Const (with `controls` as
        control inputs); remove `node` once nothing reads it. Returns False, changing nothing,
        when the Consts could not stay in `node`'s frame or a fetched node cannot keep its name."""
        controls = unique_nodes(controls, exclude=node)
        if not self.anchored(node, controls):
            self.counts["skipped_in_frame"] += 1
            return False
        out_dtypes = node.spec.output_dtypes(node)
        if self.ctx.is_protected(node):
            if node.num_outputs != 1 or 0 not in values:
                return False  # a Const has one output: only a single-output node can keep its name
            self.replace_node(node, self.add_const(node, values[0], out_dtypes[0].base, controls))
            return True
        used = sorted({consumer.inputs[slot].index for consumer, slot in node.uses()})
        complete = all(port in values for port in used)
        if used:
            ports = [port for port in used if port in values]
        else:  # only control users: one Const carries their ordering (nothing at all: dce's job)
            ports = [min(values)] if node.control_uses else []
        if not ports:
            return False
        multi = node.num_outputs > 1  # name the Consts 'x/constfold_<port>'
        consts = [self.add_const(node, values[p], out_dtypes[p].base, controls, str(p) if multi else "")
                  for p in ports]
        for port, const in zip(ports, consts):
            self.graph.replace_all_uses_with(TensorRef(node, port), const.output(0))
        if complete:
            if node.control_uses:
                self.graph.move_control_uses(node, consts[0])
            inputs = list(node.input_nodes())
            self.graph.remove_node(node)
            self.drop_orphans(inputs)
        return True


def const_anchors(node: Node) -> list[Node]:
    """What ties `node` to its frame and branch through its data inputs: a Const input's own
    control inputs (its pivot), any other input's producer itself."""
    anchors: list[Node] = []
    for ref in node.inputs:
        producer = ref.node
        anchors.extend(producer.control_inputs if producer.op == "Const" else [producer])
    return anchors


# --- stage 1: MaterializeShapes --------------------------------------------------------------------
def _fits(value: int, dtype) -> bool:
    return value <= np.iinfo(dtype.numpy).max


def _shape_op_value(op: str, shape, dtype) -> np.ndarray | None:
    """What Shape/ShapeN/Size/Rank return for an input of static `shape`, or None if not static."""
    if op == "Rank":
        return None if not has_rank(shape) else np.array(shape.rank, dtype.numpy)
    if not shape.fully_defined:
        return None
    if op == "Size":
        size = shape.num_elements()
        return np.array(size, dtype.numpy) if _fits(size, dtype) else None
    if not all(_fits(d, dtype) for d in shape.dims):
        return None
    return np.array(shape.dims, dtype.numpy)


def _inferred_value(node: Node, state: FoldState) -> dict[int, np.ndarray]:
    """A small integer value shape inference computed for a node fed by non-constants, such as
    StridedSlice(Shape(x[5,?]), 0) -> 5 (Grappler's MaterializeOutputValues)."""
    if node.num_outputs != 1 or all(ref.node.op == "Const" for ref in node.inputs):
        return {}  # all-constant nodes are evaluated with their real kernel by FoldGraph instead
    dtype = node.spec.output_dtypes(node)[0].base
    value = state.shapes.value(node.output(0))
    if value is None or not dtype.is_integer or value.size > _MAX_INFERRED_ELEMENTS:
        return {}
    return {0: value.astype(dtype.numpy)}


def static_outputs(node: Node, state: FoldState) -> dict[int, np.ndarray]:
    """The outputs of a node that static inference pins down, by port."""
    if node.op not in _SHAPE_OPS:
        return _inferred_value(node, state)
    if node.op == "BroadcastGradientArgs":
        shape_vectors = [v for v in (state.shapes.value(ref) for ref in node.inputs) if v is not None]
        if len(shape_vectors) != len(node.inputs):
            return {}
        try:
            return dict(enumerate(evaluate(node, shape_vectors)))
        except Exception:
            return {}  # incompatible shapes: the runtime error must stay a runtime error
    out_dtypes = node.spec.output_dtypes(node)
    values = {}
    for port, dtype in enumerate(out_dtypes):
        source = node.inputs[port if node.op == "ShapeN" else 0]
        value = _shape_op_value(node.op, state.shapes.shape(source), dtype.base)
        if value is not None:
            values[port] = value
    if node.op == "ShapeN" and len({slot_ref.index for _, slot_ref in _used_ports(node)}) > 1:
        # One ShapeN would become a Const per used output: more nodes for no saved work (its
        # answer is static either way), so Grappler leaves it, and so do we.
        return {}
    return values


def _used_ports(node: Node):
    return [(user, user.inputs[slot]) for user, slot in node.uses()]


def _may_materialize(node: Node, ctx: PassContext) -> bool:
    if node.name in ctx.keep or node.op == "Const":
        return False
    return node.op in _SHAPE_OPS or not (ctx.is_side_effecting(node) or is_random(node.op))


def materialize_shapes(state: FoldState) -> None:
    for node in state.graph.topological_order():
        if state.graph.get(node.name) is not node or not _may_materialize(node, state.ctx):
            continue
        values = static_outputs(node, state)
        if not values:
            continue
        controls = list(node.control_inputs)
        # The data input only mattered for its shape; it stays as a control edge only where the
        # Const must run inside a loop frame or may have to be dead with a cond branch.
        if not state.frame(node).is_root or any(state.may_be_dead(ref.node) for ref in node.inputs):
            controls += const_anchors(node)
        if state.replace_outputs(node, values, controls):
            state.counts["shapes_materialized" if node.op in _SHAPE_OPS else "values_materialized"] += 1


# --- stage 2: FoldGraph ----------------------------------------------------------------------------
def is_foldable(node: Node, ctx: PassContext) -> bool:
    """Pure, kernel-backed, all data inputs constant, and worth folding (someone reads it)."""
    if node.op == "Const" or not node.inputs or any(ref.node.op != "Const" for ref in node.inputs):
        return False
    if ctx.is_side_effecting(node) or is_random(node.op) or node.spec.is_async or node.name in ctx.keep:
        return False
    if not (node.has_users or ctx.is_protected(node)):
        return False
    # Handles (resources, variants) name runtime objects; a Const cannot hold them.
    return all(d.base.numpy is not None and d.base not in _HANDLE_DTYPES for d in node.spec.output_dtypes(node))


def _predicted_bytes(node: Node, state: FoldState) -> int | None:
    """Bytes of the outputs from their static shapes, before anything runs; None when a shape is
    not fully known (then the kernel's output size is not known either, and a few bytes of
    constants could ask it for gigabytes)."""
    total = 0
    for ref, dtype in zip(node.outputs, node.spec.output_dtypes(node)):
        count = state.shapes.shape(ref).num_elements()
        if count is None:
            return None
        total += count * max(dtype.itemsize, 1)
    return total


def _agrees_with_inference(node: Node, outputs: list[np.ndarray], state: FoldState) -> bool:
    """Every output shape fits the statically inferred one (a disagreement means a kernel or shape
    function bug; better leave the node alone than bake a wrong constant in)."""
    return all(state.shapes.shape(ref).is_compatible_with(tuple(out.shape))
               for ref, out in zip(node.outputs, outputs))


def fold_node(node: Node, state: FoldState) -> None:
    limit = state.ctx.fold_max_bytes
    controls = list(node.control_inputs) + const_anchors(node)
    if not state.anchored(node, unique_nodes(controls, exclude=node)):
        state.counts["skipped_in_frame"] += 1
        return
    if node in state.shapes.errors:
        state.counts["fold_failed"] += 1  # its inputs do not fit: the error belongs to run time
        return
    predicted = _predicted_bytes(node, state)
    if predicted is None or predicted > limit:
        state.counts["fold_unknown_size" if predicted is None else "fold_too_big"] += 1
        return
    try:
        if state.costs.flops(node) > _MAX_FOLD_FLOPS:
            state.counts["fold_too_costly"] += 1
            return
        inputs = [const_value_within(ref.node, limit) for ref in node.inputs]
        if any(value is None for value in inputs):  # a filled input too big to expand
            state.counts["fold_too_big"] += 1
            return
        outputs = evaluate(node, inputs)
    except Exception:
        state.counts["fold_failed"] += 1  # e.g. a bad index: the error belongs to run time
        return
    if sum(out.nbytes for out in outputs) > limit:
        state.counts["fold_too_big"] += 1
        return
    if not _agrees_with_inference(node, outputs, state):
        state.counts["fold_failed"] += 1
        return
    if state.replace_outputs(node, dict(enumerate(outputs)), controls):
        state.counts["nodes_folded"] += 1


def fold_graph(state: FoldState) -> None:
    # Producers come first, so a chain of constant nodes folds in one sweep.
    for node in state.graph.topological_order():
        if state.graph.get(node.name) is node and is_foldable(node, state.ctx):
            fold_node(node, state)


# --- the pass --------------------------------------------------------------------------------------
@register_pass
class ConstantFolding(Pass):
    """Materialize static shapes, fold constant subgraphs, combine constants of Mul/Add chains."""

    name = PASS_NAME
    description = "fold constant subgraphs and statically known shapes into Consts"

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        from .constant_folding_rules import simplify_rules

        state = FoldState(graph, ctx)
        materialize_shapes(state)
        fold_graph(state)
        if not ctx.strict_fp:  # re-associating constants changes floating-point rounding
            state.counts.update(apply_rules(graph, ctx, simplify_rules(state)).stats)
        changed = any(state.counts[key] for key in _REWRITE_COUNTS)
        return PassResult(changed, {k: v for k, v in state.counts.items() if v})
