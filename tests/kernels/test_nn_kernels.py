"""nn kernels against TensorFlow: every fetch of the nn single-op fixtures, then edge cases the
fixtures miss (values below were produced by TensorFlow 2.21's CPU kernels)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.kernels.harness import fixture_value, run_node
from graphtool import dtypes, graph_io
from graphtool.exec.kernels import CPU, KernelError, lookup
from graphtool.ir import Graph, from_graphdef
from graphtool.ops.registry import all_ops

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tf"
NN_CASES = sorted(path.name for path in FIXTURES.glob("op_nn_*") if (path / "graph.pb").exists())
RTOL, ATOL = 1e-4, 1e-5


def run_op(op, *inputs, **attrs):
    """Run `op`'s CPU kernel on numpy inputs. Type attrs (T, U, Tlabels, ...) not given are
    taken from the inputs they type."""
    arrays = [np.asarray(value) for value in inputs]
    spec = all_ops()[op]
    for arg, array in zip(spec.inputs, arrays):
        if arg.type_attr and arg.number_attr is None:
            attrs.setdefault(arg.type_attr, dtypes.as_dtype(array.dtype))
    graph = Graph()
    refs = [graph.add_node("Const", f"input{i}", attrs={"value": a, "dtype": dtypes.as_dtype(a.dtype)})
            .output(0) for i, a in enumerate(arrays)]
    node = graph.add_node(op, op.lower(), inputs=refs, attrs=attrs)
    outputs = run_node(node, arrays)
    return outputs if len(outputs) > 1 else outputs[0]


def _fixture_fetches():
    for case in NN_CASES:
        for fetch in json.loads((FIXTURES / case / "case.json").read_text())["fetches"]:
            yield pytest.param(case, fetch, id=f"{case}/{fetch}")


_GRAPHS = {}


def _load(case):
    if case not in _GRAPHS:
        graph = from_graphdef(graph_io.load_graphdef(str(FIXTURES / case / "graph.pb")), case)
        _GRAPHS[case] = (graph, dict(np.load(FIXTURES / case / "feeds.npz")),
                         dict(np.load(FIXTURES / case / "expected.npz")))
    return _GRAPHS[case]


def assert_matches(actual, expected):
    assert isinstance(actual, np.ndarray), type(actual)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, \
        f"{actual.dtype}{actual.shape} vs {expected.dtype}{expected.shape}"
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL, equal_nan=True)
    else:
        np.testing.assert_array_equal(actual, expected)


def test_nn_fixtures_exist():
    assert len(NN_CASES) >= 6


@pytest.mark.parametrize("case, fetch", list(_fixture_fetches()))
def test_fixture_fetch_matches_tensorflow(case, fetch):
    graph, feeds, expected = _load(case)
    assert_matches(fixture_value(graph, feeds, fetch), expected[fetch])


def test_every_nn_op_has_a_cpu_kernel():
    nn_ops = sorted(name for name, spec in all_ops().items() if spec.family == "nn")
    assert len(nn_ops) >= 50
    assert [op for op in nn_ops if lookup(op, CPU) is None] == []


# --- direct edge cases (expected values from TensorFlow 2.21, oneDNN off) ----------------------

F32 = np.float32
X_KINKS = np.array([-2, -1, 0, 1e-3, 5.5, 6, 7], F32)
GRADS = np.arange(1, 8, dtype=F32)


@pytest.mark.parametrize("op, inputs, attrs, expected", [
    ("Elu", [X_KINKS], {}, [-0.86466473, -0.63212055, 0, 1e-3, 5.5, 6, 7]),
    ("Selu", [X_KINKS], {}, [-1.5201665, -1.1113307, 0, 0.001050701, 5.7788558, 6.3042059, 7.354907]),
    ("Softplus", [np.array([-20, -13.9, 0, 13.9, 20], F32)], {},
     [2.0611537e-09, 9.189813e-07, 0.6931472, 13.9, 20]),
    ("Softsign", [X_KINKS], {}, [-0.6666667, -0.5, 0, 0.000999001, 0.84615386, 0.85714287, 0.875]),
    ("LeakyRelu", [X_KINKS], {"alpha": 2.0}, [-4, -2, 0, 1e-3, 5.5, 6, 7]),     # a select, not a max
    ("Relu6Grad", [GRADS, X_KINKS], {}, [0, 0, 0, 4, 5, 0, 0]),                 # nothing at 0 and 6
    ("ReluGrad", [GRADS, X_KINKS], {}, [0, 0, 0, 4, 5, 6, 7]),
    ("LeakyReluGrad", [GRADS, X_KINKS], {"alpha": 0.25}, [0.25, 0.5, 0.75, 4, 5, 6, 7]),  # alpha at 0
    ("SoftplusGrad", [GRADS, X_KINKS], {},
     [0.11920292, 0.53788286, 1.5, 2.0009999, 4.9796495, 5.9851646, 6.9936228]),
    ("SoftsignGrad", [GRADS, X_KINKS], {}, [0.11111111, 0.5, 3, 3.9920118, 0.1183432, 0.12244898, 0.109375]),
    ("EluGrad", [np.ones(3, F32), np.array([-0.5, 0, 2], F32)], {}, [0.5, 1, 1]),
    ("SeluGrad", [np.ones(3, F32), np.array([-0.5, 0, 2], F32)], {}, [1.2580993, 1.050701, 1.050701]),
    ("L2Loss", [np.array([1, 2, 3], F32)], {}, 7.0),
    ("Softmax", [np.array([[1e30, 0, -1e30]], F32)], {}, [[1, 0, 0]]),
    ("LogSoftmax", [np.array([[1e30, 0, -1e30]], F32)], {}, [[0, -1e30, -2e30]]),
    ("LRN", [np.arange(1, 7, dtype=F32).reshape(1, 1, 1, 6)], {"depth_radius": 1, "alpha": 0.1, "beta": 0.75},
     [[[[0.73778796, 1.0372216, 1.0809928, 1.0433897, 0.98703039, 1.3794549]]]]),
    ("BiasAdd", [np.full((2, 3), 100, np.int8), np.full(3, 100, np.int8)], {}, np.full((2, 3), -56, np.int8)),
    ("BiasAddGrad", [np.full((300, 2), 100, np.int8)], {}, np.array([48, 48], np.int8)),   # wraps like TF
])
def test_values_match_tensorflow(op, inputs, attrs, expected):
    result = run_op(op, *inputs, **attrs)
    expected = np.asarray(expected, dtype=result.dtype)
    assert result.dtype == inputs[0].dtype and result.shape == expected.shape
    np.testing.assert_allclose(result, expected, rtol=1e-6, atol=1e-7)


def test_nan_and_inf_gradients_propagate_like_tensorflow():
    features = np.array([-1, 2, 7], F32)
    gradients = np.array([np.nan, np.inf, np.nan], F32)
    # TensorFlow multiplies by a 0/1 mask: NaN * 0 stays NaN.
    assert np.isnan(run_op("ReluGrad", gradients, features)).tolist() == [True, False, True]
    assert np.isnan(run_op("Relu6Grad", gradients, features)).tolist() == [True, False, True]
    assert np.isnan(run_op("Relu", np.array([np.nan], F32)))[0]


def test_in_top_k():
    predictions = np.array([[1, 2, 3], [1, np.nan, 3], [1, 1, 1], [1, 2, 3]], F32)
    targets = np.array([1, 2, 1, 7], np.int32)
    # Ties count in the target's favour; any non-finite prediction or a bad target gives False.
    def in_top(k):
        return run_op("InTopKV2", predictions, targets, np.array(k, np.int32)).tolist()
    assert in_top(1) == [False, False, True, False]
    assert in_top(2) == [True, False, True, False]
    assert in_top(0) == [False] * 4


def test_bias_add_nchw_and_errors():
    value = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(F32)
    bias = np.arange(3, dtype=F32)
    nchw = run_op("BiasAdd", value, bias, data_format="NCHW")
    np.testing.assert_array_equal(nchw, value + bias[:, None, None])
    np.testing.assert_allclose(run_op("BiasAddGrad", value, data_format="NCHW"), value.sum(axis=(0, 2, 3)),
                               rtol=1e-6)
    with pytest.raises(KernelError, match=r"as many biases as the last dimension of the input tensor: "
                                          r"\[3\] vs. \[2,4\]"):
        run_op("BiasAdd", np.ones((2, 4), F32), bias)
    with pytest.raises(KernelError, match=r"Input tensor must be at least 2D: \[3\]"):
        run_op("BiasAdd", bias, bias)


# --- softmax losses ---------------------------------------------------------------------------

def test_softmax_cross_entropy_broadcasts_labels():
    logits = np.array([[1, 2, 3], [0, 0, 0]], F32)
    loss, backprop = run_op("SoftmaxCrossEntropyWithLogits", logits, np.array([[0.2, 0.3, 0.5]], F32))
    np.testing.assert_allclose(loss, [1.1076059, 1.0986123], rtol=1e-6)
    np.testing.assert_allclose(backprop, [[-0.10996943, -0.05527154, 0.16524094],
                                          [0.13333334, 0.03333333, -0.16666666]], rtol=1e-5)
    with pytest.raises(KernelError, match=r"must be broadcastable: logits_size=\[2,3\] labels_size=\[2,4\]"):
        run_op("SoftmaxCrossEntropyWithLogits", logits, np.ones((2, 4), F32))
    with pytest.raises(KernelError, match="or broadcasted to be 2-dimensional"):
        run_op("SoftmaxCrossEntropyWithLogits", np.ones((2, 3, 4), F32), np.ones((2, 3, 4), F32))


def test_sparse_softmax_cross_entropy_rejects_labels_out_of_range():
    logits = np.zeros((4, 5), F32)
    with pytest.raises(KernelError, match=r"^Received a label value of -1 which is outside the valid range "
                                          r"of \[0, 5\)\.  Label values: 0 5 2 -1$"):
        run_op("SparseSoftmaxCrossEntropyWithLogits", logits, np.array([0, 5, 2, -1], np.int32))
    with pytest.raises(KernelError, match="label value of 5 "):
        run_op("SparseSoftmaxCrossEntropyWithLogits", logits, np.array([0, 5, 2, 1], np.int64))
    loss, backprop = run_op("SparseSoftmaxCrossEntropyWithLogits", np.zeros((0, 3), F32),
                            np.zeros(0, np.int32))
    assert loss.shape == (0,) and backprop.shape == (0, 3)


# --- convolutions -----------------------------------------------------------------------------

def _conv_attrs(data_format, padding, stride, dilation, explicit=()):
    spatial = lambda v: [1, 1, v, v] if data_format == "NCHW" else [1, v, v, 1]  # noqa: E731
    pads = []
    if padding == "EXPLICIT":
        pads = [0, 0, 0, 0, *explicit] if data_format == "NCHW" else [0, 0, *explicit, 0, 0]
    return dict(strides=spatial(stride), padding=padding, explicit_paddings=pads, data_format=data_format,
                dilations=spatial(dilation))


CONV_CASES = [("NHWC", "SAME", 1, 1, 1), ("NCHW", "VALID", 2, 1, 1), ("NHWC", "EXPLICIT", 2, 1, 2),
              ("NCHW", "SAME", 1, 2, 2), ("NHWC", "VALID", 1, 2, 4), ("NCHW", "EXPLICIT", 3, 1, 1)]


@pytest.mark.parametrize("data_format, padding, stride, dilation, groups", CONV_CASES)
def test_conv2d_backprops_are_the_adjoints_of_conv2d(data_format, padding, stride, dilation, groups):
    """<conv(x, f), dy> = <x, backprop_input(dy)> = <f, backprop_filter(x, dy)>: this covers the
    grouped and dilated backprops TensorFlow's CPU kernels refuse."""
    rng = np.random.default_rng(groups)
    x = rng.standard_normal((2, 4, 9, 8) if data_format == "NCHW" else (2, 9, 8, 4)).astype(np.float64)
    f = rng.standard_normal((3, 2, 4 // groups, 8))
    attrs = _conv_attrs(data_format, padding, stride, dilation, explicit=(1, 2, 0, 3))
    y = run_op("Conv2D", x, f, **attrs)
    dy = rng.standard_normal(y.shape)
    dx = run_op("Conv2DBackpropInput", np.array(x.shape, np.int32), f, dy, **attrs)
    df = run_op("Conv2DBackpropFilter", x, np.array(f.shape, np.int32), dy, **attrs)
    assert dx.shape == x.shape and df.shape == f.shape
    np.testing.assert_allclose(np.vdot(x, dx), np.vdot(y, dy), rtol=1e-10)
    np.testing.assert_allclose(np.vdot(f, df), np.vdot(y, dy), rtol=1e-10)


def _naive_conv(x, f, stride, pads):
    """Direct definition (NHWC / N D H W C, loops over output positions): the test's reference."""
    x = np.pad(x, [(0, 0), *pads, (0, 0)])
    taps = f.shape[:-2]
    out_sizes = [(size - k) // s + 1 for size, k, s in zip(x.shape[1:-1], taps, stride)]
    y = np.zeros((x.shape[0], *out_sizes, f.shape[-1]))
    for position in np.ndindex(*out_sizes):
        window = tuple(slice(p * s, p * s + k) for p, s, k in zip(position, stride, taps))
        y[(slice(None), *position)] = np.tensordot(x[(slice(None), *window)], f, axes=len(taps) + 1)
    return y


def test_conv3d_matches_the_definition_in_both_layouts():
    rng = np.random.default_rng(1)
    x, f = rng.standard_normal((2, 5, 6, 7, 3)), rng.standard_normal((2, 3, 2, 3, 4))
    expected = _naive_conv(x, f, (1, 2, 1), [(0, 1)] * 3)      # SAME puts the odd pad after
    attrs = dict(strides=[1, 1, 2, 1, 1], padding="SAME", dilations=[1] * 5)
    np.testing.assert_allclose(run_op("Conv3D", x, f, data_format="NDHWC", **attrs), expected, rtol=1e-10)
    channels_first = run_op("Conv3D", np.moveaxis(x, -1, 1), f, data_format="NCDHW",
                            **{**attrs, "strides": [1, 1, 1, 2, 1]})
    np.testing.assert_allclose(np.moveaxis(channels_first, 1, -1), expected, rtol=1e-10)


def test_conv2d_blocks_large_inputs_by_rows(monkeypatch):
    """Results do not depend on how the im2col is split (here into single output rows)."""
    from graphtool.exec.kernels import nn_window
    rng = np.random.default_rng(2)
    x, f = rng.standard_normal((3, 7, 6, 5)).astype(F32), rng.standard_normal((3, 3, 5, 4)).astype(F32)
    attrs = _conv_attrs("NHWC", "SAME", 1, 1)
    whole = run_op("Conv2D", x, f, **attrs)
    monkeypatch.setattr(nn_window, "CHUNK_BYTES", 1)
    np.testing.assert_allclose(run_op("Conv2D", x, f, **attrs), whole, rtol=1e-6)
    np.testing.assert_allclose(whole, _naive_conv(x, f, (1, 1), [(1, 1), (1, 1)]), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape, taps, out_channels, stride, dilation, padding, explicit", [
    ((3, 7, 6, 5), (3, 3), 4, 1, 1, "SAME", ()),              # per-tap products, whole images per block
    ((2, 9, 11, 3), (5, 2), 6, 1, 1, "SAME", ()),             # even taps: the odd pad after
    ((2, 10, 9, 4), (3, 3), 5, 1, 2, "VALID", ()),            # dilated, no padding: the image as it is
    ((1, 8, 7, 2), (2, 3), 3, 1, 1, "EXPLICIT", (2, 0, 1, 3)),  # uneven explicit pads
    ((2, 6, 5, 70), (3, 3), 3, 1, 1, "SAME", ()),             # many channels: im2col
    ((2, 7, 9, 6), (1, 1), 5, 1, 1, "SAME", ()),              # pointwise: a plain product
    ((2, 7, 9, 6), (1, 1), 5, 2, 1, "VALID", ()),             # pointwise, strided
])
@pytest.mark.parametrize("small_blocks", [False, True])
def test_conv2d_engines_match_the_definition(monkeypatch, shape, taps, out_channels, stride, dilation, padding,
                                             explicit, small_blocks):
    """Every forward engine (per-tap products on the flattened image, im2col, 1x1 products),
    with blocks of whole images or of single rows, computes the convolution's definition."""
    from graphtool.exec.kernels import nn_conv_shifted, nn_window
    if small_blocks:   # one output row (the per-tap engine) or a few pixels (1x1) per block
        monkeypatch.setattr(nn_conv_shifted, "BLOCK_BYTES", 1)
        monkeypatch.setattr(nn_conv_shifted, "POINTWISE_MIN_ROWS", 4)
        monkeypatch.setattr(nn_conv_shifted, "POINTWISE_BLOCK_BYTES", 1)
        monkeypatch.setattr(nn_window, "CHUNK_BYTES", 1)
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape).astype(F32)
    f = rng.standard_normal((*taps, shape[-1], out_channels)).astype(F32)
    attrs = _conv_attrs("NHWC", padding, stride, dilation, explicit)
    dilated = f if dilation == 1 else np.zeros(((taps[0] - 1) * dilation + 1, (taps[1] - 1) * dilation + 1,
                                                *f.shape[2:]), F32)
    dilated[::dilation, ::dilation] = f
    if padding == "SAME":
        pads = [((k - 1) * dilation // 2, (k - 1) * dilation - (k - 1) * dilation // 2) for k in taps]
    else:
        pads = [tuple(explicit[0:2]), tuple(explicit[2:4])] if padding == "EXPLICIT" else [(0, 0), (0, 0)]
    expected = _naive_conv(x.astype(np.float64), dilated.astype(np.float64), (stride, stride), pads)
    np.testing.assert_allclose(run_op("Conv2D", x, f, **attrs), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape, taps, dilation, padding, explicit", [
    ((2, 9, 8, 5), (3, 3), 1, "SAME", ()),
    ((1, 12, 10, 3), (3, 2), 2, "VALID", ()),
    ((2, 7, 6, 4), (2, 3), 1, "EXPLICIT", (1, 0, 2, 1)),
])
@pytest.mark.parametrize("block_bytes", [1, 1 << 20])
def test_depthwise_row_engine_is_bit_identical_to_the_window_einsum(monkeypatch, shape, taps, dilation, padding,
                                                                    explicit, block_bytes):
    """Stride-1 depthwise convolutions of few channels run tap by tap on rows; they sum in the
    einsum's order (TensorFlow's), so the two agree exactly, and both match the definition."""
    from graphtool.exec.kernels import nn_conv_shifted
    rng = np.random.default_rng(6)
    x = rng.standard_normal(shape).astype(F32)
    f = rng.standard_normal((*taps, shape[-1], 1)).astype(F32)
    attrs = _conv_attrs("NHWC", padding, 1, dilation, explicit)
    monkeypatch.setattr(nn_conv_shifted, "DEPTHWISE_BLOCK_BYTES", block_bytes)
    rows = run_op("DepthwiseConv2dNative", x, f, **attrs)
    monkeypatch.setattr(nn_conv_shifted, "DEPTHWISE_ROWS_MAX_CHANNELS", 0)
    np.testing.assert_array_equal(rows, run_op("DepthwiseConv2dNative", x, f, **attrs))
    channels = [run_op("Conv2D", x[..., c:c + 1], f[:, :, c:c + 1], **attrs) for c in range(shape[-1])]
    np.testing.assert_allclose(rows, np.concatenate(channels, axis=-1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op, channels", [("Conv2DBackpropInput", 4), ("DepthwiseConv2dNativeBackpropInput", 1)])
def test_backprop_input_by_blocks_of_images_equals_the_whole_batch(monkeypatch, op, channels):
    """Each image's input gradient is its own sum: blocks of one image give the same bits."""
    from graphtool.exec.kernels import nn_window
    rng = np.random.default_rng(7)
    f = rng.standard_normal((3, 3, 3, channels)).astype(F32)
    dy = rng.standard_normal((4, 4, 4, 3 * channels if channels == 1 else channels)).astype(F32)
    args = (np.array([4, 7, 7, 3], np.int32), f, dy)
    attrs = _conv_attrs("NHWC", "SAME", 2, 1)
    whole = run_op(op, *args, **attrs)
    monkeypatch.setattr(nn_window, "CHUNK_BYTES", 1)
    np.testing.assert_array_equal(run_op(op, *args, **attrs), whole)


def test_depthwise_backprops_are_adjoints_and_nchw_agrees():
    rng = np.random.default_rng(3)
    x, f = rng.standard_normal((2, 7, 6, 3)), rng.standard_normal((3, 3, 3, 2))
    attrs = _conv_attrs("NHWC", "SAME", 2, 1)
    y = run_op("DepthwiseConv2dNative", x, f, **attrs)
    dy = rng.standard_normal(y.shape)
    dx = run_op("DepthwiseConv2dNativeBackpropInput", np.array(x.shape, np.int32), f, dy, **attrs)
    df = run_op("DepthwiseConv2dNativeBackpropFilter", x, np.array(f.shape, np.int32), dy, **attrs)
    np.testing.assert_allclose([np.vdot(x, dx), np.vdot(f, df)], [np.vdot(y, dy)] * 2, rtol=1e-10)
    nchw = run_op("DepthwiseConv2dNative", x.transpose(0, 3, 1, 2), f, **_conv_attrs("NCHW", "SAME", 2, 1))
    np.testing.assert_allclose(nchw.transpose(0, 2, 3, 1), y, rtol=1e-12)


def test_conv_input_sizes_may_give_only_the_spatial_dims():
    rng = np.random.default_rng(4)
    f, dy = rng.standard_normal((3, 3, 3, 4)).astype(F32), rng.standard_normal((2, 4, 4, 4)).astype(F32)
    attrs = _conv_attrs("NHWC", "SAME", 2, 1)
    full = run_op("Conv2DBackpropInput", np.array([2, 7, 7, 3], np.int32), f, dy, **attrs)
    spatial_only = run_op("Conv2DBackpropInput", np.array([7, 7], np.int32), f, dy, **attrs)
    np.testing.assert_array_equal(spatial_only, full)


def test_conv_errors_use_tensorflow_wording():
    attrs = _conv_attrs("NHWC", "VALID", 1, 1)
    with pytest.raises(KernelError, match=r"Computed output size would be negative: -1 \[input_size: 1, "
                                          r"effective_filter_size: 3, stride: 1\]"):
        run_op("Conv2D", np.ones((1, 1, 1, 2), F32), np.ones((3, 3, 2, 2), F32), **attrs)
    empty = run_op("Conv2D", np.ones((1, 2, 2, 2), F32), np.ones((3, 3, 2, 2), F32), **attrs)
    assert empty.shape == (1, 0, 0, 2)
    with pytest.raises(KernelError, match="input depth must be evenly divisible by filter depth: 4 vs 3"):
        run_op("Conv2D", np.ones((1, 5, 5, 4), F32), np.ones((3, 3, 3, 2), F32), **attrs)
    with pytest.raises(KernelError, match="does not yet support strides in the batch and depth dimensions"):
        run_op("Conv2D", np.ones((2, 5, 5, 2), F32), np.ones((1, 1, 2, 2), F32),
               **{**attrs, "strides": [2, 1, 1, 1]})
    with pytest.raises(KernelError, match="Size of out_backprop doesn't match computed: actual = 4, "
                                          "computed = 3"):
        run_op("Conv2DBackpropInput", np.array([1, 5, 5, 2], np.int32), np.ones((3, 3, 2, 2), F32),
               np.ones((1, 4, 3, 2), F32), **attrs)


@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.int32])
def test_conv2d_keeps_its_dtype(dtype):
    x = np.arange(2 * 5 * 5 * 3).reshape(2, 5, 5, 3) % 7
    f = np.arange(2 * 2 * 3 * 2).reshape(2, 2, 3, 2) % 5 - 2
    result = run_op("Conv2D", x.astype(dtype), f.astype(dtype), **_conv_attrs("NHWC", "SAME", 1, 1))
    assert result.dtype == dtype
    np.testing.assert_allclose(result, _naive_conv(x, f, (1, 1), [(0, 1), (0, 1)]), rtol=1e-3)


# --- pooling ----------------------------------------------------------------------------------

def _pool(op, x, ksize, stride, padding="VALID", **attrs):
    return run_op(op, x, ksize=[1, ksize, ksize, 1], strides=[1, stride, stride, 1], padding=padding, **attrs)


TIES = np.array([[1, 5, 5], [2, 0, 5], [4, 4, 1]], F32).reshape(1, 3, 3, 1)


def test_max_pool_ignores_nan_and_starts_from_the_lowest_float():
    assert _pool("MaxPool", np.array([np.nan, 1, 2, np.nan], F32).reshape(1, 2, 2, 1), 2, 2).item() == 2
    assert _pool("MaxPool", np.full((1, 2, 2, 1), np.nan, F32), 2, 2).item() == np.finfo(F32).min
    assert _pool("MaxPool", np.full((1, 2, 2, 1), -np.inf, F32), 2, 2).item() == np.finfo(F32).min


def test_max_pool_gradient_goes_to_the_first_maximum():
    grad = np.arange(1, 10, dtype=F32).reshape(1, 3, 3, 1)
    result = run_op("MaxPoolGrad", TIES, _pool("MaxPool", TIES, 2, 1, "SAME"), grad,
                    ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding="SAME")
    np.testing.assert_array_equal(result[0, :, :, 0], [[0, 3, 3], [0, 0, 11], [11, 8, 9]])


def test_max_pool_with_argmax_scans_like_tensorflow():
    def argmax(values, **attrs):
        return _pool("MaxPoolWithArgmax", np.array(values, F32).reshape(1, 2, 2, 1), 2, 2, **attrs)
    values, index = argmax([np.nan, 1, 3, np.nan])      # a NaN wins only as the first element
    assert np.isnan(values.item()) and index.item() == 0 and index.dtype == np.int64
    values, index = argmax([1, np.nan, 3, np.nan])
    assert (values.item(), index.item()) == (3, 2)
    values, index = _pool("MaxPoolWithArgmax", np.concatenate([TIES, TIES]), 2, 1, "SAME",
                          include_batch_in_index=True, Targmax=dtypes.int32)
    assert index.dtype == np.int32
    assert values.ravel().tolist() == [5, 5, 5, 4, 5, 5, 4, 4, 1] * 2
    assert index.ravel().tolist() == [1, 1, 2, 6, 5, 5, 6, 7, 8, 10, 10, 11, 15, 14, 14, 15, 16, 17]


def test_avg_pool_divides_by_the_cells_inside_the_input():
    result = _pool("AvgPool", np.arange(9, dtype=F32).reshape(1, 3, 3, 1), 2, 2, "SAME")
    np.testing.assert_array_equal(result[0, :, :, 0], [[2, 3.5], [6.5, 8]])


@pytest.mark.parametrize("padding, ksize, stride", [("SAME", 3, 2), ("VALID", 2, 3), ("SAME", 2, 1)])
def test_pool_gradients_are_adjoints_and_nchw_agrees(padding, ksize, stride):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 7, 6, 3))
    y = _pool("AvgPool", x, ksize, stride, padding)
    dy = rng.standard_normal(y.shape)
    dx = run_op("AvgPoolGrad", np.array(x.shape, np.int32), dy, ksize=[1, ksize, ksize, 1],
                strides=[1, stride, stride, 1], padding=padding)
    np.testing.assert_allclose(np.vdot(x, dx), np.vdot(y, dy), rtol=1e-10)
    to_nchw, to_nhwc = (0, 3, 1, 2), (0, 2, 3, 1)
    nchw = dict(ksize=[1, 1, ksize, ksize], strides=[1, 1, stride, stride], padding=padding,
                data_format="NCHW")
    for op in ("MaxPool", "AvgPool"):
        expected = _pool(op, x, ksize, stride, padding)
        np.testing.assert_allclose(run_op(op, x.transpose(to_nchw), **nchw).transpose(to_nhwc), expected)
    max_grad = run_op("MaxPoolGrad", x, _pool("MaxPool", x, ksize, stride, padding), dy,
                      ksize=[1, ksize, ksize, 1], strides=[1, stride, stride, 1], padding=padding)
    max_grad_v2 = run_op("MaxPoolGradV2", x, y, dy, np.array([1, ksize, ksize, 1], np.int32),
                         np.array([1, stride, stride, 1], np.int32), padding=padding)
    np.testing.assert_array_equal(max_grad, max_grad_v2)
    np.testing.assert_allclose(max_grad.sum(), dy.sum())       # every window passes its gradient on


