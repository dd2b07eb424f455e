"""Static shape and dtype inference over a whole graph, from the op registry's shape functions.

Nodes are visited in topological order. Loop back edges (NextIteration -> Merge) are unknown on the
first sweep; Merge then uses its forward inputs, and the sweep repeats with Merge shapes relaxed
until the loop-carried shapes are stable, giving the most specific shape valid in every iteration.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import dtypes
from .dtypes import DType
from .errors import DftoolError, InvalidGraphError
from .ir import Graph, Node, TensorRef
from .ops import opaque, registry
from .ops.inference import MAX_VALUE_ELEMENTS, HandleData, InferenceContext, PerOutput, may_build, relax
from .shapes import Shape, ShapeError

_MAX_SWEEPS = 8
# Ops whose output k is their input k (or input 0) passed along: a handle keeps its HandleData
# through them. ZerosLike and AddN of TensorList variants keep their inputs' element shape and
# dtype too (TensorFlow's UnchangedShape and AddN's variant branch).
_FORWARDING_OPS = frozenset({"Identity", "IdentityN", "Snapshot", "StopGradient", "Enter", "RefEnter",
                             "Exit", "RefExit", "Switch", "RefSwitch", "Merge", "RefMerge",
                             "NextIteration", "RefNextIteration", "PlaceholderWithDefault",
                             "ZerosLike", "AddN"})
_HANDLE_DTYPES = (dtypes.resource, dtypes.variant)


@dataclass
class TensorInfo:
    dtype: DType
    shape: Shape
    value: np.ndarray | None = None   # numeric when fully known; object array with None if partial
    handle: HandleData | None = None  # for resource handles: what the resource holds


@dataclass
class ShapeResult:
    info: dict[TensorRef, TensorInfo] = field(default_factory=dict)
    errors: dict[Node, str] = field(default_factory=dict)

    def shape(self, ref: TensorRef) -> Shape:
        found = self.info.get(ref)
        return found.shape if found else Shape.unknown()

    def dtype(self, ref: TensorRef) -> DType:
        found = self.info.get(ref)
        return found.dtype if found else dtypes.INVALID

    def value(self, ref: TensorRef) -> np.ndarray | None:
        found = self.info.get(ref)
        return None if found is None or found.value is None or found.value.dtype == object else found.value

    def outputs(self, node: Node) -> list[TensorInfo]:
        return [self.info[ref] for ref in node.outputs if ref in self.info]


def infer_shapes(graph: Graph, feed_shapes: dict[str, Shape] | None = None,
                 strict: bool = False) -> ShapeResult:
    """Infer every output's dtype and shape. `feed_shapes` overrides the shape of named tensors
    (e.g. a fed Placeholder). With `strict`, the first shape error raises InvalidGraphError naming
    the node, op and input shapes; otherwise errors are collected in the result."""
    order = graph.topological_order()
    overrides = {graph.tensor(name): Shape.of(s) for name, s in (feed_shapes or {}).items()}
    result = ShapeResult()
    for _ in range(_MAX_SWEEPS):
        if not _sweep(order, result, overrides, strict):
            break
    return result


def _sweep(order: list[Node], result: ShapeResult, overrides, strict: bool) -> bool:
    """One pass over the graph; returns True if another is needed: a Merge read a loop back edge
    that was not inferred yet, or a loop-carried (Merge) shape had to be relaxed."""
    again = False
    for node in order:
        is_merge = node.op in ("Merge", "RefMerge")
        previous = [result.info.get(ref) for ref in node.outputs] if is_merge else None
        if is_merge and any(ref not in result.info for ref in node.inputs):
            again = True
        infos = infer_node(node, result, strict)
        for index, info in enumerate(infos):
            ref = TensorRef(node, index)
            if ref in overrides:
                info = TensorInfo(info.dtype, overrides[ref], None, info.handle)
            old = previous[index] if previous is not None else None
            if old is not None and old.shape != info.shape:
                info = TensorInfo(info.dtype, relax(old.shape, info.shape), None, info.handle)
                again = True
            result.info[ref] = info
    return again


def infer_node(node: Node, result: ShapeResult, strict: bool = False) -> list[TensorInfo]:
    """Infer one node's outputs from the infos of its inputs already in `result` (not stored)."""
    spec = registry.lookup(node.op)
    if spec is None:  # an opaque node: what the graph says about its outputs, and carry on
        declared = opaque.declared_shapes(node) or []
        return [TensorInfo(d, declared[i] if i < len(declared) else Shape.unknown())
                for i, d in enumerate(opaque.output_dtypes(node))]
    num_outputs = node.num_outputs
    try:
        # A malformed type attr (an int where a type belongs) is verify()'s to report.
        out_dtypes = [d if isinstance(d, DType) else dtypes.INVALID for d in spec.output_dtypes(node)]
    except (DftoolError, ValueError) as exc:
        # An attr of the wrong kind or an impossible output count (num_split = 2**31): the shape
        # function would read the same attr and trust it, so it is not called. (A missing type attr,
        # KeyError, still leaves the shapes to infer.)
        message = exc.one_line() if isinstance(exc, DftoolError) else f"node '{node.name}' ({node.op}): {exc}"
        if strict:
            raise InvalidGraphError(message) from None
        result.errors[node] = message
        return [TensorInfo(dtypes.INVALID, Shape.unknown()) for _ in range(num_outputs)]
    except Exception:
        out_dtypes = [dtypes.INVALID] * num_outputs
    shapes_in, dtypes_in, values_in, available, handles_in = [], [], [], [], []
    for ref in node.inputs:
        info = result.info.get(ref)
        available.append(info is not None)
        if info is None:
            info = TensorInfo(dtypes.INVALID, Shape.unknown())
        shapes_in.append(info.shape)
        dtypes_in.append(info.dtype)
        values_in.append(info.value)
        handles_in.append(info.handle)
    if spec.shape_fn is None:
        return [TensorInfo(d, Shape.unknown()) for d in out_dtypes]
    ctx = InferenceContext(node, shapes_in, dtypes_in, values_in, available, out_dtypes, handles_in)
    try:
        shapes = spec.shape_fn(ctx)
        if isinstance(shapes, Shape):
            shapes = [shapes]
        shapes = [Shape.of(s) for s in shapes]
        if len(shapes) != len(out_dtypes):
            raise ShapeError(f"shape function gave {len(shapes)} shapes for {len(out_dtypes)} outputs")
        values = _infer_value(spec, ctx, shapes)
    except (ShapeError, InvalidGraphError, KeyError, ValueError, TypeError, IndexError, ArithmeticError) as exc:
        # InvalidGraphError: an attr of the wrong kind (Node.attr checks it); verify() reports it too.
        inputs = ", ".join(str(s) for s in shapes_in) or "no inputs"
        message = f"node '{node.name}' ({node.op}) with input shapes [{inputs}]: {exc}"
        if strict:
            raise InvalidGraphError(message) from None
        result.errors[node] = message
        return [TensorInfo(d, Shape.unknown()) for d in out_dtypes]
    infos = [TensorInfo(d, s) for d, s in zip(out_dtypes, shapes)]
    for index, info in enumerate(infos):
        info.handle = ctx.output_handles.get(index)
        if info.handle is None and node.op in _FORWARDING_OPS and info.dtype.base in _HANDLE_DTYPES:
            source = index if node.op == "IdentityN" else 0
            info.handle = handles_in[source] if source < len(handles_in) else None
            if node.op in ("Merge", "RefMerge", "AddN"):  # the first input that carries one
                info.handle = next((h for h in handles_in if h is not None), None)
    for info, value in zip(infos, values):
        info.value = value
    return infos


