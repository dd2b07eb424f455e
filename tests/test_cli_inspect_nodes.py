"""`dftool inspect --nodes/--op/--match`, `--costs` and `--tensorboard`: exact tables, the JSON
listing, usage errors, and the event file read back."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphtool.proto import event_pb2
from graphtool.proto.graph_pb2 import GraphDef
from tests.helpers import error_line, run_dftool

SAMPLES = Path(__file__).resolve().parent.parent / "sample_graphs"
MLP = str(SAMPLES / "mlp.pb")

MLP_NODES_WITH_COSTS = f"""\
graph {MLP}: 11 nodes

nodes
name            op           device  outputs          inputs                      FLOPs  MACs  memory bytes
x               Placeholder          float32 [?,16]                                   0     0             0
dense/kernel    Const                float32 [16,32]                                  0     0             0
dense/MatMul    MatMul               float32 [?,32]   x, dense/kernel             1,024   512         2,240
dense/bias      Const                float32 [32]                                     0     0             0
dense/BiasAdd   BiasAdd              float32 [?,32]   dense/MatMul, dense/bias       32     0           384
dense/Relu      Relu                 float32 [?,32]   dense/BiasAdd                  32     0           256
logits/kernel   Const                float32 [32,10]                                  0     0             0
logits/MatMul   MatMul               float32 [?,10]   dense/Relu, logits/kernel     640   320         1,448
logits/bias     Const                float32 [10]                                     0     0             0
logits/BiasAdd  BiasAdd              float32 [?,10]   logits/MatMul, logits/bias     10     0           120
probs           Softmax              float32 [?,10]   logits/BiasAdd                 50     0            80
note: 6 node(s) counted with unknown dims = 1 (e.g. batch 1)
"""


def test_nodes_with_costs_table():
    code, stdout, stderr = run_dftool("inspect", MLP, "--nodes", "--costs")
    assert code == 0, stderr
    assert stdout == MLP_NODES_WITH_COSTS


def test_op_and_match_filter():
    code, stdout, stderr = run_dftool("inspect", MLP, "--op", "MatMul,BiasAdd", "--match", "^logits/")
    assert code == 0, stderr
    assert stdout == f"""\
graph {MLP}: 2 of 11 nodes

nodes
name            op       device  outputs         inputs
logits/MatMul   MatMul           float32 [?,10]  dense/Relu, logits/kernel
logits/BiasAdd  BiasAdd          float32 [?,10]  logits/MatMul, logits/bias
"""


def test_nodes_json_lists_outputs_inputs_and_devices():
    code, stdout, stderr = run_dftool("inspect", str(SAMPLES / "multi_device.pb"), "--match", ".", "--json")
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["schema"] == "dftool.inspect_nodes/1" and report["match"] == "." and report["ops"] == []
    assert report["count"] == report["node_count"] == len(report["nodes"])
    assert any(node["device"] for node in report["nodes"])
    code, stdout, _ = run_dftool("inspect", MLP, "--op", "MatMul", "--json")
    first = json.loads(stdout)["nodes"][0]
    assert first == {"name": "dense/MatMul", "op": "MatMul", "device": None,
                     "outputs": [{"name": "dense/MatMul", "dtype": "float32", "shape": [None, 32]}],
                     "inputs": ["x", "dense/kernel"]}


def test_control_inputs_are_listed_with_a_caret(tmp_path):
    from tests.helpers import graph_def, node_def, write_graph

    path = write_graph(graph_def(node_def("a", "NoOp"), node_def("b", "NoOp", ["^a"])), tmp_path / "g.pb")
    code, stdout, stderr = run_dftool("inspect", path, "--match", "^b$", "--json")
    assert code == 0, stderr
    assert json.loads(stdout)["nodes"] == [{"name": "b", "op": "NoOp", "device": None, "outputs": [], "inputs": ["^a"]}]


def test_bad_regex_and_unknown_op_are_usage_errors():
    code, _, stderr = run_dftool("inspect", MLP, "--match", "dense/(")
    assert code == 2
    assert error_line(stderr) == ("error: --match 'dense/(': not a regular expression "
                                  "(missing ), unterminated subpattern at position 6)")
    code, _, stderr = run_dftool("inspect", MLP, "--op", "Matmul")
    assert code == 2
    assert error_line(stderr).startswith("error: --op Matmul: no op of that name in the graph or known to dftool")
    assert "did you mean 'MatMul'?" in stderr


def test_known_op_not_in_the_graph_lists_nothing():
    code, stdout, stderr = run_dftool("inspect", MLP, "--op", "Conv2D")
    assert code == 0, stderr
    assert stdout.startswith(f"graph {MLP}: 0 of 11 nodes")


def test_costs_in_the_summary_and_report():
    code, stdout, stderr = run_dftool("inspect", MLP, "--costs")
    assert code == 0, stderr
    assert """\
