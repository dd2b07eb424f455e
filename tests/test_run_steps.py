"""`dftool run --init --target --steps` on TensorFlow's own training runs (fixtures/training_runs,
made by tools/make_training_run_fixtures.py): per-step losses and final variables equal TF's;
per-step feeds; checkpoints in TF's format saved, kept, restored and resumed; bad combinations."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphtool.checkpoint.bundle import BundleReader

from .helpers import run_dftool

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "training_runs"


def case(name: str):
    return json.loads((FIXTURES / name / "case.json").read_text()), FIXTURES / name


def train(name: str, tmp_path, *extra, steps: int = 50, per_step: bool = False, output: str = "out.npz"):
    spec, where = case(name)
    feeds = ("--feeds-per-step", where / "feeds_per_step.npz") if per_step else ("--feeds", where / "feeds.npz")
    out = tmp_path / output
    code, _, stderr = run_dftool("run", where / "graph.pb", "--init", spec["init"], "--target", spec["train"],
                                 "--steps", steps, "--fetch", spec["loss"], *feeds, "--output", out, *extra)
    return code, stderr, out, spec, where


def assert_variables(checkpoint_prefix, expected_file, rtol):
    """Every variable TensorFlow ended with, read back from a checkpoint dftool wrote."""
    reader = BundleReader(checkpoint_prefix)
    expected = np.load(expected_file)
    for name in expected.files:
        np.testing.assert_allclose(reader.read(name), expected[name], rtol=rtol, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("name, per_step", [("mlp_adam_ref", False), ("conv_momentum_resource", False),
                                            ("mlp_sgd_resource", True), ("conv_adam_ref", True)])
def test_fifty_steps_reproduce_tensorflows_losses(name, per_step, tmp_path):
    code, stderr, out, spec, where = train(name, tmp_path, per_step=per_step)
    assert code == 0, stderr
    losses = np.load(out)[spec["loss"]]
    expected = np.load(where / "expected" / ("losses_per_step.npy" if per_step else "losses.npy"))
    assert losses.shape == (50,)
    np.testing.assert_allclose(losses, expected, rtol=spec["rtol"])
    # The log: a line every 5 steps (about ten per run), the last one included.
    logged = [line for line in stderr.splitlines() if line.startswith("step ")]
    assert [line.split()[1] for line in logged] == [f"{k}/50" for k in range(5, 51, 5)]
    assert f"{spec['loss']}=" in logged[-1]


def test_feeds_per_step_must_cover_every_step(tmp_path):
    code, stderr, *_ = train("mlp_sgd_ref", tmp_path, steps=60, per_step=True)
    assert code == 2
    last = stderr.strip().splitlines()[-1]
    assert "--feeds-per-step" in last and "feeds_per_step.npz" in last and "50 step(s)" in last and "60" in last


@pytest.mark.parametrize("args, message", [
    (("--save-every", "5"), "--save-every needs --checkpoint-dir"),
    (("--max-restarts", "1"), "--max-restarts needs --cluster"),
    (("--restore", "latest"), "--restore latest: name the directory with --checkpoint-dir"),
    (("--init", "nope"), "init 'nope': no node named 'nope'"),
])
def test_bad_step_options_are_refused_before_running(args, message, tmp_path):
    spec, where = case("mlp_sgd_ref")
    code, _, stderr = run_dftool("run", where / "graph.pb", "--target", spec["train"], "--steps", 3,
                                 "--fetch", spec["loss"], "--feeds", where / "feeds.npz", *args)
    assert code == 2 and message in stderr.strip().splitlines()[-1], stderr


def _events(logdir):
    accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    events = accumulator.EventAccumulator(str(logdir), size_guidance={"scalars": 0})
    events.Reload()
    return events


def test_logdir_writes_the_graphs_summaries_every_step_and_the_graph(tmp_path):
    """TensorBoard's own reader finds the merged summary's loss for each of the 50 steps (TF's
    losses) and its histogram, the graph, and the traced last step's run metadata."""
    code, stderr, out, spec, where = train("mlp_adam_resource", tmp_path, "--logdir", tmp_path / "logs",
                                           "--trace", tmp_path / "trace.json")
    assert code == 0, stderr
    events = _events(tmp_path / "logs")
    tags = events.Tags()
    loss_tag = next(tag for tag in tags["scalars"] if tag.startswith("loss"))
    scalars = events.Scalars(loss_tag)
    assert [s.step for s in scalars] == list(range(1, 51))
    np.testing.assert_allclose([s.value for s in scalars], np.load(where / "expected" / "losses.npy"), rtol=spec["rtol"])
    assert tags["histograms"] and tags["graph"]
    assert "step_50" in tags["run_metadata"]