def test_max_pool_over_depth_and_its_errors():
    x = np.arange(2 * 3 * 3 * 4, dtype=F32).reshape(2, 3, 3, 4)
    result = run_op("MaxPool", x, ksize=[1, 1, 1, 2], strides=[1, 1, 1, 2], padding="VALID")
    np.testing.assert_array_equal(result, x.reshape(2, 3, 3, 2, 2).max(axis=-1))
    with pytest.raises(KernelError, match="exactly one of pooling across depth or pooling across"):
        run_op("MaxPool", x, ksize=[1, 2, 1, 2], strides=[1, 1, 1, 2], padding="VALID")
    with pytest.raises(KernelError, match="Pooling is not yet supported on the batch dimension."):
        run_op("MaxPool", x, ksize=[2, 1, 1, 1], strides=[1, 1, 1, 1], padding="VALID")
    with pytest.raises(KernelError, match="Non-spatial pooling is not yet supported"):
        run_op("AvgPool", x, ksize=[1, 1, 1, 2], strides=[1, 1, 1, 2], padding="VALID")


# --- normalization ----------------------------------------------------------------------------

def _batch_norm(op, x, channels, **attrs):
    ones, zeros, empty = np.ones(channels, F32), np.zeros(channels, F32), np.zeros(0, F32)
    mean, variance = attrs.pop("mean", empty), attrs.pop("variance", empty)
    return run_op(op, x, ones, zeros, mean, variance, epsilon=0.001, **attrs)


