"""`dftool compare` through the real entry point: exact tables on small graphs, the perturbed-Const
walk, A vs its optimized self, A vs TensorFlow's saved outputs, --json, and the usage errors; and
`run --expect`'s statistics on a mismatch."""
from __future__ import annotations

import json

import numpy as np
import pytest

from graphtool import dtypes
from graphtool.ir.graph import Graph

from .helpers import F32, REPO_ROOT, const, error_line, load_graph, op, placeholder, run_dftool, write_graph

SAMPLES = REPO_ROOT / "sample_graphs"
TF = REPO_ROOT / "tests" / "fixtures" / "tf"
FEED = ["--feed", "x=[1,2,3,4]"]


def scale_graph(scale=(1.0, 2.0, 4.0, 8.0)) -> Graph:
    """out = x * scale + 0.5 on x float32[4]; count = Shape(x) (int32)."""
    g = Graph()
    g.versions.producer = 1994
    x = placeholder(g, "x", [4])
    product = op(g, "Mul", "mul", x, const(g, "scale", list(scale)))
    op(g, "AddV2", "out", product, const(g, "offset", [0.5] * 4))
    op(g, "Shape", "count", x, out_type=dtypes.int32)
    return g


@pytest.fixture()
def graphs(tmp_path):
    """(A, B): B's `scale` Const has 4.5 where A's has 4."""
    return (write_graph(scale_graph(), tmp_path / "a.pb"),
            write_graph(scale_graph((1.0, 2.0, 4.5, 8.0)), tmp_path / "b.pb"))


def perturbed(path, name: str, index: int, delta: float, out) -> str:
    graph = load_graph(path)
    node = graph.node(name)
    value = np.array(node.attr("value"))
    value.flat[index] += delta
    node.set_attr("value", value)
    return write_graph(graph, out)


OUTPUTS_TABLE = """\
output  status  mismatches  max abs  mean abs  median abs  p99 abs  max rel  mean rel  median rel  p99 rel  max abs at (A vs B)  min rtol  min atol  note
out     FAILED         1/4      1.5     0.375           0     1.45    0.107    0.0268           0    0.104  [2] 12.5 vs 14.0        0.107       1.5
count   PASSED         0/1        -         -           -        -        -         -           -        -  -                           -         -  compared exactly
2 output(s): 1 passed, 1 failed (rtol 1e-05, atol 1e-08)
"""

WALK = """\
all tensors: 6 compared in 1 chunk(s), 3 diverge
source of divergence: scale (Const, no inputs) differs: 1/4 beyond tolerance, max abs err 0.5 at [2] (4.0 vs 4.5), max rel err 0.111, min rtol 0.111, min atol 0.5
first diverging node: mul (Mul): 1/4 beyond tolerance, max abs err 1.5 at [2] (12.0 vs 13.5), max rel err 0.111, min rtol 0.111, min atol 1.5
diverging tensors (first 3 of 3, A's topological order)
tensor  op     mismatches  max abs  max rel  min rtol  min atol  note
scale   Const         1/4      0.5    0.111     0.111       0.5
mul     Mul           1/4      1.5    0.111     0.111       1.5
out     AddV2         1/4      1.5    0.107     0.107       1.5
"""


def test_two_graphs_table_and_exit_1(graphs):
    a, b = graphs
    code, stdout, stderr = run_dftool("compare", a, b, *FEED)
    assert code == 1 and stdout == OUTPUTS_TABLE
    assert error_line(stderr) == "error: 1 of 2 output(s) differ beyond rtol 1e-05, atol 1e-08: out"


def test_tolerances_that_pass(graphs):
    a, b = graphs
    # the smallest rtol/atol the table gives (rounded up) pass; the exit is 0
    assert run_dftool("compare", a, b, *FEED, "--rtol", "0.108")[0] == 0
    assert run_dftool("compare", a, b, *FEED, "--atol", "1.5")[0] == 0
    assert run_dftool("compare", a, b, *FEED, "--rtol", "0.107")[0] == 1


