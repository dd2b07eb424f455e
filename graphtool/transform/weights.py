"""quantize_weights and round_weights: smaller or more compressible float constants.

quantize_weights (the Graph Transform Tool's): a float32 Const of at least `minimum_size`
elements becomes Const quint8 + Const min + Const max -> Dequantize(mode=MIN_FIRST) (or, with
mode=SCALED, qint8 symmetric around 0 -> Dequantize(mode=SCALED)), the
Dequantize taking the Const's name so every user (and a fetch by name) reads the same tensor.
The 8-bit values come from the QuantizeV2 kernel itself (graphtool/exec/kernels/nn_quant.py) over
the range [min(w, 0), max(w, 0)], so quantizing and dequantizing agree to the bit with TensorFlow's
kernels; each weight moves by at most half a step, (max - min) / 255 / 2.

round_weights: the same values rounded to `num_steps` levels between their min and max, kept as
float32 (the file compresses well; nothing is needed at run time).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..ir import Graph, Node
from .base import Param, Transform, TransformContext, TransformResult, register_transform

QUINT8 = dtypes.from_name("quint8")
# The 8-bit type each Dequantize mode stores: MIN_FIRST (the Graph Transform Tool's) spans
# [min(w, 0), max(w, 0)] in quint8; SCALED spans [-max|w|, max|w|] in qint8.
MODES = {"MIN_FIRST": QUINT8, "SCALED": dtypes.from_name("qint8")}


def _float_consts(graph: Graph, minimum_size: int) -> list[tuple[Node, np.ndarray]]:
    """Float32 Consts of at least `minimum_size` elements, with their values."""
    found = []
    for node in graph.nodes:
        if node.op != "Const" or node.attr("dtype") != dtypes.float32:
            continue
        value = node.attr("value")
        if value.size >= max(minimum_size, 1) and np.isfinite(value).all():
            found.append((node, value))
    return found


def quantize(value: np.ndarray, mode: str = "MIN_FIRST") -> tuple[np.ndarray, np.float32, np.float32]:
    """(8-bit values, min, max) as QuantizeV2 makes them: quint8 for MIN_FIRST, qint8 for SCALED
    (symmetric around 0)."""
    from ..exec.kernels import CPU, KernelContext, bind, lookup
    from ..exec.devices import CPUDevice

    scratch = Graph()
    node = scratch.add_node("QuantizeV2", "quantize", attrs={"T": MODES[mode], "mode": mode})
    out_dtypes = [MODES[mode], dtypes.float32, dtypes.float32]
    ctx = KernelContext(np, node.name, node.op, out_dtypes, CPUDevice())
    low, high = np.float32(min(float(value.min()), 0.0)), np.float32(max(float(value.max()), 0.0))
    kernel_def = lookup("QuantizeV2", CPU)
    assert kernel_def is not None, "graphtool/exec/kernels/nn_quant.py registers QuantizeV2"
    kernel = bind(kernel_def, node)
    q, q_min, q_max = kernel(ctx, value.astype(np.float32), low, high)
    return np.asarray(q), np.float32(q_min), np.float32(q_max)


@register_transform
class QuantizeWeights(Transform):
    name = "quantize_weights"
    description = ("store big float32 Consts as 8-bit values + min/max, dequantized at run time "
                   "(Dequantize); about 4x smaller weights, each off by at most half a step")
    params = (Param("minimum_size", "only Consts with at least this many elements", int, 1024),
              Param("mode", "MIN_FIRST (quint8 over [min, max], as the Graph Transform Tool) or SCALED "
                            "(qint8, symmetric)", default="MIN_FIRST"))

    def apply(self, graph: Graph, ctx: TransformContext, params) -> TransformResult:
        from ..errors import UsageError

        mode = params["mode"]
        if mode not in MODES:
            raise UsageError(f"quantize_weights(mode={mode}): expected MIN_FIRST or SCALED")
        quantized = bytes_before = bytes_after = 0
        for node, value in _float_consts(graph, params["minimum_size"]):
            q, low, high = quantize(value, mode)
            name, device, controls = node.name, node.device, list(node.control_inputs)
            consts = [graph.add_node("Const", graph.unique_name(f"{name}_quantized_{what}"), device=device,
                                     control_inputs=controls, attrs={"dtype": dtype, "value": array})
                      for what, dtype, array in (("value", MODES[mode], q), ("min", dtypes.float32, low),
                                                 ("max", dtypes.float32, high))]
            dequantize = graph.add_node("Dequantize", graph.unique_name(f"{name}_dequantize"),
                                        inputs=[c.output(0) for c in consts], device=device,
                                        attrs={"T": MODES[mode], "mode": mode, "dtype": dtypes.float32})
            graph.replace_all_uses_with(node.output(0), dequantize.output(0))
            graph.move_control_uses(node, dequantize)
            graph.remove_node(node)
            graph.rename(dequantize, name)
            quantized += 1
            bytes_before += value.nbytes
            bytes_after += q.nbytes + 8
        notes = [f"weights {bytes_before:,} -> {bytes_after:,} bytes"] if quantized else []
        return TransformResult.from_counts(notes, consts_quantized=quantized, bytes_before=bytes_before,
                                           bytes_after=bytes_after)


def rounded(value: np.ndarray, num_steps: int) -> np.ndarray:
    """`value` with every element moved to the nearest of `num_steps` evenly spaced levels from
    its min to its max (float32 arithmetic, as the Graph Transform Tool's round_weights)."""
    low, high = np.float32(value.min()), np.float32(value.max())
    step = (high - low) / np.float32(num_steps - 1)
    if step == 0:
        return value
    return (low + np.round((value - low) / step) * step).astype(np.float32)


@register_transform
class RoundWeights(Transform):
    name = "round_weights"
    description = "round float32 Consts to num_steps levels each (same size, compresses far better)"
    params = (Param("num_steps", "levels per Const, at least 2", int, 256),
              Param("minimum_size", "only Consts with at least this many elements", int, 15))

    def apply(self, graph: Graph, ctx: TransformContext, params) -> TransformResult:
        from ..errors import UsageError

        if params["num_steps"] < 2:
            raise UsageError(f"round_weights(num_steps={params['num_steps']}): needs at least 2 steps")
        changed = 0
        for node, value in _float_consts(graph, params["minimum_size"]):
            new = rounded(value, params["num_steps"])
            if not np.array_equal(new, value):
                node.set_attr("value", new)
                changed += 1
        return TransformResult.from_counts(consts_rounded=changed)
