"""`dftool replicate` in allreduce mode (the default): every replica holds the variables and its
copy of the per-example computation on its own device, its gradients are averaged with
CollectiveReduceV2 (fused into buckets) before its updates. The replicated MLP and conv net train
to the single-device losses on the full batch (float64 rtol 1e-10, float32 1e-4) on 2 and 4 local
devices, and the replicas' variables stay identical."""
from __future__ import annotations

import numpy as np
import pytest

from graphtool.dtypes import float64
from graphtool.placement.device_names import canonical_device_name
from graphtool.replicate import ReplicateOptions, replicate

from .replicate_cases import feeds, load, read_tensor, rtol, single_device_losses, train, variable_names

RUNS = [("mlp64_adam_resource", 2, 0), ("mlp64_adam_resource", 4, 1000), ("conv64_momentum_ref", 2, 1 << 20),
        ("conv64_momentum_ref", 4, 0), ("mlp64_sgd_random", 4, 1 << 20), ("mlp_adam_ref", 2, 1 << 20),
        ("mlp_momentum_resource", 4, 512)]


def const_value(ref):
    assert ref.node.op == "Const", ref.node.name
    return np.asarray(ref.node.attr("value"))


@pytest.mark.parametrize("case, replicas, fuse_bytes", RUNS)
def test_allreduce_trains_to_the_single_device_losses_with_identical_replicas(case, replicas, fuse_bytes):
    graph = load(case)
    out, report = replicate(graph, ReplicateOptions(replicas=replicas, split=["x", "labels"], fuse_bytes=fuse_bytes))
    assert report.losses == ["loss"] and {"init", "train"} <= set(report.targets)
    session, losses = train(out, feeds(case))
    np.testing.assert_allclose(losses, single_device_losses(case), rtol=rtol(case), atol=0)
    for name in variable_names(graph):
        values = session.run([read_tensor(out, name if i == 0 else f"replica_{i}/{name}")
                              for i in range(replicas)]).values
        for i, value in enumerate(values[1:], 1):
            np.testing.assert_array_equal(value, values[0], err_msg=f"replica {i}: {name}")


def test_every_replica_holds_every_variable_on_its_device():
    graph = load("mlp64_adam_resource")
    out, report = replicate(graph, ReplicateOptions(replicas=4, split=["x", "labels"]))
    names = variable_names(graph)
    assert report.variables == names and len(names) == 21     # weights, Adam slots, beta powers, global_step
    for i in range(4):
        device = canonical_device_name(f"cpu:{i}")
        for name in names:
            copy = out.node(name if i == 0 else f"replica_{i}/{name}")
            assert copy.device == device
            if i:   # a resource of its own on each device
                assert copy.attr("shared_name") in ("", f"replica_{i}/{graph.node(name).attr('shared_name')}")
    # the split inputs keep their names and full-batch shapes; replica i reads slice i
    for name in ("x", "labels"):
        assert out.node(name).op == "Placeholder" and out.node(name).attr("shape") == graph.node(name).attr("shape")
        split = out.node(f"{name}/replicate_split")
        assert split.op == "Split" and split.attr("num_split") == 4
    assert out.node("hidden1/MatMul").inputs[0] == out.node("x/replicate_split").output(0)
    assert out.node("replica_3/hidden1/MatMul").inputs[0] == out.node("x/replicate_split").output(3)


def test_gradients_are_all_reduced_with_add_and_div_in_fused_buckets():
    graph = load("mlp64_adam_resource")
    # weights 6x16, 16x16, 16x4 (768, 2048, 512 bytes) and biases 16, 16, 4 (128, 128, 32 bytes)
    out, report = replicate(graph, ReplicateOptions(replicas=2, split=["x", "labels"], fuse_bytes=1000))
    assert [(b["tensors"], b["bytes"]) for b in report.buckets] == [(4, 800), (1, 2048), (1, 768)]
    reduces = {i: [n for n in out if n.op == "CollectiveReduceV2" and n.device == canonical_device_name(f"cpu:{i}")]
               for i in range(2)}
    assert [len(nodes) for nodes in reduces.values()] == [3, 3]
    for i, nodes in reduces.items():
        assert {(n.attr("merge_op"), n.attr("final_op"), n.attr("T")) for n in nodes} == {("Add", "Div", float64)}
        assert [int(const_value(n.inputs[1])) for n in nodes] == [2, 2, 2]                  # group size
        assert len({int(const_value(n.inputs[2])) for n in nodes}) == 1                     # one group key
        assert [int(const_value(n.inputs[3])) for n in nodes] == [1, 2, 3]                  # instance per bucket
        assert all(ref.node.device == n.device for n in nodes for ref in n.inputs[1:])      # keys on the device
    fused = reduces[0][0]
    assert fused.inputs[0].node.op == "ConcatV2" and len(fused.inputs[0].node.inputs) == 5
    for update in (n for n in out if n.op == "ResourceApplyAdam"):
        grad = update.inputs[9].node
        assert grad.op in ("Reshape", "CollectiveReduceV2") and grad.device == update.device
    # no fusion: one all-reduce per gradient; a large limit: one bucket
    for fuse_bytes, expected in ((0, 6), (1 << 20, 1)):
        _, report = replicate(graph, ReplicateOptions(replicas=2, split=["x", "labels"], fuse_bytes=fuse_bytes))
        assert len(report.buckets) == expected and report.gradients_reduced == 6


