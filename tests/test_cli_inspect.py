"""`dftool inspect`: the JSON report's fields, the tables, stdin and text input, -q and --report.

CLI behaviour runs the real entry point in a subprocess; the finer points of the report are
checked on graphtool.inspect.inspect_graph directly.
"""
import json

import numpy as np
import pytest

from graphtool import dtypes
from graphtool.inspect import inspect_graph, is_valid_device
from graphtool.ir import Graph
from tests.helpers import (const, mlp_graph, op, placeholder, run_dftool, serialize, while_loop,
                           while_loop_graph, write_graph)

MLP_PARAMETERS = 4 * 8 + 8 + 8 * 3 + 3


def inspect_json(*args, input=None) -> dict:
    rc, stdout, stderr = run_dftool("inspect", *args, "--json", input=input)
    assert rc == 0, stderr
    return json.loads(stdout)


@pytest.fixture
def mlp_file(tmp_path):
    return write_graph(mlp_graph(), tmp_path / "mlp.pb")


# --- the report -------------------------------------------------------------------------------

def test_mlp_report(mlp_file):
    report = inspect_json(mlp_file)
    assert report["schema"] == "dftool.inspect/2" and report["command"] == "inspect"
    assert report["graph"] == mlp_file and report["producer"] == 1994
    assert report["node_count"] == 10
    assert report["op_counts"] == {"Const": 4, "MatMul": 2, "Add": 1, "BiasAdd": 1, "Placeholder": 1, "Relu": 1}
    assert report["edges"] == {"data": 9, "control": 0}
    assert report["inputs"] == [{"name": "x", "op": "Placeholder", "dtype": "float32", "shape": [None, 4],
                                 "optional": False, "used": True}]
    assert report["outputs"] == [{"name": "logits", "op": "Add", "dtype": "float32", "shape": [None, 3]}]
    assert report["sinks"] == [] and report["frames"] == []
    assert report["devices"] == [{"device": "(unplaced)", "nodes": 10}]
    assert report["parameters"] == {"tensors": 4, "elements": MLP_PARAMETERS, "bytes": 4 * MLP_PARAMETERS,
                                    "unknown_shape_variables": 0}
    assert report["shapes"]["tensors"] == 10 and report["shapes"]["errors"] == 0
    assert report["shapes"]["fully_known"] == 4 and report["shapes"]["unknown"] == 0
    assert report["findings"] == []
    assert report["run_command"] == f"dftool run {mlp_file} --feed x=x.npy --fetch logits"


def test_while_loop_report(tmp_path):
    report = inspect_json(write_graph(while_loop_graph(), tmp_path / "loop.pb"))
    assert report["frames"] == [{"name": "while/ctx", "parent": None, "depth": 1, "nodes": 10, "enters": 1,
                                 "exits": 1, "parallel_iterations": 4}]
    assert report["op_counts"]["Merge"] == 1 and report["op_counts"]["NextIteration"] == 1
    assert report["inputs"][0]["name"] == "start" and report["inputs"][0]["shape"] == []
    assert [o["name"] for o in report["outputs"]] == ["result"]
    assert report["outputs"][0]["shape"] == []
    assert report["findings"] == []
    assert report["run_command"].endswith("--feed start=start.npy --fetch result")


def test_nested_loops_have_depths_and_parents():
    graph = Graph()
    outer_exit = while_loop(graph, placeholder(graph, "start", []), "outer")
    inner_init = op(graph, "Identity", "inner_init", graph.node("outer/Identity"))
    inner_exit = while_loop(graph, inner_init, "outer/inner")
    # The inner loop's result must go somewhere inside the outer loop: into its NextIteration.
    graph.node("outer/mul").set_input(0, op(graph, "Add", "outer/add", graph.node("outer/Identity"), inner_exit).output(0))
    op(graph, "Identity", "result", outer_exit)
    graph.verify()
    frames = {f["name"]: f for f in inspect_graph(graph)["frames"]}
    assert frames["outer/ctx"]["depth"] == 1 and frames["outer/ctx"]["parent"] is None
    assert frames["outer/inner/ctx"]["depth"] == 2 and frames["outer/inner/ctx"]["parent"] == "outer/ctx"


def test_parameters_count_float_weights_and_variables():
    graph = Graph()
    const(graph, "w", np.ones((3, 4)))                           # 12 float32 elements: counted
    const(graph, "w64", np.ones(5), dtype=dtypes.float64)        # 5 float64 elements: counted
    const(graph, "epsilon", 1e-5)                                # a scalar: a hyperparameter
    const(graph, "ids", [1, 2, 3], dtype=dtypes.int32)           # integers: not a weight
    graph.add_node("VariableV2", "v", attrs={"shape": [2, 5], "dtype": dtypes.float32})
    graph.add_node("VarHandleOp", "h", attrs={"shape": [7], "dtype": dtypes.float16})
    graph.add_node("VarHandleOp", "open", attrs={"shape": [None, 2], "dtype": dtypes.float32})
    graph.verify()
    assert inspect_graph(graph)["parameters"] == {
        "tensors": 4, "elements": 12 + 5 + 10 + 7, "bytes": 48 + 40 + 40 + 14, "unknown_shape_variables": 1}


