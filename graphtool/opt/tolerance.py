"""How far may two float evaluations of the same computation drift apart? The tolerance
`optimize --verify` compares with, grounded in floating-point accumulation across the graph.

A correct rewrite can still change rounding: folding a batch norm into a convolution's filter
multiplies the weights before the sum instead of the sum after it, constant folding and
arithmetic simplification re-associate sums. Each such change moves a result by a few roundings
of the values it touches; through a deep network these add up. The model here:

- every op rounds its result once (one unit roundoff u = eps / 2, counted as eps for margin);
- an op that sums K products (MatMul, convolutions, Sum/Mean, average pools, softmax) adds
  sqrt(K) roundings: float rounding errors of a long sum behave like a random walk (the
  probabilistic bound of Higham & Mary, "A new approach to probabilistic rounding error
  analysis", 2019), while the worst case K is never reached in practice;
- errors carried in from inputs add up along the deepest path: `depth` is the largest sum of
  per-op roundings from any feed or constant to the fetch;
- relative to magnitude: the errors are relative to the size of the values summed, so the bound
  is taken relative to the fetch's largest finite magnitude, not to each element (a logit near
  0 is a sum of large terms that cancel and carries their absolute error).

So a fetch may differ by  tolerance = eps(dtype) * depth * max|value|  (plus the fixed
rtol/atol floor that applies to every graph). For the frozen ResNet50 fixture that is 7.6e-5 of
the largest logit, 9x the 8e-6 its batch-norm folding actually moves them on the model's real
inputs (TensorFlow's own oneDNN-on and -off results differ by up to 5e-6 relative on the Keras
fixtures: tools/measure_tf_drift.py), and far below what a wrong rewrite changes (a dropped
epsilon moves a folded filter by 5e-4, a wrong constant or swapped operand by much more). Loop and function bodies count once (their trip
counts are not known statically); give `--verify-tolerance` for graphs whose loops accumulate.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod, sqrt

import ml_dtypes
import numpy as np

from ..ir import Graph, Node
from ..shapes import has_rank

_MATMULS = {"MatMul": "transpose_a", "_FusedMatMul": "transpose_a", "BatchMatMul": "adj_x",
            "BatchMatMulV2": "adj_x", "BatchMatMulV3": "adj_x"}
_CONVOLUTIONS = {"Conv2D", "Conv3D", "_FusedConv2D", "Conv2DBackpropInput", "Conv3DBackpropInputV2"}
_DEPTHWISE = {"DepthwiseConv2dNative", "_FusedDepthwiseConv2dNative",
              "DepthwiseConv2dNativeBackpropInput"}
_FILTER_GRADIENTS = {"Conv2DBackpropFilter", "Conv3DBackpropFilterV2",
                     "DepthwiseConv2dNativeBackpropFilter", "BiasAddGrad"}
_REDUCTIONS = {"Sum", "Mean", "Prod", "EuclideanNorm", "L2Loss"}
_POOLS = {"AvgPool", "AvgPool3D", "AvgPoolGrad", "AvgPool3DGrad"}
_LAST_AXIS = {"Softmax", "LogSoftmax", "SoftmaxCrossEntropyWithLogits",
              "SparseSoftmaxCrossEntropyWithLogits"}
_BATCH_NORMS = {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", "FusedBatchNormGrad",
                "FusedBatchNormGradV2", "FusedBatchNormGradV3"}
_BATCH_NORM_ROUNDINGS = 4  # inference: rsqrt, scale, subtract the mean, add the offset


@dataclass(frozen=True)
class Tolerance:
    """The allowed difference of one fetch: eps(dtype) * depth * its largest finite magnitude,
    or `relative` * that magnitude when given explicitly (--verify-tolerance)."""
    depth: float                     # roundings along the deepest path (module docstring)
    relative: float | None = None    # explicit: replaces eps(dtype) * depth

    def factor(self, dtype) -> float:
        if self.relative is not None:
            return self.relative
        return float(ml_dtypes.finfo(dtype).eps) * self.depth if np.dtype(dtype).kind in "fc" else 0.0

    def allowed(self, values: np.ndarray) -> float:
        magnitudes = np.abs(values)
        finite = magnitudes[np.isfinite(magnitudes)]
        scale = float(finite.max()) if finite.size else 0.0
        return self.factor(values.dtype) * scale


def _dims(shapes, ref) -> list[int] | None:
    shape = shapes.shape(ref)
    if not has_rank(shape):
        return None
    dims = [d for d in shape.dims if d is not None]
    return dims if len(dims) == len(shape.dims) else None


def terms_summed(node, shapes) -> int:
    """How many products one output element of `node` sums (1: an elementwise op)."""
    op = node.op
    inputs = node.inputs
    if op in _MATMULS and inputs:
        a = _dims(shapes, inputs[0])
        if a and len(a) >= 2:
            transposed = node.attr(_MATMULS[op], False) if node.has_attr(_MATMULS[op]) else False
            return a[-2] if transposed else a[-1]
    elif op in _CONVOLUTIONS | _DEPTHWISE and len(inputs) >= 2:
        filt = _dims(shapes, inputs[1])
        if filt:
            if op.endswith("BackpropInput") or op == "Conv3DBackpropInputV2":
                return prod(filt[:-2]) * filt[-1]
            return prod(filt[:-2]) * (1 if op in _DEPTHWISE else filt[-2])
    elif op in _FILTER_GRADIENTS and inputs:
        grad = _dims(shapes, inputs[-1])
        if grad and grad[-1]:
            return max(1, prod(grad) // max(grad[-1], grad[1] if len(grad) > 1 else 1))
    elif op in _REDUCTIONS and inputs:
        whole, out = _dims(shapes, inputs[0]), _dims(shapes, node.output(0))
        if whole is not None and out is not None:
            return max(1, prod(whole) // max(1, prod(out)))
    elif op in _POOLS and node.has_attr("ksize"):
        return max(1, prod(node.attr("ksize")))
    elif op in _LAST_AXIS and inputs:
        logits = _dims(shapes, inputs[0])
        if logits:
            return max(1, logits[-1])
    elif op in _BATCH_NORMS and inputs:
        x = _dims(shapes, inputs[0])
        training = node.attr("is_training", True) if node.has_attr("is_training") else True
        if training and x:
            return max(1, prod(x) // max(1, x[-1]))
        return _BATCH_NORM_ROUNDINGS ** 2
    return 1


def accumulation_depth(graph: Graph, feed_shapes: dict | None = None) -> dict:
    """node -> roundings along the deepest path from a source to the node's outputs: each op adds
    1 + sqrt(terms it sums); data edges only, loop back edges ignored."""
    from ..shape_inference import infer_shapes

    shapes = infer_shapes(graph, feed_shapes or {})
    depth: dict[Node, float] = {}
    for node in graph.topological_order():
        carried = max((depth.get(ref.node, 0.0) for ref in node.inputs), default=0.0)
        summed = terms_summed(node, shapes)
        depth[node] = carried + (0.0 if node.op in ("Const", "Placeholder", "Identity") else
                                 1.0 + (sqrt(summed) if summed > 1 else 0.0))
    return depth


def fetch_tolerances(graphs: list[Graph], fetches: list[str], feeds: dict,
                     relative: float | None = None) -> dict[str, Tolerance]:
    """fetch -> Tolerance from the deepest accumulation any of `graphs` (the original and the
    rewritten one) has on the way to it."""
    feed_shapes = {(name if ":" in name else f"{name}:0"): list(np.shape(value))
                   for name, value in feeds.items()}
    depths = []
    for graph in graphs:
        known = {name: shape for name, shape in feed_shapes.items() if name.rpartition(":")[0] in graph}
        depths.append((graph, accumulation_depth(graph, known)))
    result = {}
    for name in fetches:
        deepest = max((depth.get(graph.tensor(name).node, 0.0) for graph, depth in depths), default=0.0)
        result[name] = Tolerance(deepest, relative)
    return result


def describe(tolerances: dict[str, Tolerance], dtype=np.float32) -> str:
    """One line: the largest relative tolerance and the depth it comes from."""
    if not tolerances:
        return "none (no fetches)"
    name, worst = max(tolerances.items(), key=lambda item: item[1].factor(dtype))
    if worst.relative is not None:
        return f"{worst.relative:.3g} x max|value| (given) + rtol 1e-05, atol 1e-06"
    return (f"up to {worst.factor(dtype):.3g} x max|value| for {np.dtype(dtype).name} "
            f"({name}: {worst.depth:.0f} roundings deep)")
