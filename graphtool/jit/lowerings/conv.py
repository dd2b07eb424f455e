"""Lowerings of the 2-D convolutions: Conv2D, DepthwiseConv2dNative and the Conv2D backprops,
with TensorFlow's geometry (strides, dilations, SAME / VALID / EXPLICIT padding, NHWC and NCHW)
as the interpreter's kernels compute it (kernels/nn_conv.py, nn_window.py).

Chosen by measurement (tests/bench/bench_lowerings.py; numbers in the comments below):
- Conv2D and the backprops: XLA's convolution (lax.conv_general_dilated).
- DepthwiseConv2dNative: one shifted, strided slice per filter tap times that tap's weights,
  summed (XLA fuses them into one loop), not XLA's grouped convolution (feature_group_count = C),
  which its CPU backend runs as a slow generic loop.
"""
from __future__ import annotations

from ...exec.kernels.nn_window import window_geometry as interpreter_geometry
from .common import lowering, static_ints

# --- geometry -------------------------------------------------------------------------------


def _is_channels_first(data_format: str) -> bool:
    return data_format.startswith("NC")


def _spatial(values, data_format: str) -> list[int]:
    values = list(values)
    return values[2:] if _is_channels_first(data_format) else values[1:-1]


def _batch_and_channel(values, data_format: str) -> tuple[int, int]:
    values = list(values)
    return values[0], values[1 if _is_channels_first(data_format) else -1]


def window_geometry(in_sizes, taps, strides, dilations, padding: str, explicit=None):
    """((before, after) pads, output sizes) per spatial dim: the interpreter's arithmetic, with an
    impossible (negative) size clamped to 0 (the lowering declines such nodes)."""
    pads, out_sizes = interpreter_geometry(in_sizes, taps, strides, dilations, padding, explicit)
    return pads, [max(out, 0) for out in out_sizes]


