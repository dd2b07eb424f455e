"""Cost figures of a graph: FLOPs and MACs per node, per op type and in total, memory access
bytes, parameters and model size.

    costs = graph_costs(graph)              # shapes from shape inference
    costs.total.flops, costs.by_op["Conv2D"].macs
    node_costs(graph)["conv1/Conv2D"].flops # one node (the function `profile` uses)

Counting rules (one execution of each node; MAC = one multiply-accumulate = 2 FLOPs):

- MatMul, BatchMatMul(V2/V3), _FusedMatMul: MACs = output elements x K (the contracted size).
- Conv2D, _FusedConv2D, Conv3D: MACs = output elements x filter window x input channels
  (kh*kw*in, kd*kh*kw*in); their input/filter backprops the same over the out_backprop elements.
  The fused ops of _FusedConv2D/_FusedMatMul add one FLOP per output element each (BiasAdd,
  Relu, ...; a fused batch norm two), so fusing leaves the FLOPs of the arithmetic as they were.
- DepthwiseConv2dNative (and backprops): MACs = output elements x kh x kw.
- Einsum: MACs = the product of the sizes of every distinct label (one multiply-add per point of
  the full index space), for equations without an ellipsis.
- FusedBatchNorm(V2/V3) in inference mode: one MAC per element (scale and shift); in training
  mode 5 FLOPs per element (mean, variance, normalise, scale, shift).
- Pooling (MaxPool, AvgPool, 3-D, V2): FLOPs = output elements x window size, no MACs.
- Reductions (Sum, Mean, Max, Prod, ArgMax, ...): FLOPs = input elements.
- Softmax / LogSoftmax: 5 FLOPs per element (max, subtract, exp, sum, divide).
- Data movement (Reshape, Transpose, Concat, Gather, Slice, Pad, Tile, ...): no FLOPs.
- Sources, forwarding and control flow (Const, Placeholder, Identity, Switch, Merge, NoOp, Shape,
  ...): no FLOPs and no memory access.
- Every other op: one FLOP per output element (elementwise arithmetic, activations, casts).

FLOPs = 2 x MACs for the MAC-counted ops. Memory access = bytes of every input read and every
output written once (sources and forwarding ops move nothing; a tensor of unknown rank, such as
FusedBatchNormV3's reserve space, is left out).

Each node is counted once: a while loop's body for one iteration (a note says how many nodes),
and function calls (If, While, PartitionedCall, a library function) as unknown, their bodies not
counted (a note says so); a profile multiplies by what really ran.

Shapes come from shape inference. An unknown dimension (typically the batch) is counted as 1 and
the node is marked `assumed` (reported as "counted with unknown dims = 1"); a tensor of unknown
rank makes the node's figures unknown (None) and it is counted under `unknown` nodes.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from . import dtypes
from .errors import DftoolError
from .functions.library import FUNCTIONAL_OPS, function_names
from .ir import Graph, Node, TensorRef
from .placement.cost_model import OVERHEAD_ONLY_OPS
from .shape_inference import ShapeResult, infer_shapes
from .shapes import Shape

CONST_OPS = frozenset({"Const", "HostConst"})
VARIABLE_OPS = frozenset({"VariableV2", "Variable", "VarHandleOp"})

# Sources, forwarding, control flow and metadata: neither arithmetic nor memory traffic.
NO_COST_OPS = OVERHEAD_ONLY_OPS | frozenset({
    "Snapshot", "Assert", "Print", "PrintV2", "VarIsInitializedOp", "IsVariableInitialized",
    "ReadVariableOp", "Variable", "PlaceholderV2", "TensorArrayV3", "TensorArraySizeV3",
    "BroadcastArgs", "BroadcastGradientArgs", "ControlTrigger", "_Retval", "_Arg",
})
# Copies and rearrangements: memory traffic, no arithmetic.
MOVEMENT_OPS = frozenset({
    "Reshape", "Squeeze", "ExpandDims", "Transpose", "ConjugateTranspose", "ConcatV2", "Concat", "Pack",
    "Unpack", "Split", "SplitV", "Slice", "StridedSlice", "Gather", "GatherV2", "GatherNd", "Pad", "PadV2",
    "MirrorPad", "Tile", "BroadcastTo", "Fill", "ZerosLike", "OnesLike", "Reverse", "ReverseV2",
    "SpaceToBatchND", "BatchToSpaceND", "SpaceToDepth", "DepthToSpace", "OneHot", "Range", "ScatterNd",
    "TensorScatterUpdate", "Bitcast", "DeepCopy", "Empty", "InvertPermutation", "ReverseSequence",
    "ResourceGather", "TensorArrayReadV3", "TensorArrayWriteV3", "TensorArrayGatherV3", "TensorArrayScatterV3",
})
MATMUL_OPS = frozenset({"MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "_FusedMatMul"})
CONV_OPS = frozenset({"Conv2D", "_FusedConv2D", "Conv3D"})
CONV_BACKPROP_OPS = frozenset({"Conv2DBackpropInput", "Conv2DBackpropFilter", "Conv3DBackpropInputV2",
                               "Conv3DBackpropFilterV2"})
DEPTHWISE_OPS = frozenset({"DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
                           "DepthwiseConv2dNativeBackpropFilter"})
POOL_OPS = frozenset({"MaxPool", "AvgPool", "MaxPoolV2", "MaxPool3D", "AvgPool3D"})
REDUCTION_OPS = frozenset({"Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "ArgMax", "ArgMin",
                           "EuclideanNorm", "L2Loss"})
SOFTMAX_OPS = frozenset({"Softmax", "LogSoftmax"})
BATCH_NORM_OPS = frozenset({"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"})
SOFTMAX_FLOPS_PER_ELEMENT = 5
TRAINING_BATCH_NORM_FLOPS_PER_ELEMENT = 5


@dataclass(frozen=True)
class NodeCost:
    """One node's figures. flops/macs are None when a shape they need has unknown rank; `assumed`
    is True when an unknown dimension was counted as 1."""

    name: str
    op: str
    flops: int | None
    macs: int | None
    bytes_accessed: int
    assumed: bool = False


@dataclass
class CostTotals:
    """Figures summed over nodes (unknown FLOPs/MACs leave the sums; those nodes are counted in
    `unknown`)."""

    nodes: int = 0
    flops: int = 0
    macs: int = 0
    bytes_accessed: int = 0
    unknown: int = 0
    assumed: int = 0

    def add(self, cost: NodeCost) -> None:
        self.nodes += 1
        self.bytes_accessed += cost.bytes_accessed
        if cost.flops is None or cost.macs is None:
            self.unknown += 1
        else:
            self.flops += cost.flops
            self.macs += cost.macs
        self.assumed += cost.assumed

    def to_json(self) -> dict:
        return {"nodes": self.nodes, "flops": self.flops, "macs": self.macs,
                "bytes_accessed": self.bytes_accessed, "unknown_nodes": self.unknown,
                "assumed_nodes": self.assumed}


@dataclass
class GraphCosts:
    """Every node's figures, sums per op type (most FLOPs first) and in total, and the graph's
    parameters (inspect.parameter_stats) and model size (bytes of every constant value)."""

    nodes: dict[str, NodeCost]
    by_op: dict[str, CostTotals]
    total: CostTotals
    parameters: dict
    model_bytes: int
    shape_failure: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"total": self.total.to_json(), "by_op": {op: t.to_json() for op, t in self.by_op.items()},
                "parameters": self.parameters["elements"], "parameter_bytes": self.parameters["bytes"],
                "model_bytes": self.model_bytes, "notes": list(self.notes)}


class _Dims:
    """Shapes of one graph with unknown dims counted as 1, remembering whether that happened."""

    def __init__(self, shapes: ShapeResult):
        self.shapes = shapes
        self.assumed = False

    def dims(self, ref: TensorRef) -> list[int] | None:
        dims = self.shapes.shape(ref).dims
        if dims is None:
            return None
        if any(d is None for d in dims):
            self.assumed = True
        return [1 if d is None else d for d in dims]

    def elements(self, ref: TensorRef) -> int | None:
        dims = self.dims(ref)
        return None if dims is None else math.prod(dims)

    def nbytes(self, ref: TensorRef) -> int | None:
        count = self.elements(ref)
        if count is None:
            return None
        dtype = self.shapes.dtype(ref)
        return count * (dtype.itemsize if dtype is not dtypes.INVALID and dtype.itemsize else 4)


def is_call(node: Node, functions: frozenset[str] | set[str] = frozenset()) -> bool:
    """A node that runs function bodies (If, While, PartitionedCall, a library function by name):
    what it costs is in the bodies, which are not counted."""
    return node.op in FUNCTIONAL_OPS or node.op in functions


def node_cost(node: Node, shapes: ShapeResult, functions: frozenset[str] | set[str] = frozenset()) -> NodeCost:
    """The figures of one execution of `node` under `shapes` (see the module doc); `functions`
    are the names of the graph's library functions (a node of such an op is a call)."""
    dims = _Dims(shapes)
    if node.op in NO_COST_OPS:
        return NodeCost(node.name, node.op, 0, 0, 0)
    flops, macs = (None, None) if is_call(node, functions) else _arithmetic(node, dims)
    # A tensor of unknown rank (e.g. FusedBatchNormV3's reserve space) moves an unknown amount:
    # it is left out of the node's memory access.
    nbytes = sum(dims.nbytes(ref) or 0 for ref in [*node.inputs, *node.outputs])
    return NodeCost(node.name, node.op, flops, macs, nbytes, dims.assumed)


