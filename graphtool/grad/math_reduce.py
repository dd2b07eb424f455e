"""Gradients of reductions (Sum, Mean, Prod, Max, Min, EuclideanNorm) and scans (Cumsum, Cumprod)
(TensorFlow's math_grad.py semantics; segment reductions are in segment.py).

A reduction's output gradient is reshaped to the input's rank with the reduced axes kept as 1
(op_utils.reduced_shape) and broadcast back over them; axis inputs get no gradient.
"""
from __future__ import annotations

from .op_utils import (INDEX, as_int32, broadcast_reduction_grad, emit, int_const, mul, normalized_axes,
                       reduced_shape, scalar)
from .registry import GradContext, gradient


def _kept(ctx: GradContext, value):
    """A reduction's output-shaped `value` reshaped to the keep_dims shape, so it broadcasts
    against the input."""
    return emit(ctx, "Reshape", value, reduced_shape(ctx, 0, 1))


@gradient("Sum")
def _sum_grad(ctx, grads):
    return [broadcast_reduction_grad(ctx, grads[0]), None]


@gradient("Mean")
def _mean_grad(ctx, grads):
    """Sum's gradient divided by the number of elements averaged per output element."""
    spread = broadcast_reduction_grad(ctx, grads[0])
    in_count, out_count = ctx.input_shape(0).num_elements(), ctx.output_shape(0).num_elements()
    if in_count is not None and out_count is not None:
        count = scalar(ctx, in_count // max(out_count, 1), spread)
    else:
        sizes = [emit(ctx, "Size", v, out_type=INDEX) for v in (ctx.input(0), ctx.output(0))]
        ratio = emit(ctx, "FloorDiv", sizes[0], emit(ctx, "Maximum", sizes[1], int_const(ctx.b, 1)))
        count = emit(ctx, "Cast", ratio, DstT=ctx.b.dtype(spread))
    return [emit(ctx, "RealDiv", spread, count), None]


@gradient("Max", "Min")
def _extremum_grad(ctx, grads):
    """The gradient goes to the input elements equal to the extremum, shared evenly among ties."""
    x = ctx.input(0)
    chosen = emit(ctx, "Cast", emit(ctx, "Equal", x, _kept(ctx, ctx.output(0))), DstT=ctx.input_dtype(0))
    ties = emit(ctx, "Sum", chosen, ctx.input(1), keep_dims=True)
    share = emit(ctx, "RealDiv", _kept(ctx, grads[0]), ties)
    return [mul(ctx, chosen, share), None]


@gradient("EuclideanNorm")
def _euclidean_norm_grad(ctx, grads):
    # d ||x|| / dx = x / ||x|| (DivNoNan: an all-zero slice gets no gradient instead of NaN).
    scaled = emit(ctx, "DivNoNan", _kept(ctx, grads[0]), _kept(ctx, ctx.output(0)))
    return [mul(ctx, ctx.input(0), scaled), None]


@gradient("Prod")
def _prod_grad(ctx, grads):
    """d prod / d x_i = product of the other elements, computed without dividing by x_i (which
    may be 0) as exclusive cumulative products from both ends: the reduced axes are moved to the
    front and flattened into one, the kept axes into another, so one Cumprod pair covers any
    set of axes."""
    b, x = ctx.b, ctx.input(0)
    spread = broadcast_reduction_grad(ctx, grads[0])
    shape = emit(ctx, "Shape", x, out_type=INDEX)
    rank = emit(ctx, "Rank", x)
    axes = normalized_axes(ctx, as_int32(ctx, emit(ctx, "Reshape", ctx.input(1), int_const(b, [-1]))), rank)
    others, _ = emit(ctx, "ListDiff", emit(ctx, "Range", int_const(b, 0), rank, int_const(b, 1)), axes)
    perm = emit(ctx, "ConcatV2", [axes, others], int_const(b, 0))
    reduced_size = emit(ctx, "Prod", emit(ctx, "GatherV2", shape, axes, int_const(b, 0)), int_const(b, 0))
    kept_size = emit(ctx, "Prod", emit(ctx, "GatherV2", shape, others, int_const(b, 0)), int_const(b, 0))
    permuted = emit(ctx, "Transpose", x, perm)
    matrix = emit(ctx, "Reshape", permuted, emit(ctx, "Pack", [reduced_size, kept_size], axis=0))
    zero_axis = int_const(b, 0)
    before = emit(ctx, "Cumprod", matrix, zero_axis, exclusive=True)
    after = emit(ctx, "Cumprod", matrix, zero_axis, exclusive=True, reverse=True)
    others_product = emit(ctx, "Reshape", mul(ctx, before, after), emit(ctx, "Shape", permuted, out_type=INDEX))
    unpermuted = emit(ctx, "Transpose", others_product, emit(ctx, "InvertPermutation", perm))
    return [mul(ctx, spread, unpermuted), None]


@gradient("Cumsum")
def _cumsum_grad(ctx, grads):
    # Each input feeds every later (earlier, when reversed) output: a scan the other way round.
    return [emit(ctx, "Cumsum", grads[0], ctx.input(1), exclusive=ctx.attr("exclusive"),
                reverse=not ctx.attr("reverse")), None]


@gradient("Cumprod")
def _cumprod_grad(ctx, grads):
    # d out_j / d x_i = out_j / x_i for the outputs x_i feeds; assumes no zeros, as TF does.
    x, axis = ctx.input(0), ctx.input(1)
    summed = emit(ctx, "Cumsum", mul(ctx, ctx.output(0), grads[0]), axis,
                 exclusive=ctx.attr("exclusive"), reverse=not ctx.attr("reverse"))
    return [emit(ctx, "RealDiv", summed, x), None]
