"""The Python API (graphtool.api, `import graphtool as gt`; docs/python-api.md): in-process, on the
bundled samples, checked against numpy and against the graphs the functions were given."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import graphtool as gt
from graphtool.errors import InvalidGraphError, UsageError
from graphtool.exec.session import Session
from graphtool.grad.driver import GradReport
from graphtool.ir import Graph
from graphtool.opt.manager import OptimizeReport

from .helpers import REPO_ROOT, const, run_dftool

SAMPLES = REPO_ROOT / "sample_graphs"
SAVED_MODELS = REPO_ROOT / "tests" / "fixtures" / "saved_models"


def _feeds(name: str) -> dict[str, np.ndarray]:
    with np.load(SAMPLES / f"{name}.feeds.npz") as archive:
        return dict(archive)


def _mlp_in_numpy(graph: Graph, x: np.ndarray) -> np.ndarray:
    """The mlp sample computed from its own weights: softmax(relu(x W1 + b1) W2 + b2)."""
    weights = {n.name: n.attr("value") for n in graph.nodes if n.op == "Const"}
    (w1, b1), (w2, b2) = [(weights[f"{scope}/kernel"], weights[f"{scope}/bias"]) for scope in ("dense", "logits")]
    logits = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    exp = np.exp(logits - logits.max(axis=1, keepdims=True))
    return exp / exp.sum(axis=1, keepdims=True)


@pytest.fixture(scope="module")
def mlp() -> Graph:
    return gt.load(SAMPLES / "mlp.pb")


def test_import_graphtool_is_light():
    """`import graphtool` loads neither numpy nor the IR: the API arrives on first use."""
    code = ("import sys, graphtool; heavy = [m for m in ('numpy', 'graphtool.ir', 'graphtool.api', "
            "'graphtool.exec') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=REPO_ROOT, env={"PYTHONPATH": str(REPO_ROOT)}).stdout
    assert out.strip() == "[]"


def test_api_names_survive_importing_their_subpackages():
    import graphtool.grad.driver  # noqa: F401  (sets graphtool.grad, were it not guarded)
    import graphtool.partition  # noqa: F401

    assert gt.grad is gt.api.grad and gt.partition is gt.api.partition and gt.place is gt.api.place
    assert {"load", "run", "Graph"} <= set(dir(gt))
    with pytest.raises(AttributeError):
        gt.no_such_function


def test_run_matches_numpy(mlp):
    x = _feeds("mlp")["x"]
    probs = gt.run(mlp, {"x": x}, "probs")
    np.testing.assert_allclose(probs, _mlp_in_numpy(mlp, x), rtol=1e-5, atol=1e-6)


def test_run_result_follows_the_fetches(mlp):
    x = _feeds("mlp")["x"]
    everything = gt.run(mlp, {"x:0": x})            # None: every output, by name
    assert list(everything) == ["probs"]
    pair = gt.run(mlp, {"x": x}, ["probs", "dense/MatMul"])
    assert isinstance(pair, list) and pair[1].shape == (x.shape[0], 32)
    np.testing.assert_array_equal(pair[0], everything["probs"])


def test_run_feeds_from_lists_and_npz(mlp):
    x = _feeds("mlp")["x"]
    from_list = gt.run(mlp, {"x": x.tolist()}, "probs")   # Python floats take the placeholder's dtype
    assert from_list.dtype == np.float32
    from_npz = gt.run(mlp, SAMPLES / "mlp.feeds.npz", "probs")
    np.testing.assert_array_equal(from_list, from_npz)


def test_run_names_a_bad_feed_and_fetch(mlp):
    x = _feeds("mlp")["x"]
    with pytest.raises(UsageError, match="'nope'"):
        gt.run(mlp, {"nope": x}, "probs")
    with pytest.raises(UsageError, match="'logits/missing'"):
        gt.run(mlp, {"x": x}, "logits/missing")


def test_load_text_graphdef_and_save_round_trip(mlp, tmp_path):
    mlp.save(tmp_path / "mlp.pbtxt")
    assert (tmp_path / "mlp.pbtxt").read_text().startswith("node {")
    gt.save(mlp, tmp_path / "mlp.pb")
    assert (tmp_path / "mlp.pb").read_bytes() == (SAMPLES / "mlp.pb").read_bytes()
    again = gt.load(tmp_path / "mlp.pbtxt")
    assert [n.name for n in again.nodes] == [n.name for n in mlp.nodes]


def test_save_refuses_a_name_it_would_not_write_as_asked(mlp, tmp_path):
    with pytest.raises(UsageError, match=r"\.onnx") as caught:
        mlp.save(tmp_path / "model.onnx")
    assert "text=True" in caught.value.hint
    assert not (tmp_path / "model.onnx").exists()
    mlp.save(tmp_path / "model.graph", text=False)
    assert gt.load(tmp_path / "model.graph").nodes[0].name == mlp.nodes[0].name


def test_load_saved_model_directory():
    case = SAVED_MODELS / "module_two_signatures"
    graph = gt.load(case / "model")
    with np.load(case / "serving_default" / "feeds.npz") as feeds, \
            np.load(case / "serving_default" / "expected.npz") as expected:
        got = gt.run(graph, dict(feeds), "output_0")
        np.testing.assert_allclose(got, expected["output_0"], rtol=1e-4, atol=1e-5)


def test_load_errors_name_the_file(tmp_path):
    (tmp_path / "junk.pb").write_bytes(b"\xff\xfe not a graph")
    with pytest.raises(InvalidGraphError, match="junk.pb"):
        gt.load(tmp_path / "junk.pb")


def test_optimize_returns_a_new_graph_computing_the_same(mlp):
    x = _feeds("mlp")["x"]
    before = len(mlp)
    smaller = gt.optimize(mlp)
    assert len(mlp) == before and len(smaller) < before
    assert {n.op for n in smaller.nodes} >= {"_FusedMatMul"}
    np.testing.assert_allclose(gt.run(smaller, {"x": x}, "probs"), gt.run(mlp, {"x": x}, "probs"), rtol=1e-6)


def test_optimize_inplace_report_and_options(mlp):
    graph = mlp.copy()
    same, report = gt.optimize(graph, passes=["constfold", "dce"], keep=["dense/MatMul"],
                               inplace=True, report=True)
    assert same is graph and isinstance(report, OptimizeReport)
    assert {run.name for run in report.runs} == {"constfold", "dce"}
    assert "dense/MatMul" in graph
    with pytest.raises(UsageError, match="unknown pass 'folding'"):
        gt.optimize(mlp, passes=["folding"])
    with pytest.raises(UsageError, match="keep 'nothing'"):
        gt.optimize(mlp, keep=["nothing"])


def test_place_and_partition_run_like_the_original():
    graph = gt.load(SAMPLES / "multi_device.pb")
    feeds = _feeds("multi_device")
    placed, report = gt.place(graph, "cpu:0,cpu:1", report=True)
    assert all(n.device.startswith("/job:localhost/replica:0/task:0/device:CPU:") for n in placed.nodes)
    assert not any(n.device.startswith("/job:") for n in graph.nodes if not n.device)   # untouched
    assert sum(report.nodes_per_device().values()) == len(placed)
    parts = gt.partition(placed)
    ops = {n.op for n in parts.nodes}
    assert {"_Send", "_Recv"} <= ops and "_Send" not in {n.op for n in placed.nodes}
    np.testing.assert_allclose(gt.run(parts, feeds, "y"), gt.run(graph, feeds, "y"), rtol=1e-6)


def test_grad_against_the_closed_form():
    """y = sum(tanh(x * w)) -> dy/dw = x (1 - tanh(x w)^2)."""
    graph = Graph()
    x = graph.add_node("Placeholder", "x", attrs={"dtype": gt_float32(), "shape": [3]})
    w = const(graph, "w", [0.5, -1.0, 2.0])
    product = graph.add_node("Mul", "xw", [x.output(), w.output()], attrs={"T": gt_float32()})
    act = graph.add_node("Tanh", "act", [product.output()], attrs={"T": gt_float32()})
    axis = const(graph, "axis", [0], dtype=int32())
    graph.add_node("Sum", "y", [act.output(), axis.output()], attrs={"T": gt_float32(), "Tidx": int32()})
    with_grad, report = gt.grad(graph, "y", ["w"], report=True)
    assert "grad/w" not in graph and isinstance(report, GradReport)
    assert [(entry.x, entry.name) for entry in report.gradients] == [("w", "grad/w")]
    xv = np.array([1.0, 2.0, -3.0], np.float32)
    wv = np.array([0.5, -1.0, 2.0], np.float32)
    np.testing.assert_allclose(gt.run(with_grad, {"x": xv}, "grad/w"), xv * (1 - np.tanh(xv * wv) ** 2), rtol=1e-5)
    with pytest.raises(UsageError, match="'nope'"):
        gt.grad(graph, "nope", ["w"])


def test_grad_defaults_to_the_parameters(mlp):
    with_grad = gt.grad(mlp, "probs", prefix="d")
    assert {"d/dense/kernel", "d/dense/bias", "d/logits/kernel", "d/logits/bias"} <= {n.name for n in with_grad.nodes}


def test_profile_returns_the_json_report(mlp):
    report = gt.profile(mlp, _feeds("mlp"), repeat=3, warmup=1, name="mlp")
    assert report["graph"] == "mlp" and report["repeat"] == 3
    assert len(report["step_time_ms"]["all"]) == 3
    assert {row["op"] for row in report["ops"]} >= {"MatMul", "Softmax"}
    with pytest.raises(UsageError, match="repeat"):
        gt.profile(mlp, _feeds("mlp"), repeat=0)


def test_reprs_are_readable(mlp):
    text = repr(mlp)
    assert text.startswith("<Graph 11 nodes (Const 4, MatMul 2, BiasAdd 2")
    assert "inputs: x float32[?,16]" in text and "outputs: probs" in text
    assert repr(mlp.node("dense/MatMul")) == "<Node dense/MatMul = MatMul(x, dense/kernel)>"
    assert repr(mlp.node("x")) == "<Node x = Placeholder() float32[?,16]>"
    assert repr(mlp.node("probs").output(0)) == "<TensorRef probs:0 of Softmax>"
    placed = gt.place(mlp, ["cpu:0"])
    assert repr(placed.node("probs")).endswith("(logits/BiasAdd) on CPU:0>")
    assert "devices: CPU:0" in repr(placed)


def test_repr_of_a_large_graph_stays_short():
    graph = Graph()
    for index in range(200):
        const(graph, f"c{index}", [1.0])
    assert len(repr(graph)) < 200 and "+194 more" in repr(graph)


def gt_float32():
    from graphtool import dtypes

    return dtypes.float32


def int32():
    from graphtool import dtypes

    return dtypes.int32


@pytest.mark.parametrize("command, args, call", [
    ("optimize", [], lambda g: gt.optimize(g)),
    ("place", ["--devices", "cpu:0,cpu:1"], lambda g: gt.place(g, "cpu:0,cpu:1")),
    ("grad", ["--y", "probs", "--x", "dense/kernel"], lambda g: gt.grad(g, "probs", ["dense/kernel"])),
])
def test_commands_write_what_the_api_returns(tmp_path, command, args, call):
    """The command line is a layer over the API: the same graph, byte for byte."""
    code, _, err = run_dftool(command, SAMPLES / "mlp.pb", tmp_path / "cli.pb", *args, "-q")
    assert code == 0, err
    call(gt.load(SAMPLES / "mlp.pb")).save(tmp_path / "api.pb")
    assert (tmp_path / "cli.pb").read_bytes() == (tmp_path / "api.pb").read_bytes()


def test_replicate_makes_a_data_parallel_copy_that_trains_like_the_original():
    case = REPO_ROOT / "tests" / "fixtures" / "replicate" / "mlp64_adam_resource"
    original = gt.load(case / "graph.pb")
    before = len(original)
    replicated, report = gt.replicate(original, 2, ["x", "labels"], report=True)
    assert len(original) == before                      # the argument is left as it was
    assert report.replicas == 2 and report.gradients_reduced > 0
    assert {entry["input"] for entry in report.split} == {"x", "labels"}
    feeds = dict(np.load(case / "feeds.npz"))
    losses = []
    for graph in (original, replicated):
        session = Session(graph)
        session.run([], {}, targets=["init"])
        losses.append([session.run(["loss:0"], feeds, targets=["train"]).values[0] for _ in range(3)])
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-10)