def _arithmetic(node: Node, dims: _Dims) -> tuple[int | None, int | None]:
    """(FLOPs, MACs) of one execution, or (None, None) when a needed shape has unknown rank."""
    op = node.op
    if op in MOVEMENT_OPS:
        return 0, 0
    macs: int | None = None
    if op in MATMUL_OPS and len(node.inputs) >= 2:
        macs = _matmul_macs(node, dims)
    elif op in CONV_OPS and len(node.inputs) >= 2:
        macs = _window_macs(dims.elements(node.outputs[0]), dims.dims(node.inputs[1]), channels=True)
    elif op in CONV_BACKPROP_OPS and len(node.inputs) >= 3:
        macs = _window_macs(dims.elements(node.inputs[2]), _filter_dims(node, dims), channels=True)
    elif op in DEPTHWISE_OPS and len(node.inputs) >= 2:
        activations = node.outputs[0] if op == "DepthwiseConv2dNative" else node.inputs[2] if len(node.inputs) > 2 else None
        filters = _filter_dims(node, dims) if op != "DepthwiseConv2dNative" else dims.dims(node.inputs[1])
        macs = _window_macs(dims.elements(activations) if activations is not None else None, filters,
                            channels=False)
    elif op == "Einsum":
        macs = _einsum_macs(node, dims)
    elif op in BATCH_NORM_OPS:
        elements = dims.elements(node.outputs[0])
        if _attr(node, "is_training", True):
            return _per_element(elements, TRAINING_BATCH_NORM_FLOPS_PER_ELEMENT)
        macs = elements
    if macs is not None or op in MATMUL_OPS | CONV_OPS | CONV_BACKPROP_OPS | DEPTHWISE_OPS | BATCH_NORM_OPS | {"Einsum"}:
        if macs is None:
            return None, None
        return 2 * macs + _fused_flops(node, dims), macs
    if op in POOL_OPS:
        window = _pool_window(node, dims.shapes)
        return _per_element(dims.elements(node.outputs[0]), window) if window is not None else (None, None)
    if op in REDUCTION_OPS and node.inputs:
        return _per_element(dims.elements(node.inputs[0]), 1)
    if op in SOFTMAX_OPS:
        return _per_element(dims.elements(node.outputs[0]), SOFTMAX_FLOPS_PER_ELEMENT)
    total = 0
    for ref in node.outputs:
        count = dims.elements(ref)
        if count is None:
            return None, None
        total += count
    return total, 0


