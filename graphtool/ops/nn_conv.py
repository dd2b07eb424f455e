"""Convolution and pooling ops of the nn family (imported by nn.py, registered as family "nn").

Every op here sizes its output the same way, so the module is built around two helpers:
- Layout: where the batch, channel and spatial dims sit for a data_format ("NHWC", "NCHW",
  "NDHWC", "NCHW_VECT_C") or filter_format ("HWIO", "OIHW", "OIHW_VECT_I") string;
- Window: TensorFlow's windowed output size arithmetic (GetWindowedOutputSizeFromDimsV2) for
  SAME, VALID and EXPLICIT padding with strides and dilations.
The shape functions reproduce TensorFlow's C++ ones (common_shape_fns.cc, nn_ops.cc), including
what they infer from partially known shapes and which inconsistencies they reject.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from ..shapes import Shape, ShapeError, has_rank
from . import registry
from .inference import InferenceContext

register = partial(registry.register, family="nn")

Dim = int | None


# --- dimension arithmetic (TensorFlow's InferenceContext::Merge / Multiply / Divide) -------

def merge_dim(ctx: InferenceContext, a: Dim, b: Dim) -> Dim:
    """The dim that both a and b describe."""
    if a is None:
        return b
    if b is not None and a != b:
        ctx.fail(f"Dimensions must be equal, but are {a} and {b}")
    return a


def multiply_dim(a: Dim, b: Dim) -> Dim:
    """a * b; a known zero factor makes the product known even if the other is not."""
    if a == 0 or b == 0:
        return 0
    return None if a is None or b is None else a * b


def divide_dim_exactly(ctx: InferenceContext, a: Dim, divisor: int) -> Dim:
    """a / divisor, which must leave no remainder."""
    if a is not None and a % divisor:
        ctx.fail(f"Dimension size must be evenly divisible by {divisor} but is {a}")
    return None if a is None else a // divisor


# --- layouts ------------------------------------------------------------------------------

class Layout:
    """Dim positions for a layout string. Letters: N batch and C channels (data layouts), O and I
    output and input channels (filter layouts); any other letter (D, H, W) is a spatial dim.
    A `_VECT_C` / `_VECT_I` suffix splits that channel dim in two: the outer part stays in place
    and an inner part of 4 or 32 channels is appended as the last dim (int8 GPU layouts).
    Attr lists such as strides, ksize and dilations follow the letters without the suffix."""

    def __init__(self, name: str):
        self.name = name
        self.letters, _, self.vect_letter = name.partition("_VECT_")
        self.rank = len(self.letters) + bool(self.vect_letter)
        self.spatial_axes = [i for i, letter in enumerate(self.letters) if letter not in "NCOI"]

    @property
    def default_filter_format(self) -> str:
        """The filter layout paired with this data layout when an op has no filter_format: the
        spatial dims in order, then input and output channels (HWIO, DHWIO)."""
        return "".join(self.letters[i] for i in self.spatial_axes) + "IO"

    def get(self, values, letter: str):
        """The entry for `letter` of a shape or an attr list in this layout."""
        return values[self.letters.index(letter)]

    def spatial(self, values) -> list:
        """The spatial entries of a shape or an attr list, in order (D, H, W)."""
        return [values[i] for i in self.spatial_axes]

    def depth(self, shape: Shape, letter: str) -> Dim:
        """The full channel count of `letter`: outer times inner part when it is vectorized."""
        outer = self.get(shape, letter)
        return multiply_dim(outer, shape[-1]) if letter == self.vect_letter else outer

    def with_rank(self, ctx: InferenceContext, index: int) -> Shape:
        """Input `index` with this layout's rank; a vectorized layout needs an inner dim of 4 or
        32 (an unknown one is rejected too, as TensorFlow does)."""
        shape = ctx.with_rank(index, self.rank)
        if self.vect_letter and shape[-1] not in (4, 32):
            inner = "unknown" if shape[-1] is None else shape[-1]
            ctx.fail(f"VECT_{self.vect_letter} dimension must be 4 or 32, but is {inner}")
        return shape

    def replace(self, shape: Shape, letter: str, dim: Dim) -> Shape:
        """`shape` with the dim of `letter` set to `dim`."""
        dims = shape.as_list()
        dims[self.letters.index(letter)] = dim
        return Shape(dims)

    def build(self, dims: dict[str, Dim], spatial: list[Dim], inner: Dim = None) -> Shape:
        """A shape in this layout from dims by letter, the spatial dims and (when vectorized) the
        inner channel dim."""
        out: list[Dim] = [None] * self.rank
        for letter, dim in dims.items():
            out[self.letters.index(letter)] = dim
        for axis, dim in zip(self.spatial_axes, spatial):
            out[axis] = dim
        if self.vect_letter:
            out[-1] = inner
        return Shape(out)


# The filter layout of ops without a filter_format attr. For depthwise convolutions its O is the
# channel multiplier.
HWIO = Layout("HWIO")


def data_layout(ctx: InferenceContext) -> Layout:
    """The layout of the node's data_format attr (NHWC for ops that have none)."""
    return Layout(ctx.attr("data_format", "NHWC"))


