"""`optimize --verify` compares within a tolerance grounded in float accumulation
(graphtool/opt/tolerance.py): correct rewrites that re-associate floats pass, wrong ones fail."""
from math import sqrt
from pathlib import Path

import numpy as np
import pytest

from graphtool import dtypes
from graphtool.builder import GraphBuilder
from graphtool.ir import from_graphdef
from graphtool.opt.equivalence import differences
from graphtool.opt.tolerance import accumulation_depth, fetch_tolerances, terms_summed
from graphtool.shape_inference import infer_shapes

from ..helpers import error_line, load_graph, run_dftool

TF2 = Path(__file__).resolve().parents[1] / "fixtures" / "tf2"
EPSILON = 1e-3


def test_terms_summed_counts_what_one_output_element_adds_up():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [2, 8, 8, 16], name="x")
    conv = b.conv2d(x, b.const(np.ones((3, 3, 16, 4), np.float32)), name="conv")
    mean = b.op("Mean", [conv, b.const(np.array([1, 2], np.int32))], name="mean", keep_dims=False)
    logits = b.matmul(mean, b.const(np.ones((4, 10), np.float32)), name="logits")
    b.add(logits, 1.0, name="out")
    graph = from_graphdef(b.to_graphdef())
    shapes = infer_shapes(graph)
    assert [terms_summed(graph.node(name), shapes) for name in ("conv", "mean", "logits", "out")] == \
        [3 * 3 * 16, 64, 4, 1]
    depth = accumulation_depth(graph)
    expected = (1 + sqrt(144)) + (1 + sqrt(64)) + (1 + sqrt(4)) + 1
    assert depth[graph.node("out")] == pytest.approx(expected)


def _conv_bn(filt, scale, offset, mean, variance, fold: bool, epsilon_in_fold: float = EPSILON):
    """x -> conv -> batch norm (inference) -> relu -> mean: as built, or with the batch norm
    folded into the filter and a bias (what the remapper does), computed in float64 first."""
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [2, 12, 12, 8], name="x")
    if fold:
        multiplier = scale.astype(np.float64) / np.sqrt(variance.astype(np.float64) + epsilon_in_fold)
        folded = (filt * multiplier).astype(np.float32)
        bias = (offset - mean * multiplier).astype(np.float32)
        y = b.bias_add(b.conv2d(x, b.const(folded)), b.const(bias))
    else:
        conv = b.conv2d(x, b.const(filt))
        y = b.fused_batch_norm(conv, b.const(scale), b.const(offset), b.const(mean), b.const(variance),
                               epsilon=EPSILON, is_training=False)[0]
    b.op("Mean", [b.relu(y), b.const(np.array([1, 2], np.int32))], name="out", keep_dims=False)
    return from_graphdef(b.to_graphdef())


@pytest.fixture()
def conv_bn_parts():
    rng = np.random.default_rng(3)
    return (rng.normal(0, 0.3, (3, 3, 8, 16)).astype(np.float32),
            rng.uniform(0.5, 1.5, 16).astype(np.float32), rng.normal(0, 0.1, 16).astype(np.float32),
            rng.normal(0, 0.1, 16).astype(np.float32), rng.uniform(0.5, 1.5, 16).astype(np.float32))


def _compare(original, rewritten):
    feeds = {"x": np.random.default_rng(0).uniform(-1, 1, (2, 12, 12, 8)).astype(np.float32)}
    tolerances = fetch_tolerances([original, rewritten], ["out:0"], feeds)
    return differences(original, rewritten, ["out:0"], feeds, tolerances=tolerances)


def test_a_correct_batch_norm_fold_passes(conv_bn_parts):
    assert _compare(_conv_bn(*conv_bn_parts, fold=False), _conv_bn(*conv_bn_parts, fold=True)) == []


def test_a_fold_that_drops_the_epsilon_fails(conv_bn_parts):
    """A classic folding bug: rsqrt(var) instead of rsqrt(var + eps), a 5e-4 relative change."""
    problems = _compare(_conv_bn(*conv_bn_parts, fold=False),
                        _conv_bn(*conv_bn_parts, fold=True, epsilon_in_fold=0.0))
    assert len(problems) == 1 and problems[0].startswith("out:0: values differ")


def test_a_wrong_constant_deep_in_a_real_cnn_fails():
    """A rewrite of ResNet50 that rounds one filter to 3 significant digits (relative error up to
    5e-4: a bug, not float re-association) is refused on the model's own inputs."""
    graph = load_graph(TF2 / "keras_resnet50" / "graph.pb")
    feeds = dict(np.load(TF2 / "keras_resnet50" / "feeds.npz"))
    wrong = graph.copy()
    filt = wrong.node("resnet50_1/conv4_block3_2_conv_1/convolution/ReadVariableOp/resource")
    value = filt.attr("value")
    filt.set_attr("value", np.array([float(f"{v:.3g}") for v in value.ravel()],
                                    np.float32).reshape(value.shape))
    tolerances = fetch_tolerances([graph, wrong], ["Identity:0"], feeds)
    assert differences(graph, wrong, ["Identity:0"], feeds, tolerances=tolerances)


@pytest.mark.slow
def test_optimize_verify_accepts_resnet_folding_on_real_inputs_and_prints_its_tolerance(tmp_path):
    case = TF2 / "keras_resnet50"
    args = ("optimize", case / "graph.pb", tmp_path / "opt.pb", "--verify", "--feeds", case / "feeds.npz")
    code, _, stderr = run_dftool(*args)
    assert code == 0, stderr
    assert "verified on" in stderr and "roundings deep" in stderr
    # The same rewrites differ by more than a fixed 1e-5 relative: the old comparison refused them.
    code, _, stderr = run_dftool(*args, "--verify-tolerance", "0")
    assert code == 1 and "values differ" in error_line(stderr) and "tolerance 0 x" in stderr, stderr


def test_tensor_list_outputs_compare_by_their_elements(tmp_path):
    """A graph output that is a TensorList (tf2_map_fn's unused TensorArrayV2) is a new list object
    in each run: --verify compares what the lists hold."""
    code, _, stderr = run_dftool("optimize", TF2 / "tf2_map_fn" / "graph.pb", tmp_path / "opt.pb", "--verify")
    assert code == 0, stderr


def test_tensor_lists_that_hold_different_elements_differ():
    from graphtool.exec.kernels.tensor_list_value import TensorList
    from graphtool.opt.equivalence import _objects_match
    from graphtool.shapes import Shape

    def listed(*values):
        array = np.empty((), object)
        array[()] = TensorList(dtypes.float32, Shape([2]), [np.asarray(v, np.float32) for v in values])
        return array

    assert _objects_match(listed([1, 2], [3, 4]), listed([1, 2], [3, 4]), 1e-5, 1e-6)
    assert not _objects_match(listed([1, 2], [3, 4]), listed([1, 2], [3, 5]), 1e-5, 1e-6)
    assert not _objects_match(listed([1, 2]), listed([1, 2], [3, 4]), 1e-5, 1e-6)
