"""Single-op nn cases for the ops real graphs add to the common set (family `nn`): the inverse
normal functions, space/depth/batch rearrangements and fake quantization. Cases that call
b.differentiate also record TensorFlow's tf.gradients as data."""
import numpy as np

from .registry import case
from .tf_v1 import tf


def _const(name, value):
    """Ranges, labels and lengths are Consts, not feeds: `optimize --verify` feeds random values to
    placeholders, and these ops reject most random ranges, labels and lengths."""
    return tf.constant(value, name=name)



def _float_and_double(b, op_type, name, x):
    """The op on x (float32) and on x in float64: the only types TensorFlow's CPU registers."""
    b.raw(op_type, name, x=x)
    b.raw(op_type, f"{name}_f64", x=tf.cast(x, tf.float64))
    b.skip(op_type, "float16 and bfloat16 have no CPU kernel in TensorFlow")


@case("op_nn_inverse_normal", "nn",
      "Erfinv and Ndtri in float32/float64: 0, tiny arguments (where TensorFlow "
      "rounds x/2 + 1/2 first), the tails, +-1 and 0/1 (infinities), out of range and NaN; "
      "tf.gradients of both.", rtol=1e-4, atol=1e-5)
def op_nn_inverse_normal(b):
    x = b.placeholder("x", np.array([0.0, 1e-7, -1e-6, 1e-3, 0.3, -0.5, 0.9, 0.999, -0.9999, 1.0, -1.0,
                                     1.5, -2.0, np.nan], np.float32))
    p = b.placeholder("p", np.array([0.0, 1e-30, 1e-7, 0.01, 0.02425, 0.3, 0.5, 0.5000001, 0.9, 0.97575,
                                     0.9999999, 1.0, 1.5, -0.1, np.nan], np.float32))
    _float_and_double(b, "Erfinv", "erfinv", x)
    _float_and_double(b, "Ndtri", "ndtri", p)
    b.raw("Erfinv", "erfinv_empty", x=b.placeholder("x_empty", np.zeros((0, 3), np.float32)))
    gx = b.placeholder("grad_x", b.uniform(-0.95, 0.95, 2, 3))
    gp = b.placeholder("grad_p", b.uniform(0.02, 0.98, 2, 3))
    loss = tf.reduce_sum(tf.math.erfinv(gx) * tf.math.ndtri(gp), name="loss")
    b.differentiate(loss, [gx, gp])


@case("op_nn_space_depth", "nn",
      "SpaceToDepth/DepthToSpace (block 2 and 3, NHWC, int32/uint8/float64/bool too, an empty "
      "batch), SpaceToBatchND/BatchToSpaceND (1-D and 2-D blocks with paddings and crops, trailing "
      "dims, int64 index types, float16 and int8 data); tf.gradients through all four.",
      rtol=1e-6, atol=1e-6)
def op_nn_space_depth(b):
    image = b.placeholder("image", b.normal(2, 4, 6, 3))
    for block in (2, 3):
        source = image if block == 2 else b.placeholder("image_b3", b.normal(1, 6, 3, 2))
        b.raw("SpaceToDepth", f"space_to_depth_b{block}", input=source, block_size=block)
        deep = b.placeholder(f"deep_b{block}", b.normal(1, 2, 3, 4 * block * block))
        b.raw("DepthToSpace", f"depth_to_space_b{block}", input=deep, block_size=block)
    for suffix, dtype in (("i32", tf.int32), ("u8", tf.uint8), ("f64", tf.float64), ("bool", tf.bool)):
        b.raw("SpaceToDepth", f"space_to_depth_{suffix}", input=tf.cast(tf.abs(image) * 10, dtype), block_size=2)
    b.raw("DepthToSpace", "depth_to_space_i32", input=tf.cast(b.placeholder("deep_i", b.normal(1, 2, 2, 8)),
                                                              tf.int32), block_size=2)
    b.raw("SpaceToDepth", "space_to_depth_empty", input=b.placeholder("empty", np.zeros((0, 4, 4, 2), np.float32)),
          block_size=2)

    volume = b.placeholder("volume", b.normal(2, 5, 4, 3))
    b.raw("SpaceToBatchND", "space_to_batch_2d", input=volume, block_shape=[2, 2], paddings=[[1, 0], [0, 2]])
    b.raw("SpaceToBatchND", "space_to_batch_1d", input=volume, block_shape=[3], paddings=[[0, 1]])
    b.raw("SpaceToBatchND", "space_to_batch_i64", input=tf.cast(volume, tf.float16),
          block_shape=tf.constant([2], tf.int64), paddings=tf.constant([[1, 2]], tf.int64))
    b.raw("SpaceToBatchND", "space_to_batch_int8", input=tf.cast(volume * 10, tf.int8), block_shape=[1, 2],
          paddings=[[0, 0], [0, 0]])
    batched = b.placeholder("batched", b.normal(8, 2, 3, 2))
    b.raw("BatchToSpaceND", "batch_to_space_2d", input=batched, block_shape=[2, 2], crops=[[1, 0], [0, 2]])
    b.raw("BatchToSpaceND", "batch_to_space_1d", input=batched, block_shape=[4], crops=[[0, 3]])
    b.raw("BatchToSpaceND", "batch_to_space_i64", input=tf.cast(batched, tf.int32),
          block_shape=tf.constant([2, 1], tf.int64), crops=tf.constant([[0, 0], [1, 1]], tf.int64))

    gx = b.placeholder("grad_x", b.normal(1, 4, 4, 2))
    weights = tf.constant(b.normal(4, 2, 2, 2))
    moved = tf.raw_ops.SpaceToBatchND(input=tf.raw_ops.DepthToSpace(
        input=tf.raw_ops.SpaceToDepth(input=gx, block_size=2), block_size=2),
        block_shape=[2, 2], paddings=[[0, 0], [0, 0]])
    back = tf.raw_ops.BatchToSpaceND(input=moved * weights, block_shape=[2, 1], crops=[[1, 1], [0, 0]])
    b.differentiate(tf.reduce_sum(back * back, name="loss"), [gx])