def test_all_tensors_names_the_perturbed_consts_first_consumer(graphs):
    a, b = graphs
    code, stdout, _ = run_dftool("compare", a, b, *FEED, "--all-tensors")
    assert code == 1 and stdout == OUTPUTS_TABLE + WALK


def test_all_tensors_in_small_chunks_finds_the_same(graphs):
    a, b = graphs
    code, stdout, _ = run_dftool("compare", a, b, *FEED, "--all-tensors", "--chunk-bytes", "16", "--top", "1")
    assert code == 1
    assert "all tensors: 6 compared in 6 chunk(s), 3 diverge" in stdout
    assert "first diverging node: mul (Mul)" in stdout
    assert "diverging tensors (first 1 of 3, A's topological order)" in stdout


def test_perturbed_const_in_a_real_graph(tmp_path):
    """mlp.pb with one weight of its first layer nudged: the first diverging node is that
    kernel's consumer, dense/MatMul; the kernel is the source."""
    changed = perturbed(SAMPLES / "mlp.pb", "dense/kernel", 5, 1e-3, tmp_path / "changed.pb")
    code, stdout, stderr = run_dftool("compare", SAMPLES / "mlp.pb", changed, "--feeds", SAMPLES / "mlp.feeds.npz",
                                      "--all-tensors", "--json")
    assert code == 1, stderr
    walked = json.loads(stdout)["all_tensors"]
    assert [s["name"] for s in walked["sources"]] == ["dense/kernel"]
    assert walked["first"]["name"] == "dense/MatMul" and walked["first"]["op"] == "MatMul"
    assert [d["name"] for d in walked["diverging"]][:3] == ["dense/kernel", "dense/MatMul", "dense/BiasAdd"]


def test_json_report(graphs):
    a, b = graphs
    code, stdout, _ = run_dftool("compare", a, b, *FEED, "--json")
    assert code == 1
    report = json.loads(stdout)
    assert report["passed"] is False and report["b"] == {"kind": "graph", "graph": b, "jit": False,
                                                           "device": "/job:localhost/replica:0/task:0/device:CPU:0"}
    out, count = report["outputs"]
    assert out["status"] == "FAILED" and out["mismatches"] == 1 and out["size"] == 4
    assert out["abs_error"]["max"] == 1.5 and out["abs_error"]["max_at"] == {"index": [2], "a": 12.5, "b": 14.0}
    assert out["min_rtol"] == pytest.approx((1.5 - 1e-8) / 14) and out["min_atol"] == pytest.approx(1.5 - 1e-5 * 14)
    assert count == {"name": "count", "status": "PASSED", "kind": "exact", "dtype": ["int32", "int32"],
                     "shape": [[1], [1]], "problem": None, "size": 1, "mismatches": 0, "first_difference": None}
    assert report["all_tensors"] is None


@pytest.mark.parametrize("sample", ["mlp", "convnet", "while_loop", "cond"])
def test_optimized_self_passes(sample):
    code, stdout, stderr = run_dftool("compare", SAMPLES / f"{sample}.pb", "--b-optimize", "--feeds",
                                      SAMPLES / f"{sample}.feeds.npz", "--all-tensors")
    assert code == 0, stderr
    assert "failed" in stdout and " 0 failed" in stdout and "no intermediate tensor diverges" in stdout


@pytest.mark.parametrize("case", ["mlp_frozen", "convnet_frozen", "cond"])
def test_tensorflow_outputs_pass(case):
    spec = json.loads((TF / case / "case.json").read_text())
    code, stdout, stderr = run_dftool("compare", TF / case / "graph.pb", "--feeds", TF / case / "feeds.npz",
                                      "--b-npz", TF / case / "expected.npz", "--rtol", spec["rtol"],
                                      "--atol", spec["atol"])
    assert code == 0, stderr
    assert stdout.endswith(f"{len(spec['fetches'])} output(s): {len(spec['fetches'])} passed, 0 failed "
                           f"(rtol {spec['rtol']:g}, atol {spec['atol']:g})\n")