def test_fused_batch_norm_training_reports_the_corrected_variance():
    x = np.arange(12, dtype=F32).reshape(1, 2, 2, 3)
    y, mean, variance, saved_mean, saved_variance, scratch = _batch_norm("FusedBatchNormV3", x, 3)
    np.testing.assert_allclose(y[0, :, :, 0].ravel(), [-1.3415811, -0.4471937, 0.4471937, 1.3415811],
                               rtol=1e-6)
    np.testing.assert_array_equal(mean, [4.5, 5.5, 6.5])
    np.testing.assert_array_equal(variance, [15, 15, 15])            # * n / (n - 1)
    np.testing.assert_array_equal(saved_mean, mean)
    np.testing.assert_array_equal(saved_variance, [11.25, 11.25, 11.25])   # biased, for the gradient
    assert scratch.shape == () and scratch.dtype == F32
    blended = _batch_norm("FusedBatchNormV3", x, 3, mean=np.ones(3, F32), variance=np.ones(3, F32),
                          exponential_avg_factor=0.5)
    np.testing.assert_allclose(blended[1], [2.75, 3.25, 3.75])
    np.testing.assert_allclose(blended[2], [8, 8, 8])
    single = _batch_norm("FusedBatchNorm", x.reshape(4, 1, 1, 3)[:1], 3)
    np.testing.assert_array_equal(single[2], [0, 0, 0])               # n = 1: no correction
    empty = _batch_norm("FusedBatchNorm", np.zeros((0, 2, 2, 3), F32), 3)
    assert empty[0].shape == (0, 2, 2, 3) and np.isnan(empty[1]).all() and np.isnan(empty[2]).all()