QUANT_INPUT = np.concatenate([np.linspace(-7.0, 7.0, 57), [0.0, -0.0, 1e-3, -1e-3, 100.0, -100.0, np.nan]]).astype(
    np.float32)
# (min, max, num_bits, narrow_range); ranges not containing 0 and not multiples of the step
# exercise the nudging.
QUANT_RANGES = [(-6.0, 6.0, 8, False), (-1.0, 3.5, 8, True), (0.3, 2.0, 4, False), (-2.5, -0.4, 5, True),
                (-1.0, 1.0, 16, False), (-0.1, 12.7, 2, False)]


@case("op_nn_fake_quant", "nn",
      "FakeQuantWithMinMaxArgs/Vars/VarsPerChannel and their gradient kernels: ranges around 0, "
      "entirely positive or negative (nudged), num_bits 2/4/5/8/16, narrow_range, NaN and values "
      "beyond the range, min == max == 0 (zeros), per-channel inputs of rank 1, 2 and 4; "
      "tf.gradients through Vars and PerChannel (input, min and max).", rtol=1e-6, atol=1e-6)
def op_nn_fake_quant(b):
    x = b.placeholder("x", QUANT_INPUT)
    dy = b.placeholder("dy", b.normal(QUANT_INPUT.size))
    for i, (low, high, bits, narrow) in enumerate(QUANT_RANGES):
        attrs = dict(min=low, max=high, num_bits=bits, narrow_range=narrow)
        b.raw("FakeQuantWithMinMaxArgs", f"fake_quant_args_{i}", inputs=x, **attrs)
        b.raw("FakeQuantWithMinMaxArgsGradient", f"fake_quant_args_gradient_{i}", gradients=dy, inputs=x,
              **attrs)
        bounds = dict(min=b.placeholder(f"vars_min_{i}", np.float32(low)),
                      max=b.placeholder(f"vars_max_{i}", np.float32(high)))
        b.raw("FakeQuantWithMinMaxVars", f"fake_quant_vars_{i}", inputs=x, num_bits=bits, narrow_range=narrow,
              **bounds)
        b.raw("FakeQuantWithMinMaxVarsGradient", f"fake_quant_vars_gradient_{i}", gradients=dy, inputs=x,
              num_bits=bits, narrow_range=narrow, **bounds)
    zeros = dict(min=b.placeholder("zero_min", np.float32(0)), max=b.placeholder("zero_max", np.float32(0)))
    b.raw("FakeQuantWithMinMaxVars", "fake_quant_vars_zero_range", inputs=x, **zeros)
    b.raw("FakeQuantWithMinMaxVarsGradient", "fake_quant_vars_gradient_zero_range", gradients=dy, inputs=x, **zeros)

    lows = b.placeholder("channel_min", np.array([-6.0, -1.0, 0.3, -2.5, 0.0], np.float32))
    highs = b.placeholder("channel_max", np.array([6.0, 3.5, 2.0, -0.4, 0.0], np.float32))
    for rank, shape in ((1, (5,)), (2, (7, 5)), (4, (2, 3, 2, 5))):
        data = b.placeholder(f"channel_x_rank{rank}", b.normal(*shape, scale=3.0))
        grads = b.placeholder(f"channel_dy_rank{rank}", b.normal(*shape))
        for narrow in (False, True):
            suffix = f"rank{rank}" + ("_narrow" if narrow else "")
            b.raw("FakeQuantWithMinMaxVarsPerChannel", f"fake_quant_per_channel_{suffix}", inputs=data, min=lows,
                  max=highs, num_bits=6, narrow_range=narrow)
            b.raw("FakeQuantWithMinMaxVarsPerChannelGradient", f"fake_quant_per_channel_gradient_{suffix}",
                  gradients=grads, inputs=data, min=lows, max=highs, num_bits=6, narrow_range=narrow)
    # Steps exactly half-way: rank 1 rounds them with std::round, higher ranks with floor(+0.5).
    half = b.placeholder("channel_half", np.array([0.5, 1.5, 2.5, -0.5], np.float32))
    unit = dict(min=b.placeholder("unit_min", np.array([-4.0, -4.0, -4.0, -4.0], np.float32)),
                max=b.placeholder("unit_max", np.array([3.5, 3.5, 3.5, 3.5], np.float32)))
    b.raw("FakeQuantWithMinMaxVarsPerChannel", "fake_quant_per_channel_half_steps", inputs=half, num_bits=4, **unit)

    gx = b.placeholder("grad_x", b.normal(3, 5, scale=3.0))
    gmin = b.placeholder("grad_min", np.float32(-2.0))
    gmax = b.placeholder("grad_max", np.float32(1.5))
    per_channel = tf.quantization.fake_quant_with_min_max_vars_per_channel(gx, lows, highs, num_bits=5)
    scalar_range = tf.quantization.fake_quant_with_min_max_vars(gx, gmin, gmax, narrow_range=True)
    args = tf.quantization.fake_quant_with_min_max_args(gx, -3.0, 2.0)
    loss = tf.reduce_sum(per_channel * scalar_range + args * gx, name="loss")
    b.differentiate(loss, [gx, gmin, gmax, lows, highs])


