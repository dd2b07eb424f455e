"""`dftool grad` through the real entry point: the gradient graph runs, pipes into optimize and
run, reports, the default xs, and every bad input with its exit code and one-line message."""
import json

import numpy as np
import pytest

from graphtool import graph_io
from graphtool.builder import GraphBuilder
from graphtool.exec.session import Session
from graphtool.grad.driver import gradients
from graphtool.ir import from_graphdef

from .helpers import REPO_ROOT, error_line, run_dftool

SAMPLES = REPO_ROOT / "sample_graphs"


def _save(builder, path):
    path.write_bytes(builder.to_graphdef().SerializeToString())
    return path


@pytest.fixture()
def model(tmp_path):
    """loss = mean((tanh(x @ w + b) - t)^2) after a loop that scales x n times; `unused` feeds
    nothing. Returns (graph path, feeds path, feeds)."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.placeholder("float32", [4, 3], name="x")
    t = b.placeholder("float32", [4, 2], name="t")
    n = b.placeholder("int32", [], name="n")
    w = b.const(rng.normal(size=(3, 2)).astype(np.float32), name="w")
    bias = b.const(np.zeros(2, np.float32), name="b")
    b.const(np.ones(2, np.float32), name="unused")
    _, scaled = b.while_loop(lambda i, v: b.less(i, n), lambda i, v: (b.add(i, 1), b.mul(v, 0.9)), [0, x])
    hidden = b.tanh(b.bias_add(b.matmul(scaled, w), bias))
    error = b.sub(hidden, t)
    b.reduce_mean(b.mul(error, error), [0, 1], name="loss")
    feeds = {"x": rng.normal(size=(4, 3)).astype(np.float32), "t": rng.normal(size=(4, 2)).astype(np.float32),
             "n": np.array(3, np.int32)}
    feeds_path = tmp_path / "feeds.npz"
    np.savez(feeds_path, **feeds)
    return _save(b, tmp_path / "model.pb"), feeds_path, feeds


def _expected(graph_path, y, xs, feeds, names):
    graph = from_graphdef(graph_io.load_graphdef(str(graph_path)))
    with_grads, _ = gradients(graph, y, xs)
    return dict(zip(names, Session(with_grads).run(names, feeds).values))


def test_grad_then_run(model, tmp_path):
    graph, feeds_path, feeds = model
    out = tmp_path / "grad.pb"
    code, stdout, stderr = run_dftool("grad", graph, out, "--y", "loss", "--x", "w", "--x", "x:0")
    assert code == 0, stderr
    assert stdout == "" and "grad/w" in stderr and "grad/x" in stderr and "1 backward loop(s)" in stderr
    expect = tmp_path / "expect.npz"
    np.savez(expect, **_expected(graph, "loss", ["w", "x"], feeds, ["grad/w", "grad/x"]))
    code, _, stderr = run_dftool("run", out, "--feeds", feeds_path, "--fetch", "grad/w", "--fetch", "grad/x",
                                 "--expect", expect)
    assert code == 0, stderr


def test_grad_optimize_run_pipe(model, tmp_path):
    """dftool grad m.pb - --y loss --x w | dftool optimize - - | dftool run - --feeds ..."""
    graph, feeds_path, feeds = model
    code, grad_graph, stderr = run_dftool("grad", graph, "-", "--y", "loss", "--x", "w", "--x", "b", binary=True)
    assert code == 0, stderr
    code, optimized, stderr = run_dftool("optimize", "-", "-", "--fetch", "grad/w", "--fetch", "grad/b",
                                         input=grad_graph, binary=True)
    assert code == 0, stderr
    expect = tmp_path / "expect.npz"
    np.savez(expect, **_expected(graph, "loss", ["w", "b"], feeds, ["grad/w", "grad/b"]))
    code, _, stderr = run_dftool("run", "-", "--feeds", feeds_path, "--fetch", "grad/w", "--fetch", "grad/b",
                                 "--expect", expect, "--rtol", "1e-5", input=optimized)
    assert code == 0, stderr


def test_default_xs_json_report_and_prefix(model, tmp_path):
    graph, _, _ = model
    out, report = tmp_path / "grad.pbtxt", tmp_path / "report.json"
    code, stdout, stderr = run_dftool("grad", graph, out, "--y", "loss", "--prefix", "d", "--json",
                                      "--report", report)
    assert code == 0, stderr
    printed = json.loads(stdout)
    assert printed == json.loads(report.read_text())
    assert printed["schema"] == "dftool.grad/2" and printed["command"] == "grad" and printed["y"] == "loss"
    assert [g["x"] for g in printed["gradients"]] == ["w", "b"]          # unused and scalars excluded
    assert [g["name"] for g in printed["gradients"]] == ["d/w", "d/b"]
    assert printed["loops"] == 0 and printed["nodes_added"] > 0 and printed["warnings"] == []
    assert "--x not given" in stderr
    assert 'name: "d/w"' in out.read_text()                               # .pbtxt: text format


def test_train_loop_sample_trains_in_one_run(tmp_path):
    """sample_graphs/train_loop.pb: a whole SGD training run in one `dftool run`; the loss falls."""
    out = tmp_path / "losses.npz"
    code, _, stderr = run_dftool("run", SAMPLES / "train_loop.pb", "--feeds", SAMPLES / "train_loop.feeds.npz",
                                 "--fetch", "losses", "--fetch", "w1", "--output", out)
    assert code == 0, stderr
    losses = np.load(out)["losses"]
    assert losses.shape == (60,) and np.all(np.isfinite(losses))
    assert losses[-1] < 0.1 * losses[0]
    assert np.all(np.diff(losses) < 0)


# --- bad input ----------------------------------------------------------------------------------

def test_y_independent_of_x_gives_zeros_and_a_warning(model, tmp_path):
    graph, feeds_path, _ = model
    out = tmp_path / "grad.pb"
    code, _, stderr = run_dftool("grad", graph, out, "--y", "loss", "--x", "unused")
    assert code == 0, stderr
    assert "warning: x 'unused' is not something y 'loss' depends on" in stderr
    result = tmp_path / "r.npz"
    assert run_dftool("run", out, "--feeds", feeds_path, "--fetch", "grad/unused", "--output", result)[0] == 0
    np.testing.assert_array_equal(np.load(result)["grad/unused"], np.zeros(2, np.float32))
    assert run_dftool("grad", graph, out, "--y", "loss", "--x", "unused", "-q") == (0, "", "")


@pytest.mark.parametrize("args, message", [
    (["--y", "nope", "--x", "w"], "error: y 'nope': no node named 'nope' in the graph"),
    (["--y", "loss", "--x", "missing"], "error: x 'missing': no node named 'missing' in the graph"),
    (["--y", "loss", "--x", "w:2"], "error: x 'w:2': tensor 'w:2': node 'w' (Const) has 1 output(s)"),
    (["--y", "n", "--x", "w"], "error: y 'n' is int32"),
    (["--y", "loss", "--x", "w", "--prefix", "a b"], "error: invalid gradient prefix 'a b'"),
    (["--x", "w"], "Missing option '--y'"),
])
def test_bad_tensor_names_exit_2(model, tmp_path, args, message):
    graph, _, _ = model
    out = tmp_path / "grad.pb"
    out.write_bytes(b"keep me")
    code, _, stderr = run_dftool("grad", graph, out, *args)
    assert code == 2 and message in error_line(stderr)
    assert out.read_bytes() == b"keep me"


def test_json_with_stdout_output_is_a_usage_error(model):
    code, _, stderr = run_dftool("grad", model[0], "-", "--y", "loss", "--json")
    assert code == 2 and "--json writes to stdout" in error_line(stderr)


def test_op_without_gradient_exits_1_naming_op_and_node(tmp_path):
    b = GraphBuilder()
    a = b.placeholder("float32", [2, 3], name="a")
    fused = b.op("_FusedMatMul", [a, np.ones((3, 4), np.float32), [np.zeros(4, np.float32)]],
                 fused_ops=["BiasAdd"], name="dense/fused")
    b.op("Sum", [fused, np.array([0, 1], np.int32)], name="loss")
    code, _, stderr = run_dftool("grad", _save(b, tmp_path / "fused.pb"), tmp_path / "out.pb", "--y", "loss",
                                 "--x", "a")
    assert code == 1
    assert "no gradient is registered for op '_FusedMatMul' (node 'dense/fused')" in error_line(stderr)
    assert not (tmp_path / "out.pb").exists()


def test_unreadable_input_exits_3(tmp_path):
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"\x00not a graph")
    code, _, stderr = run_dftool("grad", bad, tmp_path / "out.pb", "--y", "loss")
    assert code == 3 and "bad.pb" in error_line(stderr)


def test_no_parameters_and_no_x_is_a_usage_error(tmp_path):
    b = GraphBuilder()
    b.tanh(b.placeholder("float32", [2], name="x"), name="y")
    code, _, stderr = run_dftool("grad", _save(b, tmp_path / "g.pb"), tmp_path / "out.pb", "--y", "y")
    assert code == 2 and "no --x given" in error_line(stderr)