class ConvGeometry:
    """A conv node's attrs, spatial dims only, for an input of `in_shape` (in data_format)."""

    def __init__(self, ctx, in_shape, taps):
        self.data_format = ctx.attr("data_format", "NHWC")
        self.strides = _spatial(ctx.attr("strides"), self.data_format)
        self.dilations = _spatial(ctx.attr("dilations", [1, 1, 1, 1]), self.data_format)
        padding = ctx.attr("padding")
        flat = list(ctx.attr("explicit_paddings", []) or [])
        explicit = _spatial([(flat[2 * i], flat[2 * i + 1]) for i in range(len(flat) // 2)], self.data_format)
        self.in_sizes = _spatial(in_shape, self.data_format)
        self.taps = list(taps)
        self.pads, self.out_sizes = window_geometry(self.in_sizes, self.taps, self.strides, self.dilations,
                                                    padding, explicit)


def conv_supported(node) -> str | None:
    data_format = node.attr("data_format", "NHWC")
    if data_format not in ("NHWC", "NCHW"):
        return f"{node.op} with data_format {data_format} has no lowering"
    for name in ("strides", "dilations"):
        values = node.attr(name, [1, 1, 1, 1]) or [1, 1, 1, 1]
        if len(values) != 4 or any(v != 1 for v in _batch_and_channel(values, data_format)) or min(values) < 1:
            return f"{node.op} with {name}={list(values)} has no lowering"
    if node.attr("padding") == "EXPLICIT" and len(node.attr("explicit_paddings", []) or []) != 8:
        return f"{node.op}: explicit_paddings must hold 8 values"
    dtype = node.spec.output_dtypes(node)[0].base.numpy
    return None if dtype.kind == "f" else f"{node.op} on {dtype} has no lowering"


def _to_nhwc(ctx, x, data_format: str):
    return ctx.jnp.transpose(x, (0, 2, 3, 1)) if _is_channels_first(data_format) else x


def _from_nhwc(ctx, x, data_format: str):
    return ctx.jnp.transpose(x, (0, 3, 1, 2)) if _is_channels_first(data_format) else x


def _conv(ctx, lhs, rhs, geometry: ConvGeometry, groups: int):
    """XLA's convolution of an NHWC/NCHW input with an HWIO filter."""
    layout = geometry.data_format
    return ctx.lax.conv_general_dilated(
        lhs, rhs, window_strides=geometry.strides, padding=geometry.pads, rhs_dilation=geometry.dilations,
        dimension_numbers=(layout, "HWIO", layout), feature_group_count=groups,
        precision=ctx.lax.Precision.HIGHEST)


# --- Conv2D ---------------------------------------------------------------------------------

# Conv2D: XLA's convolution. Medians in ms on 2 busy cores (bench_lowerings.py; interpreter /
# lax.conv_general_dilated / im2col patches @ matmul in jnp):
#   8x64x64x16 3x3->16: 13.0 / 6.2 / 39.1     1x224x224x3 3x3/2->32: 8.0 / 2.1 / 2.4
#   1x56x56x96 1x1->96:  8.0 / 0.80 / 0.70    1x14x14x256 3x3->256: 52.0 / 2.8 / 7.3
# im2col only ties on pointwise convolutions, so XLA's convolution everywhere. A grouped Conv2D
# with one input channel per group is a depthwise convolution and takes that path (below).
@lowering("Conv2D", supports=conv_supported)
def conv2d(ctx, image, filt):
    geometry = ConvGeometry(ctx, image.shape, filt.shape[:2])
    in_depth = _batch_and_channel(image.shape, geometry.data_format)[1]
    kh, kw, filter_depth, out_depth = filt.shape
    if filter_depth == 1 and in_depth > 1 and out_depth % in_depth == 0:
        depthwise = filt.reshape(kh, kw, in_depth, out_depth // in_depth)
        result = depthwise_taps(ctx, _to_nhwc(ctx, image, geometry.data_format), depthwise, geometry)
        return _from_nhwc(ctx, result, geometry.data_format)
    return _conv(ctx, image, filt, geometry, in_depth // filter_depth)


# --- DepthwiseConv2dNative ------------------------------------------------------------------

def depthwise_taps(ctx, image_nhwc, filt, geometry: ConvGeometry):
    """The depthwise convolution as sum over taps (i, j) of a strided slice of the padded input
    times filt[i, j] ([C, M], output channel c * M + m)."""
    jnp, lax = ctx.jnp, ctx.lax
    batch, _, _, channels = image_nhwc.shape
    kh, kw, _, multiplier = filt.shape
    (out_h, out_w), (sh, sw), (dh, dw) = geometry.out_sizes, geometry.strides, geometry.dilations
    if out_h == 0 or out_w == 0 or batch == 0 or channels * multiplier == 0 or kh * kw == 0:
        return jnp.zeros((batch, out_h, out_w, channels * multiplier), image_nhwc.dtype)
    padded = jnp.pad(image_nhwc, ((0, 0), *geometry.pads, (0, 0)))
    total = None
    for i in range(kh):
        for j in range(kw):
            start = (0, i * dh, j * dw, 0)
            limit = (batch, i * dh + (out_h - 1) * sh + 1, j * dw + (out_w - 1) * sw + 1, channels)
            tap = lax.slice(padded, start, limit, (1, sh, sw, 1))
            if multiplier == 1:
                term = tap * filt[i, j, :, 0]
            else:
                term = (tap[..., None] * filt[i, j]).reshape(batch, out_h, out_w, channels * multiplier)
            total = term if total is None else total + term
    return total


# Medians in ms on 2 busy cores, two runs (bench_lowerings.py; interpreter / shifted multiply-adds /
# XLA grouped convolution):
#   depthwise 3x3 + pointwise 1x1, 1x56x56x96 (issue 15: 6.9 grouped, 0.6 shifted, TF 1.1):
#                                      16.0 / 1.4-3.6 / 17.3-25.0
#   1x112x112x32 3x3/2:                1.40 / 0.72 / 15.1
#   1x28x28x240 5x5:                   3.41 / 0.96 / 43.0
#   4x32x32x16 3x3, multiplier 4:      8.41 / 0.69 / 7.96
# Whole frozen Keras models through the JIT (tests/fixtures/tf2, two runs; shifted / grouped):
#   MobileNetV1 2x128x128: 3.4-6.9 / 44-50 ms; MobileNetV2 2x32x32: 3.3-4.6 / 6.4-15 ms;
#   EfficientNetB0 2x32x32: 1.9-3.6 / 7.8-11 ms (the interpreter: 107-359, 8-22, 16-50 ms).
@lowering("DepthwiseConv2dNative", supports=conv_supported)
def depthwise_conv2d(ctx, image, filt):
    geometry = ConvGeometry(ctx, image.shape, filt.shape[:2])
    result = depthwise_taps(ctx, _to_nhwc(ctx, image, geometry.data_format), filt, geometry)
    return _from_nhwc(ctx, result, geometry.data_format)


# --- Conv2D backprops -----------------------------------------------------------------------

def _backprop_supported(node) -> str | None:
    return conv_supported(node)


@lowering("Conv2DBackpropInput", static_inputs=(0,), supports=_backprop_supported)
def conv2d_backprop_input(ctx, input_sizes, filt, grad):
    """The transposed convolution: the output gradient dilated by the strides, convolved with the
    spatially flipped filter (in and out channels swapped), padded so the result has the input's size."""
    data_format = ctx.attr("data_format", "NHWC")
    sizes = static_ints(input_sizes)
    in_depth = filt.shape[2]
    if len(sizes) == 2:   # only the spatial sizes given: batch and depth from the gradient and filter
        batch = grad.shape[0]
        sizes = [batch, in_depth, *sizes] if _is_channels_first(data_format) else [batch, *sizes, in_depth]
    geometry = ConvGeometry(ctx, sizes, filt.shape[:2])
    pads = []
    for size, out, k, s, d, (before, _) in zip(geometry.in_sizes, geometry.out_sizes, geometry.taps,
                                              geometry.strides, geometry.dilations, geometry.pads):
        span = (k - 1) * d + 1
        pads.append((span - 1 - before, size - (out - 1) * s + before - 1))
    groups = _batch_and_channel(sizes, data_format)[1] // in_depth
    flipped = filt[::-1, ::-1]
    if groups > 1:   # [kh, kw, Cg, O] -> [kh, kw, O/g, C]: swap in/out within each group
        kh, kw, cg, out = flipped.shape
        flipped = flipped.reshape(kh, kw, cg, groups, out // groups).transpose(0, 1, 4, 3, 2)
        flipped = flipped.reshape(kh, kw, out // groups, groups * cg)
        spec = "HWIO"
    else:
        spec = "HWOI"
    layout = data_format
    return ctx.lax.conv_general_dilated(
        grad, flipped, window_strides=(1, 1), padding=pads, lhs_dilation=geometry.strides,
        rhs_dilation=geometry.dilations, dimension_numbers=(layout, spec, layout),
        feature_group_count=groups, precision=ctx.lax.Precision.HIGHEST)


# Medians in ms, two runs on 2 cores under load 4 (noisy; /tmp script folded into the report):
# interpreter / XLA convolution / im2col patches @ matmul / one matmul per tap:
#   8x32x32x32->32 3x3:  27-36 / 3.7-11 / 29-40 / 12-16     8x64x64x16->16 3x3: 98-124 / 3.9-8.2 / 71-90 / 15-30
#   1x14x14x256->256 3x3: 16 / 7-12 / 7-11 / 4-8          1x56x56x96->96 1x1: 0.5-128 / 2.3-5.7 / 1.0-1.1 / 1.0-2.8
# XLA's convolution except for 1x1 filters at stride 1, where the gradient is one matmul.
@lowering("Conv2DBackpropFilter", static_inputs=(1,), supports=_backprop_supported)
def conv2d_backprop_filter(ctx, image, filter_sizes, grad):
    """dW[i, j, c, o] = sum over batch and output positions of the input tap times the gradient:
    a convolution of the input (batch as features) with the gradient as the filter, at the
    forward stride as the filter dilation and the forward dilation as the stride."""
    jnp, lax = ctx.jnp, ctx.lax
    data_format = ctx.attr("data_format", "NHWC")
    shape = static_ints(filter_sizes)
    geometry = ConvGeometry(ctx, image.shape, shape[:2])
    groups = _batch_and_channel(image.shape, data_format)[1] // shape[2]
    image, grad = _to_nhwc(ctx, image, data_format), _to_nhwc(ctx, grad, data_format)
    padded = jnp.pad(image, ((0, 0), *geometry.pads, (0, 0)))
    # Only the rows and columns some tap reaches take part (VALID leaves a remainder).
    reach = [(k - 1) * d + (out - 1) * s + 1 for k, d, out, s in
             zip(geometry.taps, geometry.dilations, geometry.out_sizes, geometry.strides)]
    padded = padded[:, :reach[0], :reach[1], :]
    if 0 in shape or grad.size == 0 or padded.size == 0:
        return jnp.zeros(shape, image.dtype)
    if shape[:2] == [1, 1] and geometry.strides == [1, 1] and groups == 1:
        return jnp.einsum("nhwc,nhwo->co", padded, grad, precision=lax.Precision.HIGHEST).reshape(shape)
    if groups > 1:
        # Group g's features of the input and of the gradient pair up: stack the batch inside
        # each group as the contracted features (feature_group_count = groups).
        batch, h, w, _ = padded.shape
        lhs = padded.reshape(batch, h, w, groups, shape[2]).transpose(4, 1, 2, 3, 0)
        lhs = lhs.reshape(shape[2], h, w, groups * batch)
        return lax.conv_general_dilated(
            lhs, grad.transpose(1, 2, 0, 3), window_strides=geometry.dilations, padding=((0, 0), (0, 0)),
            rhs_dilation=geometry.strides, dimension_numbers=("NHWC", "HWIO", "HWNC"),
            feature_group_count=groups, precision=lax.Precision.HIGHEST)
    return lax.conv_general_dilated(
        padded, grad, window_strides=geometry.dilations, padding=((0, 0), (0, 0)),
        rhs_dilation=geometry.strides, dimension_numbers=("CHWN", "IHWO", "HWNC"),
        precision=lax.Precision.HIGHEST)


# --- Conv3D ---------------------------------------------------------------------------------

def _conv3d_supported(node) -> str | None:
    data_format = node.attr("data_format", "NDHWC")
    if data_format not in ("NDHWC", "NCDHW"):
        return f"Conv3D with data_format {data_format} has no lowering"
    for name in ("strides", "dilations"):
        values = list(node.attr(name, [1] * 5) or [1] * 5)
        if len(values) != 5 or any(v != 1 for v in _batch_and_channel(values, data_format)) or min(values) < 1:
            return f"Conv3D with {name}={values} has no lowering"
    dtype = node.spec.output_dtypes(node)[0].base.numpy
    return None if dtype.kind == "f" else f"Conv3D on {dtype} has no lowering"


@lowering("Conv3D", supports=_conv3d_supported)
def conv3d(ctx, image, filt):
    layout = ctx.attr("data_format", "NDHWC")
    strides = _spatial(ctx.attr("strides"), layout)
    dilations = _spatial(ctx.attr("dilations", [1] * 5), layout)
    pads, _ = window_geometry(_spatial(image.shape, layout), filt.shape[:3], strides, dilations, ctx.attr("padding"))
    in_depth = _batch_and_channel(image.shape, layout)[1]
    return ctx.lax.conv_general_dilated(
        image, filt, window_strides=strides, padding=pads, rhs_dilation=dilations,
        dimension_numbers=(layout, "DHWIO", layout), feature_group_count=in_depth // filt.shape[3],
        precision=ctx.lax.Precision.HIGHEST)