def _ndhwc(*spatial):
    return [1, *spatial, 1]


@case("op_nn_volume", "nn",
      "MaxPool3D/AvgPool3D (SAME and VALID, strides, NDHWC), windows of NaN and -inf, "
      "MaxPool3DGrad with tied maxima (every element within 1e-5 of the maximum gets the gradient), "
      "AvgPool3DGrad, Conv3D with its Conv3DBackpropInputV2/FilterV2 (float64 too, int64 "
      "sizes), empty batch; tf.gradients through Conv3D, MaxPool3D and AvgPool3D.",
      rtol=1e-4, atol=1e-5)
def op_nn_volume(b):
    volume = b.placeholder("volume", b.normal(2, 3, 5, 4, 2))
    windows = [("same", [2, 2, 2], [1, 2, 2], "SAME"), ("valid", [2, 3, 2], [1, 1, 2], "VALID"),
               ("same_stride3", [3, 3, 3], [3, 3, 3], "SAME")]
    for name, ksize, strides, padding in windows:
        attrs = dict(ksize=_ndhwc(*ksize), strides=_ndhwc(*strides), padding=padding)
        for op_type in ("MaxPool3D", "AvgPool3D"):
            out = b.raw(op_type, f"{op_type.lower()}_{name}", input=volume, **attrs)
            grads = b.placeholder(f"{op_type.lower()}_{name}_dy", b.normal(*out.shape.as_list()))
            if op_type == "MaxPool3D":
                b.raw("MaxPool3DGrad", f"maxpool3d_grad_{name}", orig_input=volume, orig_output=out, grad=grads,
                      **attrs)
            else:
                b.raw("AvgPool3DGrad", f"avgpool3d_grad_{name}", orig_input_shape=tf.shape(volume), grad=grads,
                      **attrs)
    b.skip("MaxPool3D", "float16 and float64 have no CPU kernel in TensorFlow; bfloat16 (which has) is left out "
           "because the GPU test double cannot hold it")
    b.skip("AvgPool3D", "float16 and float64 have no CPU kernel in TensorFlow")

    # Ties and special values: the maximum repeats (and one element lies 1e-6 below it), windows
    # hold NaN, -inf or only -inf.
    special = np.zeros((1, 2, 2, 4, 1), np.float32)
    special[0, :, :, 0, 0] = [[1.0, 1.0], [1.0 - 1e-6, 0.5]]
    special[0, :, :, 1, 0] = [[np.nan, 2.0], [3.0, 1.0]]
    special[0, :, :, 2, 0] = -np.inf
    special[0, :, :, 3, 0] = [[-np.inf, -2.0], [np.nan, np.nan]]
    ties = b.placeholder("ties", special)
    attrs = dict(ksize=_ndhwc(2, 2, 1), strides=_ndhwc(2, 2, 1), padding="VALID")
    pooled = b.raw("MaxPool3D", "maxpool3d_special", input=ties, **attrs)
    b.raw("AvgPool3D", "avgpool3d_special", input=ties, **attrs)
    b.raw("MaxPool3DGrad", "maxpool3d_grad_ties", orig_input=ties, orig_output=pooled,
          grad=b.placeholder("ties_dy", np.array([1.0, 2.0, 3.0, 4.0], np.float32).reshape(1, 1, 1, 4, 1)), **attrs)
    b.raw("MaxPool3D", "maxpool3d_empty", input=b.placeholder("empty", np.zeros((0, 2, 2, 2, 3), np.float32)),
          ksize=_ndhwc(2, 2, 2), strides=_ndhwc(1, 1, 1), padding="VALID")

    image = b.placeholder("conv_input", b.normal(2, 4, 5, 4, 3))
    kernel = b.placeholder("conv_filter", b.normal(2, 3, 2, 3, 4, scale=0.3))
    convs = [("same", [1, 2, 1], "SAME", [1, 1, 1]), ("valid", [2, 1, 2], "VALID", [1, 1, 1])]
    b.skip("Conv3D", "TensorFlow's CPU Conv3D and its backprops support no dilation")
    for name, strides, padding, dilations in convs:
        attrs = dict(strides=_ndhwc(*strides), padding=padding, dilations=_ndhwc(*dilations))
        out = b.raw("Conv3D", f"conv3d_{name}", input=image, filter=kernel, **attrs)
        dy = b.placeholder(f"conv3d_{name}_dy", b.normal(*out.shape.as_list()))
        b.raw("Conv3DBackpropInputV2", f"conv3d_backprop_input_{name}", input_sizes=tf.shape(image), filter=kernel,
              out_backprop=dy, **attrs)
        b.raw("Conv3DBackpropFilterV2", f"conv3d_backprop_filter_{name}", input=image,
              filter_sizes=tf.shape(kernel), out_backprop=dy, **attrs)
        if name == "same":
            b.skip("Conv3DBackpropInputV2", "float16: TensorFlow's CPU kernel accumulates in float16 (ours in "
                   "float32), results differ by float16 rounding")
            for suffix, dtype in (("f64", tf.float64),):
                result = tf.raw_ops.Conv3DBackpropInputV2(
                    input_sizes=tf.constant([2, 4, 5, 4, 3], tf.int64), filter=tf.cast(kernel, dtype),
                    out_backprop=tf.cast(dy, dtype), name=f"conv3d_backprop_input_{suffix}", **attrs)
                b.fetch(tf.cast(result, tf.float32), f"conv3d_backprop_input_{suffix}_as_f32")

    gx = b.placeholder("grad_x", b.normal(1, 3, 4, 4, 2))
    gw = b.placeholder("grad_w", b.normal(2, 2, 2, 2, 3, scale=0.5))
    conv = tf.nn.conv3d(gx, gw, strides=_ndhwc(1, 2, 1), padding="SAME")
    pooled = tf.nn.max_pool3d(conv, ksize=_ndhwc(1, 2, 2), strides=_ndhwc(1, 1, 2), padding="SAME")
    averaged = tf.nn.avg_pool3d(conv, ksize=_ndhwc(2, 1, 2), strides=_ndhwc(1, 1, 1), padding="VALID")
    loss = tf.add(tf.reduce_sum(pooled * pooled), tf.reduce_sum(averaged * 0.5), name="loss")
    b.differentiate(loss, [gx, gw])