@pytest.mark.parametrize("is_training", [True, False])
def test_fused_batch_norm_versions_and_layouts_agree(is_training):
    rng = np.random.default_rng(6)
    x, dy = rng.standard_normal((2, 3, 4, 5)).astype(F32), rng.standard_normal((2, 3, 4, 5)).astype(F32)
    scale, stats = rng.standard_normal(5).astype(F32), (rng.standard_normal(5).astype(F32), np.ones(5, F32))
    inputs = (x, scale, np.zeros(5, F32), *stats)
    outputs = [run_op(op, *inputs, is_training=is_training) for op in ("FusedBatchNorm", "FusedBatchNormV2")]
    outputs.append(run_op("FusedBatchNormV3", *inputs, is_training=is_training)[:5])
    nchw = run_op("FusedBatchNormV3", x.transpose(0, 3, 1, 2), *inputs[1:], is_training=is_training,
                  data_format="NCHW")
    for version in (*outputs[1:], (nchw[0].transpose(0, 2, 3, 1), *nchw[1:5])):
        for ours, reference in zip(version, outputs[0]):
            np.testing.assert_allclose(ours, reference, rtol=1e-5, atol=1e-6)
    saved = outputs[0][3:5]
    grads = [run_op("FusedBatchNormGrad", dy, x, scale, *saved, is_training=is_training),
             run_op("FusedBatchNormGradV3", dy, x, scale, *saved, np.zeros((), F32), is_training=is_training)]
    for ours, reference in zip(*grads):
        np.testing.assert_allclose(ours, reference, rtol=1e-6)
    assert grads[0][3].shape == grads[0][4].shape == (0,)