def test_tensorflow_outputs_fail_when_the_tolerance_is_too_tight():
    case = TF / "mlp_frozen"
    code, stdout, stderr = run_dftool("compare", case / "graph.pb", "--feeds", case / "feeds.npz",
                                      "--b-npz", case / "expected.npz", "--rtol", "0", "--atol", "0")
    assert code == 1
    assert stdout == """\
output    status  mismatches   max abs  mean abs  median abs   p99 abs   max rel  mean rel  median rel   p99 rel  max abs at (A vs B)             min rtol  min atol  note
logits:0  PASSED        0/16         0         0           0         0         0         0           0         0  -                                      0         0
probs:0   FAILED        3/16  5.96e-08  4.89e-09           0  5.29e-08  1.21e-07   2.1e-08           0  1.21e-07  [0, 2] 0.6094449 vs 0.60944486  1.21e-07  5.96e-08
2 output(s): 1 passed, 1 failed (rtol 0, atol 0)
"""
    assert error_line(stderr) == "error: 1 of 2 output(s) differ beyond rtol 0, atol 0: probs:0"


def test_npz_problems_are_reported_per_output(tmp_path, graphs):
    a, _ = graphs
    saved = tmp_path / "saved.npz"
    np.savez(saved, out=np.array([1.5, 4.5, 12.5], np.float32), count=np.array([4], np.int64))
    code, stdout, _ = run_dftool("compare", a, *FEED, "--b-npz", saved)
    assert code == 1
    rows = stdout.splitlines()
    assert rows[1].startswith("out ") and rows[1].endswith("shape [4] vs [3]") and "FAILED" in rows[1]
    # integers of different widths are compared by value; the note says the dtypes differ
    assert rows[2].split()[:3] == ["count", "PASSED", "0/1"] and rows[2].endswith("compared exactly; dtype int32 vs int64")
    code, _, stderr = run_dftool("compare", a, *FEED, "--b-npz", saved, "--fetch", "mul")
    assert code == 1 and error_line(stderr).startswith(f"error: --b-npz {saved}: no saved value for mul")


def test_dead_and_live_outputs(tmp_path):
    """cond.pb, and a B whose cond takes the other branch: the true branch's Relu is live in A
    (p is fed True) and dead in B."""
    graph = load_graph(SAMPLES / "cond.pb")
    negated = graph.add_node("LogicalNot", "not_p", inputs=[graph.node("p").output(0)])
    graph.node("cond/pred_id").set_input(0, negated.output(0))
    other = write_graph(graph, tmp_path / "other.pb")
    code, stdout, _ = run_dftool("compare", SAMPLES / "cond.pb", other, "--feeds", SAMPLES / "cond.feeds.npz",
                                 "--fetch", "cond/Relu", "--fetch", "y")
    assert code == 1
    rows = stdout.splitlines()
    assert rows[1].split()[:3] == ["cond/Relu", "FAILED", "-"] and rows[1].endswith("dead in B, live in A")
    assert rows[2].split()[:2] == ["y", "FAILED"]


@pytest.mark.parametrize("args, message", [
    (["{b}", "--b-optimize"], "error: B is one thing: B and --b-optimize were both given"),
    ([], "error: nothing to compare: A against itself with the same settings"),
    (["--b-npz", "{npz}", "--all-tensors"], "error: --all-tensors needs B to run (a graph, or A under other "
                                            "settings), not --b-npz"),
    (["--b-optimize", "--cluster", "local:2"], "error: compare does not run on a cluster (--cluster)"),
    (["--b-npz", "{npz}"], "error: --b-npz {npz}: no key names a tensor of A"),
    (["-", "--b-optimize"], "error: standard input ('-') can be read once, and B here is read from it too"),
])
def test_usage_errors(graphs, tmp_path, args, message):
    a, b = graphs
    npz = tmp_path / "other.npz"
    np.savez(npz, nothing=np.zeros(2))
    filled = [arg.format(b=b, npz=npz) for arg in args]
    stdin = None
    if filled[:1] == ["-"]:    # A from standard input
        a, filled, stdin = "-", filled[1:], open(a, "rb").read()
    code, _, stderr = run_dftool("compare", a, *FEED, *filled, input=stdin)
    assert code == 2
    assert error_line(stderr).startswith(message.format(npz=npz)), stderr