@case("op_nn_quantize_dequantize", "nn",
      "QuantizeAndDequantizeV2/V3/V4 and V4Grad: signed and unsigned, num_bits 2/4/8, given and "
      "data ranges (the scale from whichever side is tighter), narrow_range, HALF_UP and HALF_TO_EVEN "
      "on exact halves, per-axis data ranges (axis 0 and 1), float64; tf.gradients through V2 and V4.",
      rtol=1e-6, atol=1e-6)
def op_nn_quantize_dequantize(b):
    x = b.placeholder("x", np.concatenate([np.linspace(-3.0, 3.0, 25), [0.0, 1.25, -1.25, 10.0]]).astype(np.float32))
    lo, hi = _const("lo", np.float32(-1.0)), _const("hi", np.float32(2.5))
    configs = [("signed", dict(signed_input=True, num_bits=8)), ("unsigned", dict(signed_input=False, num_bits=4)),
               ("narrow", dict(signed_input=True, num_bits=4, narrow_range=True)),
               ("two_bits", dict(signed_input=True, num_bits=2))]
    for name, attrs in configs:
        for given in (False, True):
            label = f"{name}_{'given' if given else 'data'}"
            for mode in ("HALF_TO_EVEN", "HALF_UP"):
                b.raw("QuantizeAndDequantizeV4", f"qdq_v4_{label}_{mode.lower()}", input=x, input_min=lo,
                      input_max=hi, range_given=given, round_mode=mode, **attrs)
            b.raw("QuantizeAndDequantizeV2", f"qdq_v2_{label}", input=x, input_min=lo, input_max=hi, range_given=given,
                  **attrs)
            v3_attrs = {k: v for k, v in attrs.items() if k != "num_bits"}
            b.raw("QuantizeAndDequantizeV3", f"qdq_v3_{label}", input=x, input_min=lo, input_max=hi,
                  num_bits=attrs["num_bits"], range_given=given, **v3_attrs)
    b.raw("QuantizeAndDequantizeV4", "qdq_v4_f64", input=tf.cast(x, tf.float64), input_min=tf.cast(lo, tf.float64),
          input_max=tf.cast(hi, tf.float64), range_given=True, num_bits=5)
    b.skip("QuantizeAndDequantizeV4", "float16/bfloat16 left out: TensorFlow rounds each step in half precision")
    b.skip("QuantizeAndDequantizeV4", "per-axis with range_given: TensorFlow 2.21's CPU kernel rejects every "
           "min/max shape")
    matrix = b.placeholder("matrix", b.normal(4, 3, scale=2.0))
    for axis, size in ((0, 4), (1, 3)):
        lows = _const(f"axis{axis}_min", -np.linspace(0.5, 2.0, size).astype(np.float32))
        highs = _const(f"axis{axis}_max", np.linspace(1.0, 3.0, size).astype(np.float32))
        b.raw("QuantizeAndDequantizeV4", f"qdq_v4_axis{axis}", input=matrix, input_min=lows, input_max=highs,
              num_bits=3, axis=axis)
        b.raw("QuantizeAndDequantizeV4Grad", f"qdq_v4_grad_axis{axis}", gradients=b.placeholder(
            f"axis{axis}_dy", b.normal(4, 3)), input=matrix, input_min=lows, input_max=highs, axis=axis)
    b.raw("QuantizeAndDequantizeV4Grad", "qdq_v4_grad", gradients=b.placeholder("dy", b.normal(29)), input=x,
          input_min=lo, input_max=hi)

    gx = b.placeholder("grad_x", b.normal(3, 4, scale=2.0))
    v4 = tf.quantization.quantize_and_dequantize_v2(gx, -1.5, 1.0, range_given=True, num_bits=6)
    v2 = tf.raw_ops.QuantizeAndDequantizeV2(input=gx, input_min=-1.0, input_max=1.0, num_bits=3)
    b.differentiate(tf.reduce_sum(v4 * gx + v2 * v2, name="loss"), [gx])