def test_the_loss_is_the_replicas_mean_and_targets_run_every_replica():
    out, _ = replicate(load("conv64_momentum_ref"), ReplicateOptions(replicas=2, split=["x", "labels"]))
    loss = out.node("loss")
    assert loss.op == "RealDiv" and loss.inputs[0].node.op == "AddN"
    assert [ref.node.name for ref in loss.inputs[0].node.inputs] == ["replica_0/loss", "replica_1/loss"]
    assert float(const_value(loss.inputs[1])) == 2.0
    assert sorted(n.name for n in out.node("init").control_inputs) == ["replica_0/init", "replica_1/init"]
    train = out.node("train")       # ref variables: TF's train op is the global step's AssignAdd
    assert train.op == "Identity" and train.inputs[0].node.name == "replica_0/train"
    assert [n.name for n in train.control_inputs] == ["replica_1/train"]
    # the summary and the saver stay single, read the mean loss and replica 0's variables
    summary = next(n for n in out if n.op == "ScalarSummary")
    assert summary.inputs[1].node is loss
    save = out.node("save/SaveV2")
    assert all(not ref.node.name.startswith("replica_") for ref in save.inputs)


def test_a_random_initializer_runs_once_and_every_replica_assigns_its_value():
    graph = load("mlp64_sgd_random")
    out, _ = replicate(graph, ReplicateOptions(replicas=4, split=["x", "labels"]))
    randoms = [n for n in out if n.op == "RandomStandardNormal"]
    assert len(randoms) == len([n for n in graph if n.op == "RandomStandardNormal"]) == 1
    session, _ = train(out, feeds("mlp64_sgd_random"), steps=0)
    values = session.run(["hidden1/weights:0", *(f"replica_{i}/hidden1/weights:0" for i in (1, 2, 3))]).values
    assert values[0].std() > 0
    for value in values[1:]:
        np.testing.assert_array_equal(value, values[0])


def test_restoring_a_tensorflow_checkpoint_restores_every_replica():
    """mlp_adam_ref's TF checkpoint after step 20, restored through the graph's own Saver (its
    filename tensor fed, as Saver.restore does): both replicas resume, and the next steps give
    TensorFlow's resumed losses."""
    import json

    from graphtool.checkpoint.bundle import BundleReader

    from .replicate_cases import CASES

    directory = CASES["mlp_adam_ref"][0]
    spec = json.loads((directory / "case.json").read_text())
    resume = spec["resume"]
    out, report = replicate(load("mlp_adam_ref"), ReplicateOptions(replicas=2, split=["x", "labels"]))
    assert "save/restore_all" in report.targets
    reader = BundleReader(directory / resume["prefix"])
    session, _ = train(out, feeds("mlp_adam_ref"), steps=0)
    session.run([], {spec["saver"]["filename_tensor"]: np.asarray(str(directory / resume["prefix"]).encode())},
                targets=[spec["saver"]["restore_op"]])
    for name in ("hidden1/weights", "global_step"):
        np.testing.assert_array_equal(session.run([f"replica_1/{name}:0"]).values[0], reader.read(name))
    losses = [float(session.run(["loss:0"], feeds("mlp_adam_ref"), targets=["train"]).values[0])
              for _ in range(resume["after_step"], spec["steps"])]
    np.testing.assert_allclose(losses, np.load(directory / resume["losses"]), rtol=1e-4, atol=0)