def _fused_flops(node: Node, dims: _Dims) -> int:
    """The elementwise work a Grappler-fused op does after its product: one FLOP per output
    element for each fused op (BiasAdd, Relu, Add, ...), two for a fused batch norm."""
    if node.op not in ("_FusedConv2D", "_FusedMatMul"):
        return 0
    fused = _attr(node, "fused_ops", []) or []
    per_element = sum(2 if "BatchNorm" in (op.decode() if isinstance(op, bytes) else str(op)) else 1 for op in fused)
    return per_element * (dims.elements(node.outputs[0]) or 0)


def _per_element(elements: int | None, flops: int) -> tuple[int | None, int | None]:
    return (None, None) if elements is None else (elements * flops, 0)


def _attr(node: Node, name: str, fallback):
    try:
        return node.attr(name)
    except (KeyError, DftoolError):
        return fallback


def _matmul_macs(node: Node, dims: _Dims) -> int | None:
    a = dims.dims(node.inputs[0])
    out = dims.elements(node.outputs[0])
    if a is None or out is None or len(a) < 2:
        return None
    transposed = bool(_attr(node, "transpose_a", False) or _attr(node, "adj_x", False))
    return out * (a[-2] if transposed else a[-1])


def _window_macs(activations: int | None, filter_dims: list[int] | None, *, channels: bool) -> int | None:
    """activations x the filter's spatial window (x its input channels with `channels`): the
    filter is [spatial..., in, out] (depthwise: [kh, kw, in, multiplier])."""
    if activations is None or filter_dims is None or len(filter_dims) < 3:
        return None
    return activations * math.prod(filter_dims[:-1] if channels else filter_dims[:-2])