def _sparse_labels(b, name, sequences):
    """Consts holding a batch of label sequences as CTCLoss's (indices, values)."""
    indices = np.array([(i, j) for i, seq in enumerate(sequences) for j in range(len(seq))], np.int64).reshape(-1, 2)
    values = np.array([v for seq in sequences for v in seq], np.int32)
    return _const(f"{name}_indices", indices), _const(f"{name}_values", values)


@case("op_nn_ctc", "nn",
      "CTCLoss (loss and gradient) with repeated labels, preprocess_collapse_repeated, "
      "ctc_merge_repeated off, a sequence too short for its labels (ignore_longer_outputs_than_inputs), "
      "sequences shorter than max_time, float64; CTCGreedyDecoder with merge_repeated on/off, "
      "blank_index 0 and -1, a zero-length sequence; tf.gradients of the loss.", rtol=1e-4, atol=1e-5)
def op_nn_ctc(b):
    logits = b.placeholder("logits", b.normal(7, 4, 5, scale=2.0))
    lengths = _const("lengths", np.array([7, 5, 6, 2], np.int32))
    indices, values = _sparse_labels(b, "labels", [[0, 1, 1, 2], [3, 3], [2, 0, 2], [1, 2, 3]])
    for collapse in (False, True):
        for merge in (False, True):
            b.raw("CTCLoss", f"ctc_loss_collapse{int(collapse)}_merge{int(merge)}", inputs=logits,
                  labels_indices=indices, labels_values=values, sequence_length=lengths,
                  preprocess_collapse_repeated=collapse, ctc_merge_repeated=merge,
                  ignore_longer_outputs_than_inputs=True)
    b.raw("CTCLoss", "ctc_loss_f64", inputs=tf.cast(logits, tf.float64), labels_indices=indices,
          labels_values=values, sequence_length=lengths, ignore_longer_outputs_than_inputs=True)
    fit_indices, fit_values = _sparse_labels(b, "fit", [[0, 1, 1, 2], [3, 3], [2, 0, 2], [1]])
    b.raw("CTCLoss", "ctc_loss_fitting", inputs=logits, labels_indices=fit_indices, labels_values=fit_values,
          sequence_length=lengths)

    # Peaked logits so the greedy path has repeats and blanks.
    peaked = np.full((6, 3, 4), -1.0, np.float32)
    for t, row in enumerate([[0, 3, 1], [0, 3, 1], [3, 0, 1], [1, 0, 3], [1, 2, 2], [0, 2, 3]]):
        for batch, cls in enumerate(row):
            peaked[t, batch, cls] = 2.0 + 0.1 * t
    greedy_in = b.placeholder("greedy_logits", peaked)
    greedy_len = _const("greedy_lengths", np.array([6, 4, 0], np.int32))
    for merge in (False, True):
        for blank in (-1, 0):
            b.raw("CTCGreedyDecoder", f"ctc_greedy_merge{int(merge)}_blank{'last' if blank < 0 else blank}",
                  inputs=greedy_in, sequence_length=greedy_len, merge_repeated=merge, blank_index=blank)
    b.raw("CTCGreedyDecoder", "ctc_greedy_random", inputs=logits, sequence_length=lengths, merge_repeated=True)

    gx = b.placeholder("grad_logits", b.normal(6, 2, 4))
    g_indices, g_values = _sparse_labels(b, "grad_labels", [[0, 1, 1], [2]])
    loss = tf.raw_ops.CTCLoss(inputs=gx, labels_indices=g_indices, labels_values=g_values,
                              sequence_length=tf.constant([6, 4]))[0]
    b.differentiate(tf.reduce_sum(loss * tf.constant([1.0, 0.5]), name="loss"), [gx])


