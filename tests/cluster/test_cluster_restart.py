"""Restart after a lost worker (issue: state that survives): `dftool run --cluster ... --save-every K
--max-restarts R` on TensorFlow's Momentum MLP split over two tasks. Killing a worker mid-run
replaces it, every task restores the latest checkpoint, and the run ends with exit 0 and the
variables of an uninterrupted run; a loss beyond --max-restarts fails naming the task."""
from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from graphtool import graph_io
from graphtool.checkpoint.bundle import BundleReader
from graphtool.ir import from_graphdef, to_graphdef

from .processes import Dftool

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
CASE = Path(__file__).resolve().parents[1] / "fixtures" / "training_runs" / "mlp_momentum_resource"
TASK1 = "/job:worker/replica:0/task:1/device:CPU:0"
STEPS = 60


@pytest.fixture(scope="module")
def split_graph(tmp_path_factory):
    """The case's graph with its second hidden layer and logits (variables, slots) on worker:1."""
    graph = from_graphdef(graph_io.load_graphdef(str(CASE / "graph.pb")), "split")
    for node in graph.nodes:
        if node.name.split("/")[0] in ("hidden2", "logits"):
            node.device = TASK1
    path = tmp_path_factory.mktemp("restart") / "split.pb"
    path.write_bytes(to_graphdef(graph).SerializeToString())
    return path


def _training(split_graph, join_spec, checkpoints: Path, *extra: str) -> Dftool:
    return Dftool("run", str(split_graph), "--cluster", str(join_spec), "-v", "--init", "init",
                  "--target", "train", "--steps", str(STEPS), "--fetch", "loss:0", "--feeds", str(CASE / "feeds.npz"),
                  "--checkpoint-dir", str(checkpoints), "--save-every", "10", "--log-every", "1", *extra)


def _wait_for(dftool: Dftool, pattern: str, after: int = 0, timeout: float = 120.0) -> tuple[re.Match, int]:
    """The first line from index `after` on matching `pattern`, and its index."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for index, line in enumerate(list(dftool.lines)[after:], start=after):
            if match := re.search(pattern, line):
                return match, index
        if dftool.process.poll() is not None:
            break
        time.sleep(0.01)
    raise AssertionError(f"no line matching {pattern!r}:\n" + "\n".join(dftool.lines))


def _final_variables(checkpoints: Path) -> dict:
    reader = BundleReader(checkpoints / f"model.ckpt-{STEPS}")
    return {key: reader.read(key) for key in reader.keys() if key}


def test_a_worker_killed_mid_run_is_replaced_and_the_run_ends_as_if_uninterrupted(split_graph, join_spec, tmp_path):
    calm = _training(split_graph, join_spec, tmp_path / "calm")
    try:
        code, _, line = calm.finish(timeout=300)
    finally:
        calm.kill()
    assert code == 0, calm.lines

    dftool = _training(split_graph, join_spec, tmp_path / "killed", "--max-restarts", "1")
    try:
        victim = dftool.tasks(2)["worker:1"]["pid"]
        _wait_for(dftool, r"^step 30/60")
        os.kill(victim, signal.SIGKILL)
        code, _, line = dftool.finish(timeout=300)
    finally:
        dftool.kill()
    assert code == 0, dftool.lines
    text = "\n".join(dftool.lines)
    lost = re.search(r"task worker:1 was lost at step (\d+): task worker:1 \(Ray node \S+, pid (\d+)\)", text)
    assert lost and int(lost.group(2)) == victim, text
    restored = re.search(r"restarted task worker:1 \(now pid (\d+)\); every task restored (\S+)model\.ckpt-(\d+) "
                         r"\(step (\d+)\); redoing (\d+) step\(s\)", text)
    assert restored and int(restored.group(1)) != victim, text
    failed_step, saved_step = int(lost.group(1)), int(restored.group(3))
    assert saved_step == (failed_step - 1) // 10 * 10 and int(restored.group(5)) == failed_step - 1 - saved_step
    assert f"step {STEPS}/{STEPS}" in text
    # Nothing before the checkpoint was lost: the variables equal the uninterrupted run's.
    calm_values, values = _final_variables(tmp_path / "calm"), _final_variables(tmp_path / "killed")
    assert calm_values.keys() == values.keys() and len(values) >= 13
    for key in values:
        np.testing.assert_allclose(values[key], calm_values[key], rtol=1e-6, atol=1e-7, err_msg=key)
    state = (tmp_path / "killed" / "checkpoint").read_text()
    assert f'model_checkpoint_path: "model.ckpt-{STEPS}"' in state


def test_a_second_loss_beyond_max_restarts_fails_naming_the_task(split_graph, join_spec, tmp_path):
    dftool = _training(split_graph, join_spec, tmp_path / "twice", "--max-restarts", "1", "--steps", "100000")
    try:
        victim = dftool.tasks(2)["worker:1"]["pid"]
        _wait_for(dftool, r"^step 20/")
        os.kill(victim, signal.SIGKILL)
        restarted, at = _wait_for(dftool, r"restarted task worker:1 \(now pid (\d+)\)")
        _wait_for(dftool, r"^step \d+/", after=at)   # a step on the replacement
        os.kill(int(restarted.group(1)), signal.SIGKILL)
        code, _, line = dftool.finish(timeout=120)
    finally:
        dftool.kill()
    assert code == 1, dftool.lines
    assert line.startswith("error: task worker:1") and f"pid {restarted.group(1)}" in line \
        and "--max-restarts" in line, line