def test_outputs_sinks_devices_and_optional_inputs():
    graph = Graph()
    x = placeholder(graph, "in/x", [2])
    rate = graph.add_node("PlaceholderWithDefault", "rate", inputs=[const(graph, "one", 1.0).output(0)],
                          attrs={"dtype": dtypes.float32, "shape": []})
    y = op(graph, "Mul", "y", x, rate)
    y.device = "/job:localhost/replica:0/task:0/device:CPU:0"
    graph.add_node("NoOp", "train", control_inputs=[y])
    op(graph, "Relu", "z", x).device = "/device:CPU:0"
    op(graph, "Switch", "sw", x, placeholder(graph, "flag", [], dtypes.bool_))
    graph.verify()
    report = inspect_graph(graph, "g.pb")
    # The unused Switch is cond bookkeeping: not a real output, listed with the reason.
    assert [(o["name"], o["op"]) for o in report["outputs"]] == [("z", "Relu")]
    assert report["left_out_outputs"] == [
        {"name": name, "op": "Switch", "reason": "cond bookkeeping: a Switch nobody uses"} for name in ("sw", "sw:1")]
    assert report["sinks"] == [{"name": "train", "op": "NoOp"}]
    assert report["devices"] == [{"device": "(unplaced)", "nodes": 6},
                                 {"device": "/device:CPU:0", "nodes": 1},
                                 {"device": "/job:localhost/replica:0/task:0/device:CPU:0", "nodes": 1}]
    assert {i["name"]: i["optional"] for i in report["inputs"]} == {"in/x": False, "rate": True, "flag": False}
    # The optional input is not fed; a scoped name gets a flat file name.
    assert report["run_command"] == "dftool run g.pb --feed in/x=in_x.npy --feed flag=flag.npy --fetch z"


def test_findings():
    graph = Graph()
    placeholder(graph, "unused", [3])
    a, b = const(graph, "a", np.ones((2, 3))), const(graph, "b", np.ones((4, 5)))
    op(graph, "MatMul", "bad_matmul", a, b)
    odd = op(graph, "Identity", "odd", a)
    odd.set_attr("colour", "blue")
    odd.set_attr("_hidden", 1)                   # '_'-prefixed attrs are annotations: fine
    odd.device = "/gpu:0:extra"
    # A loop with no way out: none of its nodes leads to an output.
    enter = op(graph, "Enter", "spin/Enter", a, frame_name="spin")
    merge = op(graph, "Merge", "spin/Merge", enter, enter, N=2)
    merge.set_input(1, op(graph, "NextIteration", "spin/NextIteration", merge).output(0))
    graph.verify()
    findings = {(f["kind"], f["node"]) for f in inspect_graph(graph)["findings"]}
    assert findings == {("shape_error", "bad_matmul"), ("undeclared_attr", "odd"), ("bad_device", "odd"),
                        ("unused_input", "unused"), ("unreachable", "spin/Enter"), ("unreachable", "spin/Merge"),
                        ("unreachable", "spin/NextIteration")}


@pytest.mark.parametrize("device, valid", [
    ("/job:localhost/replica:0/task:0/device:CPU:0", True), ("/device:GPU:*", True), ("/cpu:0", True),
    ("/job:worker/task:1", True), ("/device:XLA_GPU:0", True), ("/gpu:0:extra", False), ("cpu0", False),
    ("/device:", False), ("/task:one", False),
])
def test_device_names(device, valid):
    assert is_valid_device(device) is valid


# --- the command line -------------------------------------------------------------------------

def test_tables_on_stdout_and_nothing_on_stderr(mlp_file):
    rc, stdout, stderr = run_dftool("inspect", mlp_file)
    assert rc == 0 and stderr == ""
    for text in ["10 nodes", "MatMul", "logits", "[?,4]", f"{MLP_PARAMETERS} elements", "run it with:",
                 f"dftool run {mlp_file} --feed x=x.npy --fetch logits"]:
        assert text in stdout, text


def test_quiet_still_prints_the_tables_asked_for(mlp_file):
    rc, stdout, stderr = run_dftool("inspect", "-q", mlp_file)
    assert rc == 0 and stderr == "" and "MatMul" in stdout
    rc, stdout, stderr = run_dftool("-q", "inspect", mlp_file, "--json")
    assert rc == 0 and stderr == "" and json.loads(stdout)["node_count"] == 10


@pytest.mark.parametrize("text", [False, True], ids=["binary", "text"])
def test_stdin(text):
    report = inspect_json("-", input=serialize(mlp_graph(), text=text))
    assert report["graph"] == "-" and report["node_count"] == 10
    assert report["run_command"].startswith("dftool run - --feed x=x.npy")


def test_text_file(tmp_path):
    path = write_graph(while_loop_graph(), tmp_path / "loop.pbtxt")
    assert open(path).read().startswith("node {")
    assert inspect_json(path)["node_count"] == 13


def test_report_file(mlp_file, tmp_path):
    target = tmp_path / "report.json"
    target.write_text("old")
    rc, stdout, stderr = run_dftool("inspect", "-q", mlp_file, "--report", str(target))
    assert rc == 0 and stderr == "" and "MatMul" in stdout   # the tables still: -q keeps results
    assert json.loads(target.read_text()) == inspect_json(mlp_file)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mlp.pb", "report.json"]  # no temp files left


def test_report_into_a_missing_directory_is_a_usage_error(mlp_file, tmp_path):
    rc, _, stderr = run_dftool("inspect", mlp_file, "--report", str(tmp_path / "no" / "r.json"))
    assert rc == 2 and stderr.startswith("error: ") and len(stderr.splitlines()) == 1


def test_version_and_help():
    rc, stdout, _ = run_dftool("--version")
    assert rc == 0 and stdout.startswith("dftool, version ")
    rc, stdout, _ = run_dftool("--help")
    assert rc == 0 and "inspect" in stdout and "--version" in stdout
    rc, stdout, _ = run_dftool("inspect", "--help")
    assert rc == 0 and all(flag in stdout for flag in ["GRAPH", "--json", "--report", "-q", "--debug"])