def _finite_difference(fn, x, dy, step=1e-6):
    """d<fn(x), dy>/dx by central differences (float64)."""
    grad = np.zeros_like(x)
    for index in np.ndindex(*x.shape):
        shifted = x.copy()
        shifted[index] += step
        up = np.vdot(fn(shifted), dy)
        shifted[index] -= 2 * step
        grad[index] = (up - np.vdot(fn(shifted), dy)) / (2 * step)
    return grad


def test_lrn_grad_is_the_derivative_of_lrn():
    rng = np.random.default_rng(7)
    x, dy = rng.standard_normal((1, 2, 1, 6)), rng.standard_normal((1, 2, 1, 6))
    attrs = dict(depth_radius=2, bias=1.5, alpha=0.3, beta=0.75)
    y = run_op("LRN", x, **attrs)
    grad = run_op("LRNGrad", dy, x, y, **attrs)
    numeric = _finite_difference(lambda v: run_op("LRN", v, **attrs), x, dy)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6)


def test_fused_batch_norm_grad_is_the_derivative_in_training():
    # float64 (beyond TensorFlow's float32) so central differences are accurate.
    rng = np.random.default_rng(8)
    x, dy = rng.standard_normal((2, 2, 1, 3)), rng.standard_normal((2, 2, 1, 3))
    scale = rng.standard_normal(3)
    empty = np.zeros(0)

    def forward(v):
        return run_op("FusedBatchNormV2", v, scale, np.zeros(3), empty, empty, epsilon=0.01)[0]
    saved = run_op("FusedBatchNormV2", x, scale, np.zeros(3), empty, empty, epsilon=0.01)[3:5]
    x_grad = run_op("FusedBatchNormGradV2", dy, x, scale, *saved, epsilon=0.01)[0]
    np.testing.assert_allclose(x_grad, _finite_difference(forward, x, dy), rtol=1e-5, atol=1e-8)