@case("op_nn_ctc_beam_search", "nn",
      "CTCBeamSearchDecoder: beam widths 1, 3 and 8, top_paths 1-3, merge_repeated on and off (TensorFlow "
      "merges repeats in the output paths), sequences of different lengths, float64; logits drawn so "
      "that no two beams tie.", rtol=1e-4, atol=1e-5)
def op_nn_ctc_beam_search(b):
    logits = b.placeholder("logits", b.normal(8, 3, 4, scale=1.5))
    lengths = _const("lengths", np.array([8, 5, 3], np.int32))
    for width, paths in ((1, 1), (3, 2), (8, 3)):
        for merge in (True, False):
            b.raw("CTCBeamSearchDecoder", f"beam_w{width}_p{paths}_merge{int(merge)}", inputs=logits,
                  sequence_length=lengths, beam_width=width, top_paths=paths, merge_repeated=merge)
    repeats = np.full((6, 1, 3), -2.0, np.float32)
    for t, cls in enumerate([0, 0, 2, 0, 1, 1]):
        repeats[t, 0, cls] = 1.0 + 0.05 * t
    b.raw("CTCBeamSearchDecoder", "beam_repeats", inputs=b.placeholder("repeat_logits", repeats),
          sequence_length=_const("repeat_lengths", np.array([6], np.int32)), beam_width=4, top_paths=2)
    b.raw("CTCBeamSearchDecoder", "beam_f64", inputs=tf.cast(logits, tf.float64), sequence_length=lengths,
          beam_width=4, top_paths=2)


@case("op_nn_dilation", "nn",
      "Dilation2D and its backprops: SAME and VALID, strides 2, rates 2, int32 and float64 too, ties between "
      "window sums (the first maximum wins); tf.gradients through Dilation2D.", rtol=1e-5, atol=1e-6)