costs by op (one run)
op       nodes  FLOPs  MACs  memory bytes
MatMul       2  1,664   832         3,688
Softmax      1     50     0            80
BiasAdd      2     42     0           504
Relu         1     32     0           256

costs: 1,788 FLOPs, 832 MACs, 4,528 bytes of memory access; 874 parameters (3,496 bytes), model size 3,496 bytes
  note: 6 node(s) counted with unknown dims = 1 (e.g. batch 1)
""" in stdout
    code, stdout, _ = run_dftool("inspect", MLP, "--costs", "--json")
    costs = json.loads(stdout)["costs"]
    assert costs["total"] == {"nodes": 11, "flops": 1788, "macs": 832, "bytes_accessed": 4528,
                              "unknown_nodes": 0, "assumed_nodes": 6}
    assert costs["parameters"] == 874 and costs["model_bytes"] == 3496
    code, stdout, _ = run_dftool("inspect", MLP)
    assert "costs" not in stdout


def test_checkpoint_rejects_graph_options():
    ckpt = Path(__file__).resolve().parent / "fixtures" / "checkpoints"
    prefix = next(p for p in sorted(ckpt.rglob("*.index")))
    code, _, stderr = run_dftool("inspect", str(prefix), "--nodes")
    assert code == 2 and "--nodes/--op/--match describes a graph; a checkpoint has none" in stderr


def test_tensorboard_event_holds_the_graphdef(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing import event_file_loader

    logdir = tmp_path / "logs"
    code, stdout, stderr = run_dftool("inspect", MLP, "--tensorboard", str(logdir), "--op", "Softmax")
    assert code == 0, stderr
    assert f"wrote the graph for TensorBoard to {logdir}" in stderr
    (path,) = logdir.iterdir()
    events = [event_pb2.Event.FromString(r) for r in event_file_loader.RawEventFileLoader(str(path)).Load()]
    assert events[0].file_version == "brain.Event:2"
    written = GraphDef.FromString(events[1].graph_def)
    original = GraphDef.FromString(Path(MLP).read_bytes())
    assert written == original


def test_tensorboard_to_an_unwritable_place_is_one_error_line(tmp_path):
    pytest.importorskip("tensorboard")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, stderr = run_dftool("inspect", MLP, "--tensorboard", str(blocker / "logs"))
    assert code != 0 and "Traceback" not in stderr
    assert error_line(stderr).startswith("error: ") and str(blocker) in error_line(stderr)


def test_an_invalid_graph_is_listed_and_exits_3(tmp_path):
    from tests.helpers import const_def, graph_def, node_def, write_graph

    path = write_graph(graph_def(const_def("c", [1.0, 2.0]), node_def("lost", "Identity", ["nowhere"], T=1)),
                       tmp_path / "bad.pb")
    code, stdout, stderr = run_dftool("inspect", path, "--nodes")
    assert code == 3
    assert stdout.startswith(f"graph {path}: ") and "\nc " in stdout
    assert error_line(stderr).startswith(f"error: {path}: node 'lost'")