# --- image resizing -----------------------------------------------------------------------------

IMAGE = np.arange(9, dtype=F32).reshape(1, 3, 3, 1)


@pytest.mark.parametrize("op, size, attrs, expected", [
    ("ResizeNearestNeighbor", [5, 5], {"align_corners": True},         # rounds half away from zero
     [[0, 1, 1, 2, 2], [3, 4, 4, 5, 5], [3, 4, 4, 5, 5], [6, 7, 7, 8, 8], [6, 7, 7, 8, 8]]),
    ("ResizeNearestNeighbor", [5, 5], {"half_pixel_centers": True},
     [[0, 0, 1, 2, 2], [0, 0, 1, 2, 2], [3, 3, 4, 5, 5], [6, 6, 7, 8, 8], [6, 6, 7, 8, 8]]),
    ("ResizeNearestNeighbor", [2, 2], {}, [[0, 1], [3, 4]]),
    ("ResizeBilinear", [4, 4], {"half_pixel_centers": True},
     [[0, 0.625, 1.375, 2], [1.875, 2.5, 3.25, 3.875], [4.125, 4.75, 5.5, 6.125], [6, 6.625, 7.375, 8]]),
])
def test_resize_coordinates_match_tensorflow(op, size, attrs, expected):
    result = run_op(op, IMAGE, np.array(size, np.int32), **attrs)
    np.testing.assert_allclose(result[0, :, :, 0], expected, rtol=1e-6)