def _infer_value(spec, ctx: InferenceContext, shapes: list[Shape]) -> list[np.ndarray | None]:
    """Static values of the outputs (None where unknown or too big to be worth carrying)."""
    if spec.value_fn is None or not shapes:
        return []
    # Outputs known to be too big are never built: a Fill or Tile claiming terabytes costs nothing.
    if not any(shape.num_elements() is None or may_build(shape.num_elements()) for shape in shapes):
        return []
    value = spec.value_fn(ctx)
    values = list(value) if isinstance(value, PerOutput) else [value]
    return [_as_value(v, shape, dtype) for v, shape, dtype in zip(values, shapes, ctx.output_dtypes)]


def _as_value(value, shape: Shape, dtype: DType) -> np.ndarray | None:
    count = shape.num_elements()
    if value is None or (count is not None and count > MAX_VALUE_ELEMENTS):
        return None
    value = np.asarray(value)
    if value.size > MAX_VALUE_ELEMENTS:
        return None
    if value.dtype == object and all(v is not None for v in value.ravel()):
        try:
            value = value.astype(dtype.numpy if dtype.numpy is not None else object)
        except (OverflowError, TypeError, ValueError):
            # A value its dtype cannot hold (the int32 Shape of a [2**40] tensor): at run time the
            # kernel decides what happens; statically it is just not known.
            return None
    return value