def op_nn_dilation(b):
    image = b.placeholder("image", b.normal(2, 6, 5, 3))
    kernel = b.placeholder("filter", b.normal(3, 2, 3, scale=0.5))
    configs = [("same", [1, 1, 1, 1], [1, 1, 1, 1], "SAME"), ("valid_stride2", [1, 2, 2, 1], [1, 1, 1, 1], "VALID"),
               ("same_rate2", [1, 1, 2, 1], [1, 2, 2, 1], "SAME")]
    for name, strides, rates, padding in configs:
        attrs = dict(strides=strides, rates=rates, padding=padding)
        out = b.raw("Dilation2D", f"dilation_{name}", input=image, filter=kernel, **attrs)
        dy = b.placeholder(f"dilation_{name}_dy", b.normal(*out.shape.as_list()))
        b.raw("Dilation2DBackpropInput", f"dilation_backprop_input_{name}", input=image, filter=kernel,
              out_backprop=dy, **attrs)
        b.raw("Dilation2DBackpropFilter", f"dilation_backprop_filter_{name}", input=image, filter=kernel,
              out_backprop=dy, **attrs)
    ties = b.placeholder("ties", np.array([[1, 1, 2], [2, 0, 2], [1, 2, 1]], np.float32).reshape(1, 3, 3, 1))
    flat = b.placeholder("flat_filter", np.zeros((2, 2, 1), np.float32))
    attrs = dict(strides=[1, 1, 1, 1], rates=[1, 1, 1, 1], padding="SAME")
    b.raw("Dilation2D", "dilation_ties", input=ties, filter=flat, **attrs)
    b.raw("Dilation2DBackpropInput", "dilation_backprop_input_ties", input=ties, filter=flat,
          out_backprop=tf.ones([1, 3, 3, 1]), **attrs)
    b.raw("Dilation2DBackpropFilter", "dilation_backprop_filter_ties", input=ties, filter=flat,
          out_backprop=tf.ones([1, 3, 3, 1]), **attrs)
    for suffix, dtype in (("i32", tf.int32), ("f64", tf.float64)):
        b.raw("Dilation2D", f"dilation_{suffix}", input=tf.cast(image * 10, dtype), filter=tf.cast(kernel * 10, dtype),
              strides=[1, 1, 1, 1], rates=[1, 1, 1, 1], padding="SAME")

    gx = b.placeholder("grad_x", b.normal(1, 4, 4, 2))
    gw = b.placeholder("grad_w", b.normal(2, 2, 2, scale=0.5))
    out = tf.raw_ops.Dilation2D(input=gx, filter=gw, strides=[1, 1, 1, 1], rates=[1, 1, 1, 1], padding="SAME")
    b.differentiate(tf.reduce_sum(out * out, name="loss"), [gx, gw])


QUANTIZED = {"qint8": (tf.qint8, tf.int8), "quint8": (tf.quint8, tf.uint8), "qint16": (tf.qint16, tf.int16),
             "quint16": (tf.quint16, tf.uint16)}


@case("op_nn_quantize", "nn",
      "QuantizeV2 and Dequantize in MIN_COMBINED, MIN_FIRST and SCALED modes for qint8/quint8/qint16/quint16, "
      "ranges around 0, entirely positive, degenerate (min == max, widened by ensure_minimum_range), "
      "narrow_range and HALF_TO_EVEN (SCALED), values beyond the range, per-axis ranges; quantized values "
      "are fetched through a Bitcast to the matching integer type.", rtol=1e-6, atol=1e-6)
