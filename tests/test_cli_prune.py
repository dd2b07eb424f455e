"""`dftool prune` through the real entry point: pruned graphs that `dftool run` runs (fed ports,
call frames, '-' pipelines), the JSON report, and every error path with its exit code."""
import json

import numpy as np

from graphtool import dtypes, graph_io
from graphtool.ir import Graph, from_graphdef

from .helpers import FIXTURES, const, error_line, op, placeholder, run_dftool, while_loop, write_graph


def split_graph(path) -> str:
    """x[4,6] -> Split -> a = tanh(split:0), b = -split:1."""
    g = Graph()
    x = placeholder(g, "x", [4, 6])
    split = g.add_node("Split", "split", inputs=[const(g, "axis", 1, dtype=dtypes.int32).output(0), x.output(0)],
                       attrs={"T": dtypes.float32, "num_split": 2})
    op(g, "Tanh", "a", split.output(0))
    op(g, "Neg", "b", split.output(1))
    return write_graph(g, path)


def loop_graph(path) -> str:
    g = Graph()
    op(g, "Identity", "result", while_loop(g, placeholder(g, "start", [])))
    return write_graph(g, path)


def test_pruned_graph_runs_with_the_original_tensor_name_as_feed(tmp_path):
    source = split_graph(tmp_path / "split.pb")
    value = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.save(tmp_path / "v.npy", value)
    code, pruned, stderr = run_dftool("prune", source, "-", "--fetch", "b", "--feed", "split:1", binary=True)
    assert code == 0, stderr
    assert "split:1" in stderr and "split_1" in stderr and "kept 1 of 5 node(s), removed 4, added 1" in stderr
    for key in ("split:1", "split_1"):
        code, _, stderr = run_dftool("run", "-", "--feed", f"{key}={tmp_path / 'v.npy'}", "--output",
                                     tmp_path / "out.npz", input=pruned)
        assert code == 0, stderr
        np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["b"], -value)


def test_call_frame_graph_runs_its_retvals_by_default(tmp_path):
    source = split_graph(tmp_path / "split.pb")
    out = tmp_path / "frame.pbtxt"
    code, _, stderr = run_dftool("prune", source, out, "--fetch", "b", "--fetch", "a", "--feed", "x",
                                 "--call-frame")
    assert code == 0, stderr
    graph = from_graphdef(graph_io.load_graphdef(str(out)))
    assert {n.op for n in graph.nodes} >= {"_Arg", "_Retval"} and graph.node("x").op == "_Arg"
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    np.save(tmp_path / "x.npy", x)
    code, _, stderr = run_dftool("run", out, "--feed", f"x={tmp_path / 'x.npy'}", "--output", tmp_path / "r.npz")
    assert code == 0, stderr
    results = np.load(tmp_path / "r.npz")
    assert list(results.files) == ["_retval_b_0_0", "_retval_a_0_1"]
    np.testing.assert_array_equal(results["_retval_b_0_0"], -x[:, 3:])
    np.testing.assert_allclose(results["_retval_a_0_1"], np.tanh(x[:, :3]), rtol=1e-6)
    code, stdout, stderr = run_dftool("inspect", out, "--json")
    assert code == 0, stderr
    report = json.loads(stdout)
    assert [(i["name"], i["op"], i["dtype"]) for i in report["inputs"]] == [("x", "_Arg", "float32")]
    assert "--feed x=" in report["run_command"]


def test_json_report_and_loops_kept_whole(tmp_path):
    source = loop_graph(tmp_path / "loop.pb")
    code, stdout, stderr = run_dftool("prune", source, tmp_path / "out.pb", "--fetch", "while/mul", "--json")
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["command"] == "prune" and report["schema"] == "dftool.prune/2"
    assert report["loops_kept"] == ["while/ctx"] and report["removed"] == ["result"]
    assert report["nodes"] == {"before": 13, "after": 12, "kept": 12, "removed": 1, "added": 0}
    assert "1 while loop(s) kept whole" in stderr


def test_fixture_pruned_to_one_fetch_matches_tensorflow(tmp_path):
    case = FIXTURES / "while_loop"
    code, pruned, stderr = run_dftool("prune", case / "graph.pb", "-", "--fetch", "out:0", "--feed", "n:0",
                                      "--feed", "x:0", binary=True)
    assert code == 0, stderr
    code, _, stderr = run_dftool("run", "-", "--feeds", case / "feeds.npz", "--fetch", "out:0",
                                 "--expect", case / "expected.npz", "--rtol", "1e-4", input=pruned)
    assert code == 0, stderr


def test_unknown_names_are_usage_errors(tmp_path):
    source = split_graph(tmp_path / "split.pb")
    out = tmp_path / "out.pb"
    out.write_bytes(b"untouched")
    for args, message in [(("--fetch", "nope"), "error: --fetch nope: no node named 'nope' in the graph"),
                          (("--fetch", "b", "--feed", "ghost:1"), "error: --feed ghost:1: no node named 'ghost'"),
                          (("--fetch", "split:5"), "error: --fetch split:5: tensor 'split:5': node 'split' (Split) "
                                                   "has 2 output(s)")]:
        code, _, stderr = run_dftool("prune", source, out, *args)
        assert code == 2 and error_line(stderr).startswith(message), stderr
    assert out.read_bytes() == b"untouched"


def test_feed_inside_a_loop_is_refused(tmp_path):
    code, _, stderr = run_dftool("prune", loop_graph(tmp_path / "loop.pb"), tmp_path / "o.pb",
                                 "--fetch", "result", "--feed", "while/Identity")
    assert code == 2
    assert "--feed while/Identity: the tensor lives inside while-loop frame 'while/ctx'" in error_line(stderr)


def test_fetch_is_required_and_json_needs_stdout():
    code, _, stderr = run_dftool("prune", FIXTURES / "mlp_frozen" / "graph.pb", "-")
    assert code == 2 and "Missing option '--fetch'" in error_line(stderr)
    code, _, stderr = run_dftool("prune", FIXTURES / "mlp_frozen" / "graph.pb", "-", "--fetch", "probs", "--json")
    assert code == 2 and "--json writes to stdout" in error_line(stderr)


def test_invalid_input_is_exit_3(tmp_path):
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"\x0a\xff\xff garbage")
    code, _, stderr = run_dftool("prune", bad, tmp_path / "o.pb", "--fetch", "x")
    assert code == 3 and str(bad) in error_line(stderr)
