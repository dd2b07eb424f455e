"""`dftool replicate` through the real entry point: graphs through files and pipes, the report
(validated against docs/schemas/replicate.schema.json), the replicated graph trained by `dftool
run --init init --target train`, and every error as one line with its exit code (OUT untouched)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from graphtool.errors import InvalidGraphError, UsageError
from graphtool.replicate import ReplicateOptions, replicate
from graphtool.replicate.buckets import Reduced, plan_buckets
from graphtool.replicate.devices import resolve_devices
from graphtool.dtypes import float32, float64, int32
from graphtool.shapes import Shape

from .helpers import REPO_ROOT, run_dftool
from .replicate_cases import CASES, load, single_device_losses

MLP = CASES["mlp64_adam_resource"][0]
CONV32 = REPO_ROOT / "tests" / "fixtures" / "training_runs" / "conv_sgd_ref"     # a batch of 3


def schema_errors(report: dict) -> list[str]:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((REPO_ROOT / "docs" / "schemas" / "replicate.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    return sorted(error.message for error in validator.iter_errors(report))


@pytest.mark.parametrize("mode", ["allreduce", "ps"])
def test_replicate_then_run_trains_to_the_single_device_losses(mode, tmp_path):
    out = tmp_path / "replicated.pb"
    code, stdout, stderr = run_dftool("replicate", MLP / "graph.pb", out, "--replicas", "2", "--split", "x",
                                      "--split", "labels", "--mode", mode, "--fuse-bytes", "1000", "--json")
    assert code == 0, stderr
    report = json.loads(stdout)
    assert schema_errors(report) == []
    assert report["schema"] == "dftool.replicate/1" and report["mode"] == mode and report["replicas"] == 2
    assert [s["input"] for s in report["split"]] == ["x", "labels"] and report["losses"] == ["loss"]
    assert report["gradients_reduced"] == 6 and report["nodes"]["replicated"] > 0
    if mode == "allreduce":
        assert report["fusion"]["reductions"] == 3 and report["fusion"]["fused_bytes"] == 800
    assert f"2 replica(s) on cpu:0, cpu:1 ({mode})" in stderr
    code, _, stderr = run_dftool("run", out, "--init", "init", "--target", "train", "--steps", "20", "--fetch",
                                 "loss:0", "--feeds", MLP / "feeds.npz", "--output", tmp_path / "losses.npz", "-q")
    assert code == 0, stderr
    losses = np.load(tmp_path / "losses.npz")["loss:0"]
    np.testing.assert_allclose(losses, single_device_losses("mlp64_adam_resource"), rtol=1e-10, atol=0)


def test_replicate_reads_and_writes_pipes(tmp_path):
    graph = (MLP / "graph.pb").read_bytes()
    code, replicated, stderr = run_dftool("replicate", "-", "-", "--replicas", "4", "--split", "x,labels", "-q",
                                          input=graph, binary=True)
    assert code == 0 and stderr == "", stderr
    code, stdout, stderr = run_dftool("run", "-", "--init", "init", "--target", "train", "--steps", "3", "--fetch",
                                      "loss", "--feeds", MLP / "feeds.npz", "--json", input=replicated)
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["training"]["steps_run"] == 3
    code, text, _ = run_dftool("replicate", MLP / "graph.pb", "-", "--replicas", "2", "--split", "x,labels",
                               "--text", "-q")
    assert code == 0 and 'op: "CollectiveReduceV2"' in text


@pytest.mark.parametrize("args, code, message", [
    (["--split", "nowhere"], 2, "error: --split: no node named 'nowhere' in the graph (hint: placeholders: x, labels"),
    (["--split", "loss"], 2, "error: --split: 'loss' is a Mean, not a placeholder"),
    (["--split", "x", "--devices", "cpu:0"], 2, "error: --devices: 1 device(s) for 2 replicas"),
    (["--split", "x", "--devices", "cpu:0,cpu:0"], 2, "error: --devices: 'cpu:0,cpu:0' names a device twice"),
    (["--split", "x", "--devices", "cpu:0,nonsense:x:y"], 2, "error: --devices: bad device"),
    (["--split", "x", "--devices", "tpu:0,cpu:0"], 2, "error: --devices: 'tpu:0' is a TPU device"),
    (["--split", "x", "--mode", "mirrored"], 2, "error: Invalid value for '--mode'"),
    (["--split", "x", "--loss", "hidden1/weights"], 2, "error: --loss: 'hidden1/weights' does not depend on the split"),
    (["--split", "x", "--loss", "nothing"], 2, "error: --loss: no node named 'nothing'"),
])
def test_usage_errors_are_one_line_and_leave_out_untouched(args, code, message, tmp_path):
    out = tmp_path / "out.pb"
    out.write_bytes(b"old")
    got, stdout, stderr = run_dftool("replicate", MLP / "graph.pb", out, "--replicas", "2", *args)
    assert got == code and stderr.startswith(message), stderr
    assert len(stderr.strip().splitlines()) == 1 and out.read_bytes() == b"old"


def test_a_graph_without_training_is_refused_naming_the_file(tmp_path):
    sample = REPO_ROOT / "sample_graphs" / "mlp.pb"
    code, _, stderr = run_dftool("replicate", sample, tmp_path / "out.pb", "--replicas", "2", "--split", "x")
    assert code == 3 and stderr.startswith(f"error: {sample}: no update op reads the split inputs"), stderr


def test_a_batch_that_does_not_divide_is_refused_when_known_and_fails_cleanly_when_fed(tmp_path):
    graph = load("mlp64_adam_resource")
    graph.node("x").set_attr("shape", [6, 6])
    with pytest.raises(InvalidGraphError, match=r"--split: input 'x' has a batch of 6, not divisible by 4 replicas"):
        replicate(graph, ReplicateOptions(replicas=4, split=["x"]))
    out = tmp_path / "conv.pb"     # batch unknown in the graph; 3 fed to 2 replicas
    assert run_dftool("replicate", CONV32 / "graph.pb", out, "--replicas", "2", "--split", "x,labels", "-q")[0] == 0
    code, _, stderr = run_dftool("run", out, "--init", "init", "--target", "train", "--steps", "2", "--fetch",
                                 "loss", "--feeds", CONV32 / "feeds.npz")
    assert code == 1 and "error: node 'x/replicate_split' (Split)" in stderr and "evenly divide" in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1


def test_integer_updates_of_per_batch_values_are_refused():
    from graphtool.builder import GraphBuilder

    b = GraphBuilder()
    x = b.placeholder("float32", [None, 3], name="x")
    counter = b.op("VariableV2", [], name="counter", dtype=int32, shape=Shape.scalar())
    count = b.op("Size", [x], name="count", out_type=int32)
    b.op("AssignAdd", [counter, count], name="tally")
    with pytest.raises(InvalidGraphError, match=r"node 'tally' \(AssignAdd\): input 1 is int32; only floating"):
        replicate(b.graph, ReplicateOptions(replicas=2, split=["x"]))


def test_fusion_buckets_pack_one_dtype_greedily_up_to_the_limit():
    tensors = [Reduced("a", float32, (10,)), Reduced("b", float64, (2,)), Reduced("c", float32, (20,)),
               Reduced("d", float32, (100,)), Reduced("e", float32, None), Reduced("f", float32, (5,))]
    buckets = plan_buckets(tensors, 128)
    assert [[m.key for m in b.members] for b in buckets] == [["a", "c"], ["b"], ["d"], ["e"], ["f"]]
    assert [b.nbytes for b in buckets] == [120, 16, 400, None, 20]
    assert [[m.key for m in b.members] for b in plan_buckets(tensors, 140)][0] == ["a", "c", "f"]
    assert [len(b.members) for b in plan_buckets(tensors, 0)] == [1] * 6


def test_devices_default_and_ps_layouts():
    assert resolve_devices(None, 3, "allreduce").replicas[2] == "/job:localhost/replica:0/task:0/device:CPU:2"
    layout = resolve_devices("worker:0/cpu:0,worker:1/cpu:0", 2, "allreduce")
    assert layout.replicas == ["/job:worker/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:1/device:CPU:0"]
    assert layout.shared == layout.replicas[0]
    ps = resolve_devices("ps:0/cpu:0,worker:0/cpu:0,worker:1/cpu:0", 2, "ps")
    assert ps.shared == "/job:ps/replica:0/task:0/device:CPU:0" and len(ps.replicas) == 2
    with pytest.raises(UsageError, match="3 device"):
        resolve_devices("cpu:0,cpu:1,cpu:2", 2, "allreduce")