# --- sliding windows ------------------------------------------------------------------------

def windowed_output_size(ctx: InferenceContext, size: Dim, window: Dim, stride: int,
                         dilation: int, padding: str, pads: tuple[int, int] = (0, 0)) -> Dim:
    """Output length of a window sliding over `size` elements: ceil(size / stride) for SAME;
    floor((size + pads - effective window) / stride) + 1 for VALID (no pads) and EXPLICIT, where a
    dilated window of k taps spans (k - 1) * dilation + 1 elements."""
    if stride <= 0:
        ctx.fail(f"Stride must be > 0, but got {stride}")
    if dilation < 1:
        ctx.fail(f"Dilation rate must be >= 1, but got {dilation}")
    if size is None:
        return None
    if padding == "SAME":
        return -(-size // stride)
    if window is None:
        return None
    padded = size + (sum(pads) if padding == "EXPLICIT" else 0)
    span = (window - 1) * dilation + 1
    if padded < span:
        ctx.fail(f"Negative dimension size caused by subtracting {span} from {padded}")
    return (padded - span) // stride + 1


@dataclass(frozen=True)
class Window:
    """A window over the spatial dims: taps, stride and dilation per dim, and the padding."""
    sizes: list[Dim]
    strides: list[int]
    dilations: list[int]
    padding: str                     # SAME, VALID or EXPLICIT
    pads: list[tuple[int, int]]      # (before, after) per spatial dim; zeros unless EXPLICIT

    def output_sizes(self, ctx: InferenceContext, in_sizes: list[Dim]) -> list[Dim]:
        return [windowed_output_size(ctx, size, window, stride, dilation, self.padding, pads)
                for size, window, stride, dilation, pads
                in zip(in_sizes, self.sizes, self.strides, self.dilations, self.pads)]


def read_window(ctx: InferenceContext, layout: Layout, sizes: list[Dim], strides: list[int],
                dilations: list[int] | None = None) -> Window:
    """The window of a conv or pooling node: `sizes` per spatial dim (filter dims or ksize),
    `strides` and `dilations` as full attr lists in `layout`, padding from the node's attrs."""
    full = len(layout.letters)
    dilations = [1] * full if dilations is None else dilations
    for name, values in (("stride", strides), ("dilation", dilations)):
        if len(values) != full:
            ctx.fail(f"{ctx.op} on data format {layout.name} requires the {name} attribute to "
                     f"contain {full} values, but got: {len(values)}")
    padding = ctx.attr("padding")
    return Window(sizes, layout.spatial(strides), layout.spatial(dilations), padding,
                  _explicit_pads(ctx, layout, padding))


def _explicit_pads(ctx: InferenceContext, layout: Layout, padding: str) -> list[tuple[int, int]]:
    """Per spatial dim (before, after) from explicit_paddings, which holds a pair for every dim
    of the layout and must be empty unless padding is EXPLICIT (TensorFlow's CheckValidPadding)."""
    flat = ctx.attr("explicit_paddings", [])   # ops without EXPLICIT padding lack the attr
    if padding != "EXPLICIT":
        if flat:
            ctx.fail("explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT")
        return [(0, 0)] * len(layout.spatial_axes)
    full = len(layout.letters)
    if len(flat) != 2 * full:
        ctx.fail(f"explicit_paddings attribute must contain {2 * full} values, but got: {len(flat)}")
    if any(p < 0 for p in flat):
        ctx.fail("All elements of explicit_paddings must be nonnegative")
    pairs = [(flat[2 * i], flat[2 * i + 1]) for i in range(full)]
    if layout.get(pairs, "N") != (0, 0) or layout.get(pairs, "C") != (0, 0):
        ctx.fail("Nonzero explicit padding in the batch or depth dimensions is not supported")
    return layout.spatial(pairs)


# --- convolutions ---------------------------------------------------------------------------

def _conv_shape(ctx: InferenceContext) -> Shape:
    """Conv2D, Conv3D and _FusedConv2D: batch from the input, spatial dims from the window, the
    filter's output channels (TensorFlow's Conv2DShapeImpl and Conv3DShape)."""
    data = data_layout(ctx)
    filter_layout = Layout(ctx.attr("filter_format", "") or data.default_filter_format)
    image = data.with_rank(ctx, 0)
    kernel = data.with_rank(ctx, 1)   # TensorFlow checks the filter against the data layout too
    out_depth = filter_layout.get(kernel, "O")
    _check_groups(ctx, data.depth(image, "C"), filter_layout.depth(kernel, "I"), out_depth)
    dilations = ctx.attr("dilations")
    if ctx.op == "Conv3D":
        dilations = _swap_row_and_column(data, dilations)
    window = read_window(ctx, data, filter_layout.spatial(kernel), ctx.attr("strides"), dilations)
    spatial = window.output_sizes(ctx, data.spatial(image))
    inner = image[-1] if data.vect_letter else None
    if inner is not None:
        out_depth = divide_dim_exactly(ctx, out_depth, inner)
    return data.build({"N": image[0], "C": out_depth}, spatial, inner)


def _swap_row_and_column(layout: Layout, dilations: list[int]) -> list[int]:
    """TensorFlow's Conv3DShape reads the row dilation from the W entry and the column dilation
    from the H entry. The shapes TensorFlow records follow that, so ours do too (they differ from
    what a dilated Conv3D produces only when the two dilations differ)."""
    if len(dilations) != len(layout.letters):
        return dilations   # read_window reports the length
    swapped = list(dilations)
    rows, cols = layout.letters.index("H"), layout.letters.index("W")
    swapped[rows], swapped[cols] = dilations[cols], dilations[rows]
    return swapped


def _check_groups(ctx: InferenceContext, in_depth: Dim, filter_depth: Dim, out_depth: Dim) -> None:
    """A grouped convolution splits the input channels into groups of the filter's input depth;
    the output channels must divide evenly among the groups."""
    if in_depth is None or filter_depth is None:
        return
    if filter_depth == 0:
        ctx.fail("Depth of filter must not be 0")
    if in_depth % filter_depth:
        ctx.fail(f"Depth of input ({in_depth}) is not a multiple of input depth of filter ({filter_depth})")
    groups = in_depth // filter_depth
    if out_depth is None or groups == 1:
        return
    if groups == 0:
        ctx.fail("Number of groups must not be 0")
    if out_depth % groups:
        ctx.fail(f"Depth of output ({out_depth}) is not a multiple of the number of groups ({groups})")


def _depthwise_conv_shape(ctx: InferenceContext) -> Shape:
    """DepthwiseConv2dNative: filter [H, W, in_channels, multiplier]; out channels in * multiplier."""
    data = data_layout(ctx)
    image, kernel = ctx.with_rank(0, 4), ctx.with_rank(1, 4)
    in_depth = merge_dim(ctx, data.get(image, "C"), HWIO.get(kernel, "I"))
    out_depth = multiply_dim(in_depth, HWIO.get(kernel, "O"))
    window = read_window(ctx, data, HWIO.spatial(kernel), ctx.attr("strides"), ctx.attr("dilations"))
    return data.build({"N": image[0], "C": out_depth}, window.output_sizes(ctx, data.spatial(image)))


def _conv2d_backprop_input_shape(ctx: InferenceContext) -> Shape:
    """Conv2DBackpropInput: the input_sizes value, either all 4 dims or just the 2 spatial ones
    (channels then come from the filter). As in TensorFlow, the batch dim is out_backprop's:
    input_sizes' batch is only checked against it."""
    data = data_layout(ctx)
    kernel, grad = ctx.with_rank(1, 4), ctx.with_rank(2, 4)
    merge_dim(ctx, data.get(grad, "C"), HWIO.get(kernel, "O"))
    sizes = ctx.shape_from_tensor(0)
    if not has_rank(sizes):
        sizes = Shape.unknown_of_rank(4)
    if sizes.rank == 4:
        merge_dim(ctx, data.get(sizes, "N"), grad[0])
        spatial, depth = data.spatial(sizes), data.get(sizes, "C")
    elif sizes.rank == 2:
        spatial, depth = list(sizes.dims), HWIO.get(kernel, "I")
    else:
        ctx.fail(f"{ctx.op} requires input_sizes to contain 4 values or 2 values, but got: {sizes.rank}")
    return data.build({"N": grad[0], "C": depth}, spatial)


def shape_from_input(index: int, rank: int):
    """Shape function of ops whose output shape is the (partial) value of input `index`."""
    def shape_fn(ctx: InferenceContext) -> Shape:
        shape = ctx.shape_from_tensor(index)
        try:
            return shape.with_rank(rank)
        except ShapeError:
            ctx.fail(f"input {index} gives the output shape {shape}, which must have rank {rank}")
    return shape_fn


# --- pooling --------------------------------------------------------------------------------

def _pool_shape(ctx: InferenceContext, ksize: list[int], strides: list[int], *,
                pool_depth: bool) -> Shape:
    """MaxPool-style ops pool the channel dim too (`pool_depth`); AvgPool leaves it alone."""
    data = data_layout(ctx)
    image = data.with_rank(ctx, 0)
    if len(ksize) != len(data.letters):
        ctx.fail(f"{ctx.op} requires the ksize attribute to contain {len(data.letters)} values, "
                 f"but got: {len(ksize)}")
    window = read_window(ctx, data, data.spatial(ksize), strides)
    depth = data.get(image, "C")
    if pool_depth:
        depth = windowed_output_size(ctx, depth, data.get(ksize, "C"), data.get(strides, "C"), 1,
                                     window.padding)
    # TensorFlow's MakeShapeFromFormat gives a vectorized output an inner dim of 4, always.
    return data.build({"N": image[0], "C": depth}, window.output_sizes(ctx, data.spatial(image)),
                      4 if data.vect_letter else None)


def _max_pool_shape(ctx: InferenceContext) -> Shape:
    return _pool_shape(ctx, ctx.attr("ksize"), ctx.attr("strides"), pool_depth=True)


def _avg_pool_shape(ctx: InferenceContext) -> Shape:
    return _pool_shape(ctx, ctx.attr("ksize"), ctx.attr("strides"), pool_depth=False)


def _max_pool_v2_shape(ctx: InferenceContext) -> Shape:
    """MaxPoolV2 takes ksize and strides as 4-element inputs; unknown values give unknown rank."""
    data_layout(ctx).with_rank(ctx, 0)
    for index in (1, 2):
        length = ctx.with_rank(index, 1)[0]
        if length not in (None, 4):
            ctx.fail(f"Dimension must be 4 but is {length}")
    ksize, strides = ctx.int_list(1), ctx.int_list(2)
    if ksize is None or strides is None:
        return Shape.unknown()
    return _pool_shape(ctx, ksize, strides, pool_depth=True)


def _max_pool_with_argmax_shapes(ctx: InferenceContext) -> list[Shape]:
    shape = _max_pool_shape(ctx)
    return [shape, shape]


def _rank4_like_input0(ctx: InferenceContext) -> Shape:
    """MaxPoolGrad(V2): the gradient has the original input's shape."""
    return ctx.with_rank(0, 4)


# --- registrations --------------------------------------------------------------------------

FLOAT_TYPES = "{float16, bfloat16, float32, float64}"
# TensorFlow's realnumbertypes without the quantized ones.
REAL_TYPES = "{float32, float64, int32, uint8, int16, int8, int64, bfloat16, uint16, float16, uint32, uint64}"

_PADDING = "padding: {'SAME', 'VALID'}"
_PADDING_OR_EXPLICIT = "padding: {'SAME', 'VALID', 'EXPLICIT'}"
_EXPLICIT_PADDINGS = "explicit_paddings: list(int) = []"
DATA_FORMAT = "data_format: {'NHWC', 'NCHW'} = 'NHWC'"
_CONV_ATTRS = ["strides: list(int)", _PADDING_OR_EXPLICIT, _EXPLICIT_PADDINGS, DATA_FORMAT,
               "dilations: list(int) = [1, 1, 1, 1]"]
_CONV2D_TYPES = "T: {float16, bfloat16, float32, float64, int32}"
_CUDNN = "use_cudnn_on_gpu: bool = true"
_WINDOW_ATTRS = ["ksize: list(int) >= 4", "strides: list(int) >= 4"]
_MAX_POOL_TYPES = ("T: {float16, bfloat16, float32, float64, int32, int64, uint8, int16, int8, uint16, qint8}"
                   " = float32")
_VECT_C_FORMAT = "data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'"

register("Conv2D", inputs=["input: T", "filter: T"], outputs=["output: T"],
         attrs=[_CONV2D_TYPES, _CUDNN, *_CONV_ATTRS], shape=_conv_shape)
register("Conv2DBackpropInput", inputs=["input_sizes: int32", "filter: T", "out_backprop: T"],
         outputs=["output: T"], attrs=[_CONV2D_TYPES, _CUDNN, *_CONV_ATTRS],
         shape=_conv2d_backprop_input_shape)
register("Conv2DBackpropFilter", inputs=["input: T", "filter_sizes: int32", "out_backprop: T"],
         outputs=["output: T"], attrs=[f"T: {FLOAT_TYPES}", _CUDNN, *_CONV_ATTRS],
         shape=shape_from_input(1, 4))
register("DepthwiseConv2dNative", inputs=["input: T", "filter: T"], outputs=["output: T"],
         attrs=[f"T: {FLOAT_TYPES}", *_CONV_ATTRS], shape=_depthwise_conv_shape)
register("DepthwiseConv2dNativeBackpropInput",
         inputs=["input_sizes: int32", "filter: T", "out_backprop: T"], outputs=["output: T"],
         attrs=[f"T: {FLOAT_TYPES}", *_CONV_ATTRS], shape=shape_from_input(0, 4))
register("DepthwiseConv2dNativeBackpropFilter",
         inputs=["input: T", "filter_sizes: int32", "out_backprop: T"], outputs=["output: T"],
         attrs=[f"T: {FLOAT_TYPES}", *_CONV_ATTRS], shape=shape_from_input(1, 4))
register("Conv3D", inputs=["input: T", "filter: T"], outputs=["output: T"],
         attrs=[f"T: {FLOAT_TYPES}", "strides: list(int) >= 5", _PADDING,
                "data_format: {'NDHWC', 'NCDHW'} = 'NDHWC'", "dilations: list(int) = [1, 1, 1, 1, 1]"],
         shape=_conv_shape)
# Produced by TensorFlow's remapper (and later by ours): a Conv2D followed by fused_ops such as
# BiasAdd and Relu, whose extra operands arrive in `args`.
register("_FusedConv2D",
         inputs=["input: T", "filter: T", "args: TArgs", "host_args: num_host_args * float32"],
         outputs=["output: T"],
         attrs=["T: {float16, float32, float64, int8, qint8}", "TArgs: list(type) >= 1",
                "num_args: int >= 0", "num_host_args: int >= 0 = 0", "strides: list(int)",
                _PADDING_OR_EXPLICIT, _EXPLICIT_PADDINGS, _VECT_C_FORMAT,
                "filter_format: {'HWIO', 'OIHW', 'OIHW_VECT_I'} = 'HWIO'",
                "dilations: list(int) = [1, 1, 1, 1]", _CUDNN, "fused_ops: list(string) = []",
                "epsilon: float = 0.0001", "leakyrelu_alpha: float = 0.2"],
         shape=_conv_shape)

register("MaxPool", inputs=["input: T"], outputs=["output: T"],
         attrs=[_MAX_POOL_TYPES, *_WINDOW_ATTRS, _PADDING_OR_EXPLICIT, _EXPLICIT_PADDINGS, _VECT_C_FORMAT],
         shape=_max_pool_shape)
register("MaxPoolV2", inputs=["input: T", "ksize: int32", "strides: int32"], outputs=["output: T"],
         attrs=[_MAX_POOL_TYPES, _PADDING, _VECT_C_FORMAT], shape=_max_pool_v2_shape)
register("AvgPool", inputs=["value: T"], outputs=["output: T"],
         attrs=[*_WINDOW_ATTRS, _PADDING, DATA_FORMAT, f"T: {FLOAT_TYPES}"], shape=_avg_pool_shape)
register("MaxPoolWithArgmax", inputs=["input: T"], outputs=["output: T", "argmax: Targmax"],
         attrs=[*_WINDOW_ATTRS, "Targmax: {int32, int64} = int64", _PADDING,
                "include_batch_in_index: bool = false", f"T: {REAL_TYPES}"],
         shape=_max_pool_with_argmax_shapes)
register("MaxPoolGrad", inputs=["orig_input: T", "orig_output: T", "grad: T"], outputs=["output: T"],
         attrs=[*_WINDOW_ATTRS, _PADDING_OR_EXPLICIT, _EXPLICIT_PADDINGS, DATA_FORMAT,
                f"T: {REAL_TYPES} = float32"],
         shape=_rank4_like_input0)
register("MaxPoolGradV2",
         inputs=["orig_input: T", "orig_output: T", "grad: T", "ksize: int32", "strides: int32"],
         outputs=["output: T"], attrs=[_PADDING, DATA_FORMAT, f"T: {REAL_TYPES} = float32"],
         shape=_rank4_like_input0)
register("AvgPoolGrad", inputs=["orig_input_shape: int32", "grad: T"], outputs=["output: T"],
         attrs=[*_WINDOW_ATTRS, _PADDING, DATA_FORMAT, f"T: {FLOAT_TYPES}"],
         shape=shape_from_input(0, 4))