def _filter_dims(node: Node, dims: _Dims) -> list[int] | None:
    """The filter shape of a backprop op: the filter input (input backprops) or the output
    (filter backprops), whichever is the 4-D/5-D filter."""
    if node.op.endswith(("BackpropFilter", "BackpropFilterV2")):
        return dims.dims(node.outputs[0])
    return dims.dims(node.inputs[1])


def _pool_window(node: Node, shapes: ShapeResult) -> int | None:
    """The pooling window's size: the ksize attr, or MaxPoolV2's ksize input when it is constant."""
    if node.op == "MaxPoolV2":
        value = shapes.value(node.inputs[1]) if len(node.inputs) > 1 else None
        ksize = None if value is None else [int(k) for k in value.reshape(-1)]
    else:
        ksize = _attr(node, "ksize", None)
    if not ksize:
        return None
    return math.prod(int(k) for k in ksize)


_EINSUM_TERM = re.compile(r"^[A-Za-z]*$")


def _einsum_macs(node: Node, dims: _Dims) -> int | None:
    """Product of every label's size (None with an ellipsis, a malformed equation or an unknown
    rank)."""
    equation = _attr(node, "equation", None)
    if not isinstance(equation, (str, bytes)):
        return None
    text = equation.decode() if isinstance(equation, bytes) else equation
    terms = text.replace(" ", "").split("->")[0].split(",")
    if len(terms) != len(node.inputs) or not all(_EINSUM_TERM.match(t) for t in terms):
        return None
    sizes: dict[str, int] = {}
    for term, ref in zip(terms, node.inputs):
        shape = dims.dims(ref)
        if shape is None or len(shape) != len(term):
            return None
        for label, size in zip(term, shape):
            sizes[label] = max(sizes.get(label, 1), size)
    return math.prod(sizes.values())


def node_costs(graph: Graph, shapes: ShapeResult | None = None,
               feed_shapes: dict | None = None) -> dict[str, NodeCost]:
    """Node name -> NodeCost for every node of `graph` (the function `profile` calls for FLOPs
    per node). `shapes` defaults to shape inference over the graph, with `feed_shapes` {tensor
    name: dims} for the shapes actually fed (so a batch dim of '?' is counted as fed)."""
    if shapes is None:
        shapes = infer_shapes(graph, feed_shapes)
    functions = function_names(graph.library)
    return {node.name: node_cost(node, shapes, functions) for node in graph.nodes}