def op_nn_quantize(b):
    x = b.placeholder("x", np.array([-3.0, -1.0, -0.5, -0.25, 0.0, 0.3, 0.5, 1.0, 1.75, 2.5, 7.0], np.float32))
    ranges = {"around0": (-1.0, 2.5), "positive": (0.5, 2.0), "degenerate": (1.0, 1.0)}
    for range_name, (low, high) in ranges.items():
        lo = _const(f"min_{range_name}", np.float32(low))
        hi = _const(f"max_{range_name}", np.float32(high))
        for type_name, (qtype, itype) in QUANTIZED.items():
            for mode in ("MIN_COMBINED", "MIN_FIRST", "SCALED"):
                name = f"{mode.lower()}_{type_name}_{range_name}"
                q, q_min, q_max = tf.raw_ops.QuantizeV2(input=x, min_range=lo, max_range=hi, T=qtype, mode=mode,
                                                         name=f"quantize_{name}")
                b.fetch(tf.bitcast(q, itype), f"quantize_{name}_bits")
                b.fetch(q_min)
                b.fetch(q_max)
                b.raw("Dequantize", f"dequantize_{name}", input=q, min_range=q_min, max_range=q_max, mode=mode)
    lo, hi = _const("min_scaled", np.float32(-1.0)), _const("max_scaled", np.float32(2.5))
    for suffix, extra in (("narrow", dict(narrow_range=True)), ("half_even", dict(round_mode="HALF_TO_EVEN"))):
        q, q_min, q_max = tf.raw_ops.QuantizeV2(input=x * 3.0, min_range=lo, max_range=hi, T=tf.qint8, mode="SCALED",
                                                 name=f"quantize_scaled_{suffix}", **extra)
        b.fetch(tf.bitcast(q, tf.int8), f"quantize_scaled_{suffix}_bits")
        b.fetch(q_min)
        b.fetch(q_max)
        b.raw("Dequantize", f"dequantize_scaled_{suffix}", input=q, min_range=q_min, max_range=q_max, mode="SCALED",
              narrow_range=extra.get("narrow_range", False))
    matrix = b.placeholder("matrix", b.normal(3, 4, scale=2.0))
    lows = _const("axis_min", np.array([-1.0, -2.0, 0.5, -4.0], np.float32))
    highs = _const("axis_max", np.array([1.0, 0.5, 3.0, 4.0], np.float32))
    for mode in ("MIN_COMBINED", "SCALED"):
        q, q_min, q_max = tf.raw_ops.QuantizeV2(input=matrix, min_range=lows, max_range=highs, T=tf.quint8, mode=mode,
                                                 axis=1, name=f"quantize_axis_{mode.lower()}")
        b.fetch(tf.bitcast(q, tf.uint8), f"quantize_axis_{mode.lower()}_bits")
        b.fetch(q_min)
        b.fetch(q_max)
        b.raw("Dequantize", f"dequantize_axis_{mode.lower()}", input=q, min_range=q_min, max_range=q_max, mode=mode,
              axis=1)


@case("op_nn_argmax_lrn", "nn",
      "MaxPoolWithArgmax (SAME/VALID, strides, include_batch_in_index on and off, Targmax int32 and "
      "int64, float64 and int32 data, ties and NaN) and LRNGrad (depth radii 1 and 2, bias/alpha/beta) "
      "as raw ops; tf.gradients through MaxPoolWithArgmax and LRN.", rtol=1e-4, atol=1e-5)
def op_nn_argmax_lrn(b):
    image = b.placeholder("image", b.normal(2, 5, 4, 3))
    windows = [("valid", [1, 2, 2, 1], [1, 2, 2, 1], "VALID"), ("same", [1, 3, 3, 1], [1, 2, 1, 1], "SAME")]
    for name, ksize, strides, padding in windows:
        for include_batch in (False, True):
            for targmax in (tf.int64, tf.int32):
                b.raw("MaxPoolWithArgmax", f"argmax_{name}_batch{int(include_batch)}_{targmax.name}", input=image,
                      ksize=ksize, strides=strides, padding=padding, include_batch_in_index=include_batch,
                      Targmax=targmax)
    for suffix, dtype in (("f64", tf.float64), ("i32", tf.int32)):
        b.raw("MaxPoolWithArgmax", f"argmax_{suffix}", input=tf.cast(image * 4, dtype), ksize=[1, 2, 2, 1],
              strides=[1, 1, 1, 1], padding="SAME")
    ties = np.array([[1, 1, 0], [1, np.nan, 2], [3, 3, 3]], np.float32).reshape(1, 3, 3, 1)
    b.raw("MaxPoolWithArgmax", "argmax_ties", input=b.placeholder("ties", ties), ksize=[1, 2, 2, 1],
          strides=[1, 1, 1, 1], padding="VALID")

    deep = b.placeholder("lrn_input", b.normal(2, 3, 3, 6))
    for radius, bias, alpha, beta in ((1, 1.0, 0.5, 0.75), (2, 2.0, 0.1, 0.5)):
        out = tf.raw_ops.LRN(input=deep, depth_radius=radius, bias=bias, alpha=alpha, beta=beta)
        b.raw("LRNGrad", f"lrn_grad_r{radius}", input_grads=b.placeholder(f"lrn_dy_r{radius}", b.normal(2, 3, 3, 6)),
              input_image=deep, output_image=out, depth_radius=radius, bias=bias, alpha=alpha, beta=beta)

    gx = b.placeholder("grad_x", b.normal(1, 4, 4, 5))
    pooled, _ = tf.nn.max_pool_with_argmax(gx, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")
    normalized = tf.nn.local_response_normalization(gx, depth_radius=2, bias=1.5, alpha=0.3, beta=0.6)
    b.differentiate(tf.add(tf.reduce_sum(pooled * pooled), tf.reduce_sum(normalized * gx), name="loss"), [gx])
