"""`dftool replicate --mode ps`: the variables and updates stay single on the parameter server,
the replicas compute gradients on their slices of the batch, the updates read their mean. The
replicated graphs train to the single-device losses on the full batch (float64 rtol 1e-10,
float32 1e-4)."""
from __future__ import annotations

import numpy as np
import pytest

from graphtool.placement.device_names import canonical_device_name
from graphtool.replicate import ReplicateOptions, replicate

from .replicate_cases import feeds, load, read_tensor, rtol, single_device_losses, train, variable_names

PS_RUNS = [("mlp64_adam_resource", 2), ("mlp64_adam_resource", 4), ("conv64_momentum_ref", 2),
           ("conv64_momentum_ref", 4), ("mlp64_sgd_random", 2), ("mlp_adam_ref", 2), ("mlp_momentum_resource", 4)]


@pytest.mark.parametrize("case, replicas", PS_RUNS)
def test_ps_mode_trains_to_the_single_device_losses(case, replicas):
    graph = load(case)
    out, report = replicate(graph, ReplicateOptions(replicas=replicas, split=["x", "labels"], mode="ps"))
    # init and train stay single in ps mode: the variables and updates are there
    assert report.mode == "ps" and report.losses == ["loss"] and not {"init", "train"} & set(report.targets)
    session, losses = train(out, feeds(case))
    np.testing.assert_allclose(losses, single_device_losses(case), rtol=rtol(case), atol=0)
    assert losses[-1] < losses[0]


def test_ps_mode_keeps_one_copy_of_each_variable_and_update_on_the_parameter_server():
    graph = load("mlp64_adam_resource")
    out, report = replicate(graph, ReplicateOptions(replicas=2, split=["x", "labels"], mode="ps"))
    ps = canonical_device_name("cpu:0")
    assert variable_names(out) == variable_names(graph)
    assert all(out.node(name).device == ps for name in variable_names(out))
    updates = [node for node in out if node.op == "ResourceApplyAdam"]
    assert len(updates) == 6 and {node.device for node in updates} == {ps}
    for update in updates:   # the gradient: the mean of the two replicas' on the parameter server
        mean = update.inputs[9].node
        assert mean.op == "RealDiv" and mean.name.endswith("/replicate_mean") and mean.device == ps
        summed = mean.inputs[0].node
        assert summed.op == "AddN" and {ref.node.device for ref in summed.inputs} == {
            canonical_device_name("cpu:0"), canonical_device_name("cpu:1")}
    assert report.buckets == [] and report.gradients_reduced == 6
    assert not [node for node in out if node.op.startswith("Collective")]


def test_ps_mode_with_its_own_parameter_server_device():
    """N + 1 devices: the parameter server first, the replicas on the rest."""
    graph = load("mlp64_sgd_random")
    out, report = replicate(graph, ReplicateOptions(replicas=2, split=["x", "labels"], mode="ps",
                                                    devices="cpu:2,cpu:0,cpu:1"))
    assert report.shared_device == canonical_device_name("cpu:2")
    assert report.devices == [canonical_device_name("cpu:0"), canonical_device_name("cpu:1")]
    assert out.node("hidden1/weights").device == canonical_device_name("cpu:2")
    assert out.node("hidden1/MatMul").device == canonical_device_name("cpu:0")
    assert out.node("replica_1/hidden1/MatMul").device == canonical_device_name("cpu:1")
    session, losses = train(out, feeds("mlp64_sgd_random"))
    np.testing.assert_allclose(losses, single_device_losses("mlp64_sgd_random"), rtol=1e-10, atol=0)
    final = session.run([read_tensor(out, "hidden1/weights")]).values[0]
    reference, _ = train(graph, feeds("mlp64_sgd_random"))
    np.testing.assert_allclose(final, reference.run([read_tensor(graph, "hidden1/weights")]).values[0], rtol=1e-10)
