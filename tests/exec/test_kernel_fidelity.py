"""Kernels that reproduce TensorFlow's CPU rounding bit for bit, not just within a tolerance:
where dftool evaluates the same formula in the same order, a real model's drift does not start
there (tools/localize_drift.py finds the kernels that still round differently: Conv2D/MatMul
accumulation order, Eigen's approximate Rsqrt)."""
import json
from pathlib import Path

import numpy as np

from graphtool.exec.session import Session

from ..helpers import FIXTURES, load_graph


def _run_case(case: str):
    spec = json.loads((FIXTURES / case / "case.json").read_text())
    graph = load_graph(FIXTURES / case / "graph.pb")
    feeds = {name.partition(":")[0]: value for name, value in np.load(FIXTURES / case / "feeds.npz").items()}
    values = Session(graph, threads=1).run(spec["fetches"], feeds).values
    return dict(zip(spec["fetches"], values)), dict(np.load(FIXTURES / case / "expected.npz"))


def test_fused_batch_norm_and_its_gradient_are_bit_identical_to_tensorflow():
    """Training-mode statistics through a rounded 1/count, scale_backprop summing pre-scaled terms,
    rsqrt squared before it scales a mean: TensorFlow's order (fused_batch_norm_op.cc)."""
    actual, expected = _run_case("op_nn_batch_norm")
    for name, want in expected.items():
        assert np.array_equal(actual[name], want), name


def test_depthwise_convolutions_and_conv_backprops_are_bit_identical_to_tensorflow():
    """Depthwise convolution sums its taps in TensorFlow's order (einsum over the taps), the
    backprop filter as one matmul, the backprop input adds its taps last to first (col2im)."""
    actual, expected = _run_case("op_nn_conv")
    exact = {name for name, want in expected.items() if np.array_equal(actual[name], want)}
    assert {name for name in expected if name.startswith("depthwise")} <= exact
    assert "conv2d_backprop_input_same_stride2:0" in exact
    assert "conv2d_backprop_filter_same_stride2:0" in exact
