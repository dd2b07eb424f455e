"""`dftool replicate` across cluster workers: the replicas on worker tasks (separate processes, the
collectives over the cluster's rendezvous), in both modes, train to the single-device losses
(float64 rtol 1e-10); and `dftool run --cluster` runs a replicated graph from the command line."""
from __future__ import annotations

import numpy as np
import pytest

from graphtool.replicate import ReplicateOptions, replicate

from ..helpers import run_dftool
from ..replicate_cases import CASES, feeds, load, single_device_losses, train

pytestmark = pytest.mark.cluster

WORKERS = [f"worker:{k}/cpu:0" for k in range(3)]


@pytest.mark.parametrize("case, mode, devices", [
    ("mlp64_adam_resource", "allreduce", WORKERS[:2]),
    ("mlp64_adam_resource", "ps", WORKERS[:3]),          # the parameter server on worker 0, replicas on 1 and 2
])
def test_replicas_on_workers_train_to_the_single_device_losses(cluster3, case, mode, devices):
    replicas = len(devices) - (mode == "ps")
    out, report = replicate(load(case), ReplicateOptions(replicas=replicas, split=["x", "labels"], mode=mode,
                                                         devices=",".join(devices), fuse_bytes=1000))
    assert len(set(report.devices)) == replicas and all(d.startswith("/job:worker/") for d in report.devices)
    _, losses = train(out, feeds(case), cluster=cluster3)
    np.testing.assert_allclose(losses, single_device_losses(case), rtol=1e-10, atol=0)


@pytest.fixture(scope="module")
def join_four(cluster3, tmp_path_factory):
    """A cluster spec joining `cluster3`'s Ray instance with four worker tasks of its own that
    reserve no CPU (a task has one CPU device, so 4 replicas want 4 tasks)."""
    import json

    import ray

    path = tmp_path_factory.mktemp("join4") / "cluster.json"
    path.write_text(json.dumps({"address": ray.get_runtime_context().gcs_address,
                                "jobs": {"worker": [{"cpus": 0}] * 4}}))
    return path


@pytest.mark.parametrize("case, mode, replicas", [("conv64_momentum_ref", "allreduce", 4),
                                                  ("conv64_momentum_ref", "ps", 4)])
def test_dftool_run_on_four_workers_trains_a_replicated_graph(join_four, tmp_path, case, mode, replicas):
    directory = CASES[case][0]
    out = tmp_path / "replicated.pb"
    devices = ",".join(f"worker:{k}/cpu:0" for k in range(replicas))
    code, _, stderr = run_dftool("replicate", directory / "graph.pb", out, "--replicas", str(replicas),
                                 "--split", "x,labels", "--mode", mode, "--devices", devices, "-q")
    assert code == 0, stderr
    code, _, stderr = run_dftool("run", out, "--cluster", join_four, "--init", "init", "--target", "train",
                                 "--steps", "20", "--fetch", "loss:0", "--feeds", directory / "feeds.npz",
                                 "--output", tmp_path / "losses.npz", "-q", timeout=300)
    assert code == 0, stderr
    np.testing.assert_allclose(np.load(tmp_path / "losses.npz")["loss:0"], single_device_losses(case),
                               rtol=1e-10, atol=0)