def test_logdir_without_summary_ops_writes_the_scalar_fetches(tmp_path):
    graph = Path(__file__).resolve().parent / "fixtures" / "training" / "sgd_ref" / "graph.pb"
    code, _, stderr = run_dftool("run", graph, "--init", "init", "--target", "train", "--steps", 4,
                                 "--fetch", "Mean:0", "--logdir", tmp_path / "logs", "--output", tmp_path / "out.npz")
    assert code == 0, stderr
    scalars = _events(tmp_path / "logs").Scalars("Mean")
    assert [s.step for s in scalars] == [1, 2, 3, 4]
    np.testing.assert_allclose([s.value for s in scalars], np.load(tmp_path / "out.npz")["Mean:0"], rtol=1e-6)


def test_checkpoints_every_k_steps_through_the_graphs_saver_keep_the_newest(tmp_path):
    """The graph's own tf.train.Saver writes model.ckpt-STEP every 10 steps; --keep 3 leaves the
    newest three and the state file names them; the last holds TensorFlow's final variables."""
    checkpoints = tmp_path / "ckpt"
    code, stderr, out, spec, where = train("mlp_adam_ref", tmp_path, "--checkpoint-dir", checkpoints,
                                           "--save-every", 10, "--keep", 3)
    assert code == 0, stderr
    assert sorted(p.name for p in checkpoints.glob("*.index")) == [f"model.ckpt-{k}.index" for k in (30, 40, 50)]
    state = (checkpoints / "checkpoint").read_text()
    assert state.splitlines()[0] == 'model_checkpoint_path: "model.ckpt-50"'
    assert [line for line in state.splitlines() if line.startswith("all_model")] == \
        [f'all_model_checkpoint_paths: "model.ckpt-{k}"' for k in (30, 40, 50)]
    assert_variables(checkpoints / "model.ckpt-50", where / "expected" / "final_variables.npz", spec["rtol"])
    assert [line for line in stderr.splitlines() if line.startswith("saved ")][-1].endswith("model.ckpt-50")


def test_a_run_resumed_from_its_latest_checkpoint_goes_on_as_one_run(tmp_path):
    """20 steps, then `--restore latest --steps 50`: steps 21-50 give TF's losses and variables."""
    checkpoints = tmp_path / "ckpt"
    code, stderr, *_ = train("conv_sgd_resource", tmp_path, "--checkpoint-dir", checkpoints, steps=20)
    assert code == 0, stderr
    code, stderr, out, spec, where = train("conv_sgd_resource", tmp_path, "--checkpoint-dir", checkpoints,
                                           "--restore", "latest", output="resumed.npz")
    assert code == 0, stderr
    assert f"restored {checkpoints / 'model.ckpt-20'} (step 20)" in stderr
    losses = np.load(out)[spec["loss"]]
    np.testing.assert_allclose(losses, np.load(where / "expected" / "losses.npy")[20:], rtol=spec["rtol"])
    assert_variables(checkpoints / "model.ckpt-50", where / "expected" / "final_variables.npz", spec["rtol"])


def test_a_checkpoint_tensorflow_wrote_restores_and_training_resumes(tmp_path):
    spec, where = case("mlp_adam_ref")
    resume = spec["resume"]
    code, stderr, out, spec, where = train("mlp_adam_ref", tmp_path, "--restore", where / resume["prefix"],
                                           "--checkpoint-dir", tmp_path / "ckpt")
    assert code == 0, stderr
    np.testing.assert_allclose(np.load(out)[spec["loss"]], np.load(where / resume["losses"]), rtol=spec["rtol"])
    assert_variables(tmp_path / "ckpt" / "model.ckpt-50", where / resume["final_variables"], spec["rtol"])


def test_a_graph_without_a_saver_gets_one_of_every_variable(tmp_path):
    """tests/fixtures/training graphs have no Saver: the added one keys tensors by variable name,
    and 2 steps + a restore + 2 more end where 4 steps in a row do."""
    graph = Path(__file__).resolve().parent / "fixtures" / "training" / "momentum_resource" / "graph.pb"
    spec = json.loads((graph.parent / "case.json").read_text())

    def run(checkpoints, steps, *extra):
        code, _, stderr = run_dftool("run", graph, "--target", "train", "--steps", steps, "--fetch", "read_0:0",
                                     "--checkpoint-dir", checkpoints, *extra)
        assert code == 0, stderr

    run(tmp_path / "straight", 4, "--init", "init")
    run(tmp_path / "stopped", 2, "--init", "init")
    assert set(spec["variables"]) <= set(BundleReader(tmp_path / "stopped" / "model.ckpt-2").keys())
    run(tmp_path / "stopped", 4, "--restore", "latest")
    straight, resumed = BundleReader(tmp_path / "straight" / "model.ckpt-4"), BundleReader(tmp_path / "stopped" / "model.ckpt-4")
    for variable in spec["variables"]:
        np.testing.assert_array_equal(resumed.read(variable), straight.read(variable), err_msg=variable)