def test_resize_gradients_match_tensorflow_and_are_adjoints():
    grads = np.arange(25, dtype=F32).reshape(1, 5, 5, 1)
    nearest = run_op("ResizeNearestNeighborGrad", grads, np.array([3, 3], np.int32), align_corners=True)
    np.testing.assert_array_equal(nearest[0, :, :, 0], [[0, 3, 7], [15, 36, 44], [35, 76, 84]])
    bilinear = run_op("ResizeBilinearGrad", np.ones((1, 4, 4, 1), F32), IMAGE, half_pixel_centers=True)
    np.testing.assert_allclose(bilinear[0, :, :, 0], [[1.890625, 1.71875, 1.890625],
                                                      [1.71875, 1.5625, 1.71875],
                                                      [1.890625, 1.71875, 1.890625]])
    rng = np.random.default_rng(9)
    image = rng.standard_normal((2, 5, 6, 3)).astype(F32)
    sizes = (([7, 4], {}), ([3, 9], {"align_corners": True}), ([8, 8], {"half_pixel_centers": True}))
    for size, attrs in sizes:
        dy = rng.standard_normal((2, *size, 3)).astype(F32)
        forward = run_op("ResizeBilinear", image, np.array(size, np.int32), **attrs)
        backward = run_op("ResizeBilinearGrad", dy, image, **attrs)
        np.testing.assert_allclose(np.vdot(image, backward), np.vdot(forward, dy), rtol=1e-4)
        forward = run_op("ResizeNearestNeighbor", image, np.array(size, np.int32), **attrs)
        backward = run_op("ResizeNearestNeighborGrad", dy, np.array([5, 6], np.int32), **attrs)
        np.testing.assert_allclose(np.vdot(image, backward), np.vdot(forward, dy), rtol=1e-4)