def test_run_expect_prints_the_statistics_on_a_mismatch(tmp_path, graphs):
    a, _ = graphs
    saved = tmp_path / "saved.npz"
    np.savez(saved, out=np.array([1.5, 4.5, 14.0, 32.5], np.float32))
    code, stdout, stderr = run_dftool("run", a, *FEED, "--fetch", "out", "--expect", saved)
    assert code == 1
    assert stdout.splitlines()[1:] == [
        "output  status  mismatches  max abs  mean abs  median abs  p99 abs  max rel  mean rel  median rel  p99 rel  "
        "max abs at (A vs B)  min rtol  min atol  note",
        "out     FAILED         1/4      1.5     0.375           0     1.45    0.107    0.0268           0    0.104  "
        "[2] 12.5 vs 14.0        0.107       1.5"]
    assert error_line(stderr) == (f"error: results differ from {saved}: out: 1 of 4 values differ "
                                  "(max abs error 1.5, max rel error 0.107)")
    code, stdout, _ = run_dftool("run", a, *FEED, "--fetch", "out", "--expect", saved, "--rtol", "0.11")
    assert code == 0 and "status" not in stdout


def test_one_graph_on_two_devices(graphs):
    a, _ = graphs
    code, stdout, stderr = run_dftool("compare", a, *FEED, "--a-device", "cpu:0", "--b-device", "cpu:1", "--json")
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["a"]["device"].endswith("CPU:0") and report["b"]["device"].endswith("CPU:1")
    assert report["b"]["kind"] == "same" and report["passed"] is True


def test_a_missing_device_names_the_sides_option(graphs):
    import importlib.util

    a, _ = graphs
    code, _, stderr = run_dftool("compare", a, *FEED, "--b-device", "gpu")
    if importlib.util.find_spec("cupy") is None:
        assert code == 4 and error_line(stderr).startswith("error: B: --b-device gpu: cupy is not installed")
    else:
        assert code == 0, stderr


@pytest.mark.slow
def test_jit_against_the_interpreter():
    pytest.importorskip("jax")
    code, stdout, stderr = run_dftool("compare", SAMPLES / "mlp.pb", "--feeds", SAMPLES / "mlp.feeds.npz", "--b-jit",
                                      "--jit-cache", "off", "--all-tensors", "--json")
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["a"]["jit"] is False and report["b"]["jit"] is True and report["passed"]
    assert report["all_tensors"]["compared"] == 11 and report["all_tensors"]["diverging"] == []


def test_generated_feeds_are_made_once_and_given_to_both_sides(graphs):
    a, b = graphs
    code, stdout, stderr = run_dftool("compare", a, b, "--random-feeds", "--seed", "7", "--all-tensors")
    assert code == 1
    assert stderr.splitlines()[0] == "generated 1 feed(s) with seed 7: x float32[4]"
    assert stderr.count("generated") == 1
    assert "source of divergence: scale (Const, no inputs)" in stdout and "first diverging node: mul (Mul)" in stdout
    code, stdout, stderr = run_dftool("compare", a, "--b-optimize", "--random-feeds", "--seed", "7")
    assert code == 0, stderr
    assert stdout.endswith("2 output(s): 2 passed, 0 failed (rtol 1e-05, atol 1e-08)\n")


def test_shape_override_applies_to_both_sides():
    code, stdout, stderr = run_dftool("compare", SAMPLES / "convnet.pb", "--b-optimize", "--random-feeds",
                                      "--shape", "x=4,8,8,3", "--json")
    assert code == 0, stderr
    (probs,) = json.loads(stdout)["outputs"]
    assert probs["status"] == "PASSED" and probs["shape"][0] == probs["shape"][1] and probs["shape"] == [[4, 10], [4, 10]]