@pytest.mark.parametrize("restore, message", [
    ("nowhere/model.ckpt-5", "--restore 'nowhere/model.ckpt-5': no checkpoint there"),
    ("latest", "--restore latest: no checkpoint in"),
])
def test_nothing_to_restore_is_refused(restore, message, tmp_path):
    code, stderr, *_ = train("mlp_sgd_ref", tmp_path, "--restore", restore, "--checkpoint-dir", tmp_path / "empty", steps=3)
    assert code == 2 and message in stderr.strip().splitlines()[-1], stderr


QUEUES = Path(__file__).resolve().parent / "fixtures" / "queues"


@pytest.mark.parametrize("threads", [1, 2])
def test_a_queue_fed_graph_trains_until_its_queue_is_closed(threads, tmp_path):
    """TensorFlow's queue-fed MLP: `--queue-runner` runs the batch enqueue op (a reader over a
    filename queue) on its threads; the 11th step finds the queue closed and drained, which ends
    the run cleanly after 10 steps; the event file holds the graph's summary (the batch queue's
    fullness) and the fetched loss for TensorBoard. With one thread the examples arrive in file
    order, so the losses and variables are TensorFlow's; two threads race for the records (as in
    TensorFlow), so only the run's shape is fixed."""
    spec = json.loads((QUEUES / "queue_training" / "case.json").read_text())
    expected = np.load(QUEUES / "queue_training" / "expected.npz")
    out, report = tmp_path / "out.npz", tmp_path / "report.json"
    code, _, stderr = run_dftool("run", "queue_training/graph.pb", "--init", spec["init"], "--target", spec["train"],
                                 "--steps", 50, "--fetch", spec["loss"], "--queue-runner",
                                 f"{spec['enqueue_op']}:{threads}", "--output", out, "--logdir", tmp_path / "logs",
                                 "--checkpoint-dir", tmp_path / "ckpt", "--report", report, cwd=QUEUES)
    assert code == 0, stderr
    assert "input exhausted after step 10" in stderr and "is closed and has insufficient elements" in stderr
    training = json.loads(report.read_text())["training"]
    assert training["steps_run"] == 10 and training["input_exhausted"]
    assert training["checkpoints"][-1].endswith("model.ckpt-10")
    losses = np.load(out)[spec["loss"]]
    events = _events(tmp_path / "logs")
    scalars = events.Scalars(spec["loss"][:-2])
    assert [s.step for s in scalars] == list(range(1, 11))
    np.testing.assert_allclose([s.value for s in scalars], losses, rtol=1e-6)
    assert [s.step for s in events.Scalars("batch/fraction_of_64_full")] == list(range(1, 11))
    if threads > 1:
        return
    np.testing.assert_allclose(losses, expected["losses"], rtol=1e-4)
    final = BundleReader(tmp_path / "ckpt" / "model.ckpt-10")
    for name in spec["variables"]:
        np.testing.assert_allclose(final.read(name), expected[f"final/{name}"], rtol=1e-4, atol=1e-6)


def test_a_queue_runner_naming_no_enqueue_op_is_refused(tmp_path):
    code, _, stderr = run_dftool("run", "queue_training/graph.pb", "--init", "init", "--target", "train",
                                 "--steps", 3, "--queue-runner", "loss", cwd=QUEUES)
    assert code == 2, stderr
    assert "--queue-runner" in stderr.strip().splitlines()[-1] and "loss" in stderr.strip().splitlines()[-1]


def test_a_terminal_shows_a_progress_bar_beside_the_step_log(tmp_path):
    from .helpers import run_dftool_on_terminal

    spec, where = case("mlp_sgd_ref")
    code, terminal, _ = run_dftool_on_terminal("run", where / "graph.pb", "--init", spec["init"], "--target",
                                               spec["train"], "--steps", 200, "--fetch", spec["loss"], "--feeds",
                                               where / "feeds.npz", stream="stderr")
    text = terminal.decode()
    assert code == 0 and "━" in text and "/200" in text
    assert "step 200/200  loss:0=" in text and "Traceback" not in text
