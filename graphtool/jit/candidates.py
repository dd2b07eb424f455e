"""Which nodes may be compiled (TensorFlow's mark-for-compilation candidates), and why not.

A node is a candidate when a lowering handles it (registry.why_not is None), it has no side
effects (the op registry's `stateful` flag), it is no v1 control-flow or transfer op, and no
string or resource tensor enters or leaves it. Every other node gets the reason it stays in the
interpreter, for `-v` and `profile`.

"Static" nodes compute values XLA must know when it compiles (shapes, axes, paddings): a Const,
Shape/ShapeN/Size/Rank (shapes are static in a trace), or a side-effect-free op with a CPU kernel
whose inputs are all static. Inside a cluster they are evaluated with numpy while tracing.
"""
from __future__ import annotations

from collections.abc import Set as AbstractSet

from .. import dtypes
from ..ir import Graph, Node
from ..ops.core import FED_INPUT_OPS
from .lowerings import registry

V1_CONTROL_FLOW = frozenset({"Switch", "RefSwitch", "Merge", "RefMerge", "Enter", "RefEnter", "Exit", "RefExit",
                             "NextIteration", "RefNextIteration", "LoopCond", "ControlTrigger"})
SEND_OPS = frozenset({"_Send", "_HostSend"})
RECV_OPS = frozenset({"_Recv", "_HostRecv"})
TRANSFER_OPS = SEND_OPS | RECV_OPS
SHAPE_OPS = frozenset({"Shape", "ShapeN", "Size", "Rank"})
# A TensorList's length is static in a trace, as array shapes are.
LIST_SHAPE_OPS = frozenset({"TensorListLength"})
# Ops the engine evaluates itself (no lowering needed): constants become compile-time values.
ENGINE_OPS = frozenset({"Const", "NoOp", "Shape", "ShapeN", "Size", "Rank"})
# Ops that pass their inputs through: the engine forwards the traced values.
FORWARD_OPS = frozenset({"Identity", "IdentityN", "Snapshot", "StopGradient", "PreventGradient"})
# Functional control flow compiles to one lax loop/cond: always worth a cluster.
CONTROL_FLOW_OPS = frozenset({"While", "StatelessWhile", "If", "StatelessIf", "Case", "StatelessCase"})
CALL_OPS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})
# Ops that cost nothing on their own: a cluster of only these is not worth compiling.
FREE_OPS = frozenset({"Const", "NoOp", "Identity", "Shape", "ShapeN", "Size", "Rank", "Reshape",
                      "ExpandDims", "Squeeze", "StopGradient", "Snapshot"})
# Constants above this many elements stay outside and enter their cluster as arguments: embedded
# in the compiled program they would bloat compile time and the persistent cache (weights).
MAX_EMBEDDED_CONST_ELEMENTS = 1 << 12
_BAD_DTYPES = {dtypes.string, dtypes.resource}


def exclusion_reason(node: Node, fed: AbstractSet[str], targets: AbstractSet[str],
                     static: AbstractSet[Node] = frozenset()) -> str | None:
    """None when `node` may be compiled, else why it stays in the interpreter. A `static` node
    without a lowering may be compiled too: its numpy kernel runs while tracing."""
    op = node.op
    if node.name in fed:
        return "fed by the caller"
    if op in FED_INPUT_OPS:
        return "an input of the graph"
    if node.name in targets:
        return "a target of the step"
    if op in V1_CONTROL_FLOW:
        return f"v1 control flow ({op}) that could not be functionalized"
    if op in TRANSFER_OPS:
        return "a transfer between devices"
    spec = node.spec
    if spec is None:
        return f"unknown op {op}"
    if spec.stateful and op not in CONTROL_FLOW_OPS and op not in CALL_OPS:
        # If/While/StatefulPartitionedCall are flagged stateful; their bodies decide (lowering's supports).
        return f"stateful op {op}"
    try:
        in_types = spec.input_dtypes(node)
        out_types = spec.output_dtypes(node)
    except Exception as exc:   # malformed attrs: the interpreter reports them
        return f"cannot type its tensors: {exc}"
    for dtype in (*in_types, *out_types):
        if dtype.is_ref:
            return "reference-typed tensors (variables)"
        if dtype.base in _BAD_DTYPES:
            return f"{dtype.base.name} tensors"
    if op == "Const":
        value = node.attr("value")
        if getattr(value, "size", 0) > MAX_EMBEDDED_CONST_ELEMENTS:
            return "a large constant (passed to its cluster as an argument)"
        return None
    if op in ENGINE_OPS or op in FORWARD_OPS:
        return None
    reason = registry.why_not(node)
    if reason is not None and node in static and registry.lookup(op) is None:
        return None   # computed when compiling (a Range or StridedSlice of shapes, say)
    return reason


def static_nodes(graph: Graph) -> set[Node]:
    """Nodes whose values are known when a trace is compiled (see the module docstring)."""
    from ..exec import kernels

    static: set[Node] = set()
    for node in graph.topological_order():
        op = node.op
        if op == "Const" or op in SHAPE_OPS or op in LIST_SHAPE_OPS:
            static.add(node)
            continue
        spec = node.spec
        if spec is None or spec.stateful or op in V1_CONTROL_FLOW or op in TRANSFER_OPS or op in FED_INPUT_OPS:
            continue
        if not node.inputs or node.control_inputs and any(c not in static for c in node.control_inputs):
            continue
        if any(d.base.numpy is None or d.base.numpy == object for d in spec.output_dtypes(node)):
            continue   # strings, TensorLists: not values a compiler takes as constants
        if all(ref.node in static for ref in node.inputs) and kernels.has_kernel(op, "CPU"):
            static.add(node)
    return static


def deadness_signatures(graph: Graph) -> dict[Node, frozenset]:
    """Per node, the Switch outputs that can make it dead (TensorFlow's deadness analysis, coarse):
    nodes may share a cluster only when they are dead together, since a cluster node runs whole.
    A Merge is live when any input is, so it keeps only what all its inputs share."""
    signature: dict[Node, frozenset] = {}
    empty: frozenset = frozenset()
    for node in graph.topological_order():
        sources = []
        for ref in node.inputs:
            producer = ref.node
            if producer not in signature:   # a NextIteration back edge, seen later
                continue
            own = signature[producer]
            if producer.op in ("Switch", "RefSwitch") and len(producer.inputs) == 2:
                # Keyed by the predicate: the switches of one cond or loop are dead together.
                own = own | {(producer.inputs[1], ref.index)}
            sources.append(own)
        sources.extend(signature[c] for c in node.control_inputs if c in signature)
        if not sources:
            signature[node] = empty
        elif node.op in ("Merge", "RefMerge"):
            signature[node] = frozenset.intersection(*sources)
        else:
            signature[node] = frozenset().union(*sources)
    return signature