def graph_costs(graph: Graph, shapes: ShapeResult | None = None, feed_shapes: dict | None = None) -> GraphCosts:
    """Every node's figures, per-op and total sums, parameters and model size. Shape inference
    that fails outright leaves every shape unknown, recorded in `shape_failure`."""
    failure = None
    if shapes is None:
        try:
            shapes = infer_shapes(graph, feed_shapes)
        except DftoolError as exc:
            shapes, failure = ShapeResult(), exc.one_line()
    per_node = node_costs(graph, shapes)
    by_op: dict[str, CostTotals] = {}
    total = CostTotals()
    for cost in per_node.values():
        by_op.setdefault(cost.op, CostTotals()).add(cost)
        total.add(cost)
    ordered = dict(sorted(by_op.items(), key=lambda item: (-item[1].flops, -item[1].bytes_accessed, item[0])))
    functions = function_names(graph.library)
    calls = sum(1 for node in graph.nodes if is_call(node, functions))
    looped = _nodes_in_loops(graph)
    notes = []
    if total.assumed:
        notes.append(f"{total.assumed} node(s) counted with unknown dims = 1 (e.g. batch 1)")
    if total.unknown - calls:
        notes.append(f"{total.unknown - calls} node(s) with a tensor of unknown rank: FLOPs unknown, not summed")
    if calls:
        notes.append(f"{calls} function call(s) (If, While, PartitionedCall, ...): their bodies are not counted")
    if looped:
        notes.append(f"{looped} node(s) inside while loops counted once (one iteration)")
    if failure:
        notes.append(f"shape inference failed: {failure}")
    return GraphCosts(per_node, ordered, total, parameter_stats(graph), constant_bytes(graph), failure, notes)


# --- parameters and model size -------------------------------------------------------------------------------

def parameter_stats(graph: Graph) -> dict:
    """What looks like trainable state, the rule being:
    - a Const (or HostConst) whose value is a floating-point tensor of more than one element
      (scalar constants are hyperparameters such as epsilons and learning rates, not weights);
    - a VariableV2 / Variable / VarHandleOp of floating dtype, by its `shape` attr (variables of
      unknown shape are counted under `unknown_shape_variables` and add no elements).
    Elements and bytes are summed over those tensors; sizes are read from the tensor's header,
    so large weights are not decoded."""
    tensors = elements = nbytes = unknown = 0
    for node in graph.nodes:
        found = _parameter_size(node)
        if found is None:
            continue
        count, itemsize = found
        if count is None:
            unknown += 1
            continue
        tensors += 1
        elements += count
        nbytes += count * itemsize
    return {"tensors": tensors, "elements": elements, "bytes": nbytes,
            "unknown_shape_variables": unknown}


def _parameter_size(node: Node) -> tuple[int | None, int] | None:
    """(elements or None if unknown, bytes per element) when `node` holds parameters, else None."""
    if node.op in CONST_OPS and "value" in node.attrs:
        tensor = node.attrs["value"].tensor
        dtype = _dtype_or_invalid(tensor.dtype)
        count = Shape.from_proto(tensor.tensor_shape).num_elements()
        if dtype.is_floating and count is not None and count > 1:
            return count, dtype.itemsize
        return None
    if node.op in VARIABLE_OPS:
        dtype = _attr(node, "dtype", dtypes.INVALID)
        if not dtype.is_floating:
            return None
        return Shape.of(_attr(node, "shape", Shape.unknown())).num_elements(), dtype.itemsize
    return None


def constant_bytes(graph: Graph) -> int:
    """Bytes of every constant's value (the model's size on disk, roughly), from tensor headers."""
    total = 0
    for node in graph.nodes:
        if node.op in CONST_OPS and "value" in node.attrs:
            tensor = node.attrs["value"].tensor
            count = Shape.from_proto(tensor.tensor_shape).num_elements() or 0
            total += count * _dtype_or_invalid(tensor.dtype).itemsize
    return total


def _dtype_or_invalid(enum: int) -> dtypes.DType:
    try:
        return dtypes.from_enum(enum)
    except DftoolError:
        return dtypes.INVALID



def _nodes_in_loops(graph: Graph) -> int:
    try:
        frames = graph.frames()
    except (DftoolError, KeyError, ValueError):
        return 0
    return sum(len(frame.nodes) for frame in frames.loops)


def flops_by_node(costs: Iterable[NodeCost]) -> dict[str, int | None]:
    """{node name: FLOPs} of some NodeCosts."""
    return {cost.name: cost.flops for cost in costs}


__all__ = ["CONST_OPS", "VARIABLE_OPS", "CostTotals", "GraphCosts", "NodeCost", "constant_bytes", "flops_by_node",
           "graph_costs", "is_call", "node_cost", "node_costs", "parameter_stats"]