def test_resize_dtypes_and_errors():
    image = np.arange(16, dtype=np.uint8).reshape(1, 4, 4, 1)
    assert run_op("ResizeBilinear", image, np.array([7, 5], np.int32)).dtype == F32
    assert run_op("ResizeNearestNeighbor", image, np.array([7, 5], np.int32)).dtype == np.uint8
    with pytest.raises(KernelError, match="If half_pixel_centers is True, align_corners must be False."):
        run_op("ResizeBilinear", IMAGE, np.array([4, 4], np.int32), align_corners=True,
               half_pixel_centers=True)
    with pytest.raises(KernelError, match="output dimensions must be positive"):
        run_op("ResizeNearestNeighbor", IMAGE, np.array([0, 4], np.int32))


# --- fused kernels ------------------------------------------------------------------------------

@pytest.mark.parametrize("fused_ops", [["BiasAdd"], ["BiasAdd", "Relu"], ["BiasAdd", "Relu6"],
                                       ["BiasAdd", "Elu"], ["BiasAdd", "LeakyRelu"], ["FusedBatchNorm"],
                                       ["FusedBatchNorm", "Relu"]])
def test_fused_conv2d_equals_the_unfused_ops(fused_ops):
    rng = np.random.default_rng(10)
    x, f = rng.standard_normal((2, 6, 5, 3)).astype(F32), rng.standard_normal((3, 3, 3, 4)).astype(F32)
    conv_attrs = _conv_attrs("NHWC", "SAME", 2, 1)
    expected = run_op("Conv2D", x, f, **conv_attrs)
    if fused_ops[0] == "BiasAdd":
        args = [rng.standard_normal(4).astype(F32)]
        expected = run_op("BiasAdd", expected, args[0])
    else:
        scale, offset, mean = (rng.standard_normal(4).astype(F32) for _ in range(3))
        args = [scale, offset, mean, np.abs(rng.standard_normal(4)).astype(F32)]
        expected = run_op("FusedBatchNormV3", expected, *args, is_training=False, epsilon=0.01)[0]
    if len(fused_ops) == 2:
        expected = run_op(fused_ops[1], expected, **({"alpha": 0.3} if fused_ops[1] == "LeakyRelu" else {}))
    result = run_op("_FusedConv2D", x, f, *args, num_args=len(args), TArgs=[dtypes.float32] * len(args),
                    fused_ops=fused_ops, epsilon=0.01, leakyrelu_alpha=0.3, **conv_attrs)
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-6)


def test_fused_matmul_equals_the_unfused_ops_and_rejects_unknown_fusions():
    rng = np.random.default_rng(11)
    a, b, bias = (rng.standard_normal(shape).astype(F32) for shape in ((5, 3), (4, 3), (4,)))
    result = run_op("_FusedMatMul", a, b, bias, num_args=1, transpose_b=True, fused_ops=["BiasAdd", "Relu6"])
    np.testing.assert_allclose(result, np.clip(a @ b.T + bias, 0, 6), rtol=1e-6)
    with pytest.raises(KernelError, match=r"Fusion is not implemented: \[BiasAdd,Tanh\]"):
        run_op("_FusedConv2D", np.ones((1, 3, 3, 1), F32), np.ones((1, 1, 1, 1), F32), np.ones(1, F32),
               num_args=1, TArgs=[dtypes.float32], fused_ops=["BiasAdd", "Tanh"],
               **_conv_attrs("NHWC", "SAME", 1, 1))


# --- the kernel contract ----------------------------------------------------------------------

READ_ONLY_CASES = [
    ("Conv2D", [(2, 5, 5, 3), (3, 3, 3, 2)], _conv_attrs("NHWC", "VALID", 1, 1)),
    ("DepthwiseConv2dNative", [(2, 5, 5, 3), (3, 3, 3, 2)], _conv_attrs("NHWC", "SAME", 1, 1)),
    ("MaxPool", [(2, 5, 5, 3)], dict(ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding="VALID")),
    ("AvgPool", [(2, 5, 5, 3)], dict(ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding="VALID")),
    ("Softmax", [(3, 4)], {}), ("LogSoftmax", [(3, 4)], {}), ("LRN", [(1, 2, 2, 6)], {}),
    ("SoftmaxCrossEntropyWithLogits", [(3, 4), (3, 4)], {}), ("Relu6", [(5,)], {}), ("Selu", [(5,)], {}),
    ("FusedBatchNorm", [(2, 3, 3, 4), (4,), (4,), (0,), (0,)], {}), ("LRNGrad", [(1, 2, 2, 6)] * 3, {}),
    ("ResizeBilinearGrad", [(1, 4, 4, 2), (1, 3, 3, 2)], {}),
]


@pytest.mark.parametrize("op, shapes, attrs", READ_ONLY_CASES, ids=[case[0] for case in READ_ONLY_CASES])
def test_kernels_never_write_into_their_inputs(op, shapes, attrs):
    rng = np.random.default_rng(12)
    inputs = []
    for shape in shapes:
        array = np.abs(rng.standard_normal(shape)).astype(F32) + 0.5
        array.flags.writeable = False      # a write would raise
        inputs.append(array)
    copies = [a.copy() for a in inputs]
    run_op(op, *inputs, **attrs)
    for array, copy in zip(inputs, copies):
        np.testing.assert_array_equal(array, copy)
