"""Record whole TF1 training runs (graph mode, tf.compat.v1) for end-to-end tests of `dftool run
--init/--target/--steps/--checkpoint-dir/--restore/--logdir`: an MLP and a small conv net, each
trained by GradientDescent, Momentum and Adam on reference and on resource variables.

    $TF_PYTHON tools/make_training_run_fixtures.py            # regenerate every case, then check
                                                              # them with dftool ($DFTOOL_PYTHON)
    $TF_PYTHON tools/make_training_run_fixtures.py --only mlp_sgd_ref
    python tools/make_training_run_fixtures.py --check [CASE ...]   # dftool only (no TensorFlow)

Per case, tests/fixtures/training_runs/<case>/ holds
- graph.pb: the GraphDef exported with as_graph_def() after everything was built: placeholders
  `x` and `labels`, variables with constant (seeded numpy) initial values, `init`
  (global_variables_initializer), the train op `train` (also increments `global_step`), `loss`,
  a tf.compat.v1.train.Saver (write_version V2; sharded in one case) and the merged summary of
  tf.compat.v1.summary.scalar('loss') and a histogram of the first layer's weights.
- feeds.npz: one batch (`x:0`, `labels:0`), fed on every one of the 50 steps;
  feeds_per_step.npz: the same keys with a leading step axis of 50 (step k feeds row k).
- expected/losses.npy, expected/final_variables.npz: the loss TensorFlow fetched on each step
  together with `train` (the loss before that step's update; float64 of the float32 values) and
  every global variable (slots, Adam's beta powers and global_step too; keyed by variable name,
  which is also its checkpoint key) after the 50 steps, with the fixed feeds;
  expected/losses_per_step.npy, expected/final_variables_per_step.npz: the same with the feeds of
  each step.
- case.json: node names (init, train, loss, inputs, saver filename/save/restore, summary),
  variables (name, dtype, shape, trainable), model, optimizer, steps, and the file names above.
- One case (RESUME_CASE) also has tf_ckpt/ (the checkpoint TensorFlow's Saver wrote after step 20
  with the fixed feeds, `checkpoint` state file with relative paths) and expected/resumed_losses.npy,
  the losses of steps 21-50 in a new session that restored it (case.json `resume`).

No random ops run (initial values are constants; no dropout), so another runtime can reproduce the
losses. Single-threaded sessions; re-running writes the same files. After writing, the script runs
the `--check` half in dftool's Python (a subprocess: this Python has TensorFlow, dftool's venv has
not) and reports how closely dftool's Session reproduces each case (rtol 1e-4).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "training_runs"
STEPS = 50
RESUME_AT = 20
RESUME_CASE = "mlp_adam_ref"
SHARDED_CASE = "conv_adam_resource"
RTOL = 1e-4
VARIABLE_ATOL = 1e-5         # near-zero elements of the final variables (slots, biases)
# The Python with dftool's dependencies that --check runs in (TensorFlow's own Python usually lacks
# them): $DFTOOL_PYTHON, else the repository's .venv.
DFTOOL_PYTHON = os.environ.get("DFTOOL_PYTHON", str(Path(__file__).resolve().parent.parent / ".venv" / "bin" / "python"))

MODELS = ("mlp", "conv")
OPTIMIZERS = ("sgd", "momentum", "adam")
CASES = [f"{model}_{optimizer}_{kind}" for model in MODELS for optimizer in OPTIMIZERS
         for kind in ("ref", "resource")]


# --------------------------------------------------------------------------- TensorFlow side

def make_feeds(model: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """One batch and 50 batches (step axis first) for a model; seeded per model, so every case of
    a model sees the same data."""
    rng = np.random.default_rng(2018 if model == "mlp" else 2019)
    # Labels from a fixed random linear teacher, so that training on fresh batches learns too.
    if model == "mlp":      # 8 examples, 6 features, one-hot labels over 4 classes
        x = rng.normal(size=(STEPS + 1, 8, 6)).astype(np.float32)
        classes = np.argmax(x @ rng.normal(size=(6, 4)), axis=-1)
        labels = np.eye(4, dtype=np.float32)[classes]
    else:                   # 3 images 6x6x2, int labels over 3 classes
        x = rng.normal(size=(STEPS + 1, 3, 6, 6, 2)).astype(np.float32)
        labels = np.argmax(x.reshape(STEPS + 1, 3, 72) @ rng.normal(size=(72, 3)), axis=-1).astype(np.int32)
    fixed = {"x:0": x[0], "labels:0": labels[0]}
    per_step = {"x:0": x[1:], "labels:0": labels[1:]}
    return fixed, per_step


def build(tf, model: str, optimizer: str, resource: bool, sharded: bool):
    """The training graph in the default graph; returns the nodes case.json names."""
    tf1 = tf.compat.v1
    rng = np.random.default_rng(7 + MODELS.index(model))

    def variable(name, shape, scale):
        value = (rng.normal(size=shape) * scale).astype(np.float32)
        return tf1.get_variable(name, initializer=value, use_resource=resource)

    if model == "mlp":
        x = tf1.placeholder(tf.float32, [None, 6], name="x")
        labels = tf1.placeholder(tf.float32, [None, 4], name="labels")
        with tf1.variable_scope("hidden1"):
            w1, b1 = variable("weights", (6, 16), 0.4), variable("biases", (16,), 0.1)
            h1 = tf.nn.relu(tf.matmul(x, w1) + b1)
        with tf1.variable_scope("hidden2"):
            w2, b2 = variable("weights", (16, 16), 0.25), variable("biases", (16,), 0.1)
            h2 = tf.nn.relu(tf.matmul(h1, w2) + b2)
        with tf1.variable_scope("logits"):
            w3, b3 = variable("weights", (16, 4), 0.25), variable("biases", (4,), 0.1)
            logits = tf.matmul(h2, w3) + b3
        xent = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits, name="xent")
        first = w1
    else:
        x = tf1.placeholder(tf.float32, [None, 6, 6, 2], name="x")
        labels = tf1.placeholder(tf.int32, [None], name="labels")
        with tf1.variable_scope("conv1"):
            kernel, bias = variable("kernel", (3, 3, 2, 4), 0.3), variable("bias", (4,), 0.1)
            conv = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, kernel, [1, 1, 1, 1], "SAME"), bias))
            pool = tf.nn.max_pool2d(conv, 2, 2, "VALID")                       # [batch, 3, 3, 4]
        with tf1.variable_scope("dense"):
            w, b = variable("weights", (36, 3), 0.25), variable("biases", (3,), 0.1)
            logits = tf.matmul(tf.reshape(pool, [-1, 36]), w) + b
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits, name="xent")
        first = kernel
    loss = tf.reduce_mean(xent, name="loss")
    # As tf1.train.get_or_create_global_step() (which always makes a resource variable), but of
    # the case's variable kind, so a ref case holds ref variables only.
    global_step = tf1.get_variable("global_step", shape=[], dtype=tf.int64, initializer=tf1.zeros_initializer(),
                                   trainable=False, use_resource=resource,
                                   collections=[tf1.GraphKeys.GLOBAL_VARIABLES, tf1.GraphKeys.GLOBAL_STEP])
    make = {"sgd": lambda: tf1.train.GradientDescentOptimizer(0.1),
            "momentum": lambda: tf1.train.MomentumOptimizer(0.05, 0.9),
            "adam": lambda: tf1.train.AdamOptimizer(0.01)}[optimizer]
    train = make().minimize(loss, global_step=global_step, name="train")
    tf1.summary.scalar("loss", loss)
    tf1.summary.histogram(first.op.name, first)
    summary = tf1.summary.merge_all()
    init = tf1.global_variables_initializer()
    saver = tf1.train.Saver(write_version=tf1.train.SaverDef.V2, sharded=sharded, save_relative_paths=True)
    return {"x": x, "labels": labels, "loss": loss, "train": train, "init": init, "summary": summary,
            "saver": saver, "global_step": global_step, "histogram_tag": first.op.name}


def record_case(tf, case: str) -> None:
    tf1 = tf.compat.v1
    model, optimizer, kind = case.split("_")
    resource, sharded = kind == "resource", case == SHARDED_CASE
    fixed, per_step = make_feeds(model)
    graph = tf.Graph()
    with graph.as_default():
        nodes = build(tf, model, optimizer, resource, sharded)
    assert nodes["init"].name == "init", nodes["init"].name
    assert nodes["train"].name == "train", nodes["train"].name
    variables = graph.get_collection(tf1.GraphKeys.GLOBAL_VARIABLES)
    trainable = {v.op.name for v in graph.get_collection(tf1.GraphKeys.TRAINABLE_VARIABLES)}
    out = ROOT / case
    (out / "expected").mkdir(parents=True, exist_ok=True)
    graph_def = graph.as_graph_def()
    (out / "graph.pb").write_bytes(graph_def.SerializeToString(deterministic=True))
    save_npz(out / "feeds.npz", fixed)
    save_npz(out / "feeds_per_step.npz", per_step)

    config = tf1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    loss, train = nodes["loss"], nodes["train"]

    def train_steps(sess, feeds_at, steps):
        losses = []
        for step in steps:
            value, _ = sess.run([loss, train], {nodes["x"]: feeds_at(step)["x:0"],
                                                nodes["labels"]: feeds_at(step)["labels:0"]})
            losses.append(value)
        return np.asarray(losses, np.float32).astype(np.float64)

    def finals(sess):
        return dict(zip((v.op.name for v in variables), sess.run(variables)))

    ckpt_dir = out / "tf_ckpt"
    for name, feeds_at in (("", lambda step: fixed),
                           ("_per_step", lambda step: {key: value[step] for key, value in per_step.items()})):
        with tf1.Session(graph=graph, config=config) as sess:
            sess.run(nodes["init"])
            losses = train_steps(sess, feeds_at, range(RESUME_AT))
            if case == RESUME_CASE and not name:
                # A fresh directory, so the state file lists this one checkpoint only.
                for stale in ckpt_dir.glob("*"):
                    stale.unlink()
                ckpt_dir.mkdir(exist_ok=True)
                nodes["saver"].save(sess, str(ckpt_dir / "model.ckpt"), global_step=nodes["global_step"],
                                    write_meta_graph=False)   # graph.pb is the graph
            losses = np.concatenate([losses, train_steps(sess, feeds_at, range(RESUME_AT, STEPS))])
            final = finals(sess)
            if not name:
                fixed_final = final
            summary = sess.run(nodes["summary"], {nodes["x"]: feeds_at(0)["x:0"],
                                                  nodes["labels"]: feeds_at(0)["labels:0"]})
        assert np.all(np.isfinite(losses)) and losses[-5:].mean() < losses[:5].mean(), (case, name, losses[[0, -1]])
        np.save(out / "expected" / f"losses{name}.npy", losses)
        save_npz(out / "expected" / f"final_variables{name}.npz", final)
    assert summary                     # the merged summary evaluates (its bytes are Part C's business)

    resume = None
    if case == RESUME_CASE:
        with tf1.Session(graph=graph, config=config) as sess:
            prefix = tf1.train.latest_checkpoint(str(ckpt_dir))
            nodes["saver"].restore(sess, prefix)
            assert sess.run(nodes["global_step"]) == RESUME_AT
            resumed = train_steps(sess, lambda step: fixed, range(RESUME_AT, STEPS))
            resumed_final = finals(sess)
        np.save(out / "expected" / "resumed_losses.npy", resumed)
        for key, value in fixed_final.items():      # TensorFlow itself resumes exactly where it was
            np.testing.assert_array_equal(resumed_final[key], value, err_msg=key)
        np.testing.assert_array_equal(resumed, np.load(out / "expected" / "losses.npy")[RESUME_AT:])
        resume = {"checkpoint_dir": "tf_ckpt", "prefix": "tf_ckpt/" + Path(prefix).name, "after_step": RESUME_AT,
                  "feeds": "feeds.npz", "losses": "expected/resumed_losses.npy",
                  "final_variables": "expected/final_variables.npz",
                  "notes": "restore the checkpoint, then run steps 21-50 with feeds.npz; the losses equal "
                           "losses.npy[20:] and the variables final_variables.npz (TensorFlow checked both)"}

    saver_def = nodes["saver"].saver_def
    ops = sorted({node.op for node in graph_def.node})
    info = {
        "name": case, "model": model, "optimizer": optimizer, "resource": resource, "steps": STEPS,
        "init": nodes["init"].name, "train": nodes["train"].name, "loss": loss.name,
        "inputs": {"x": nodes["x"].name, "labels": nodes["labels"].name},
        "global_step": nodes["global_step"].op.name,
        "saver": {"filename_tensor": saver_def.filename_tensor_name, "save_tensor": saver_def.save_tensor_name,
                  "restore_op": saver_def.restore_op_name, "sharded": saver_def.sharded,
                  "version": "V2" if saver_def.version == tf1.train.SaverDef.V2 else "V1"},
        "summary": {"tensor": nodes["summary"].name,
                    "tags": ["loss", nodes["histogram_tag"]]},
        "variables": [{"name": v.op.name, "dtype": v.dtype.base_dtype.name, "shape": v.shape.as_list(),
                       "trainable": v.op.name in trainable} for v in variables],
        "runs": [{"name": "fixed", "feeds": "feeds.npz", "per_step": False, "losses": "expected/losses.npy",
                  "final_variables": "expected/final_variables.npz"},
                 {"name": "per_step", "feeds": "feeds_per_step.npz", "per_step": True,
                  "losses": "expected/losses_per_step.npy",
                  "final_variables": "expected/final_variables_per_step.npz"}],
        "rtol": RTOL, "ops": ops, "tensorflow": tf.__version__,
        "notes": ("init runs once; each step fetches loss with train as a target (the loss before that step's "
                  "update). train also increments global_step (a variable of the case's kind, made as "
                  "get_or_create_global_step would). The summary tensor needs the inputs fed (it holds the loss). "
                  "Initial values are constants: no random op runs."),
    }
    if resume:
        info["resume"] = resume
    (out / "case.json").write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
    sizes = sum(path.stat().st_size for path in out.rglob("*") if path.is_file())
    print(f"{case}: {len(graph_def.node)} nodes, {sizes // 1024} KiB", file=sys.stderr)


def save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """np.savez with fixed member timestamps, so a re-run writes the same bytes."""
    import zipfile
    import io
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for key in sorted(arrays):
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.asarray(arrays[key]), allow_pickle=False)
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            archive.writestr(info, buffer.getvalue())


def generate(cases: list[str]) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    import tensorflow as tf
    tf.compat.v1.disable_eager_execution()
    for case in cases:
        record_case(tf, case)


# --------------------------------------------------------------------------- dftool side

def dftool_run(case_dir: Path, run: dict) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Train in one dftool Session as the lead's `dftool run --init --target --steps` does: run
    `init` once, then each step fetch `loss` with `train` as a target. Returns the losses and
    every variable (read through its own read node) afterwards."""
    from graphtool import graph_io
    from graphtool.exec.session import Session
    from graphtool.ir import from_graphdef

    spec = json.loads((case_dir / "case.json").read_text())
    graph = from_graphdef(graph_io.load_graphdef(str(case_dir / "graph.pb")), spec["name"])
    session = Session(graph, threads=1)
    session.run([], targets=[spec["init"]])
    feeds = dict(np.load(case_dir / run["feeds"]))
    losses = []
    for step in range(spec["steps"]):
        step_feeds = {key: value[step] for key, value in feeds.items()} if run["per_step"] else feeds
        result = session.run([spec["loss"]], step_feeds, targets=[spec["train"]])
        losses.append(float(result.values[0]))
    names = [variable["name"] for variable in spec["variables"]]
    values = session.run([variable_read(graph, name) for name in names]).values
    return np.asarray(losses), dict(zip(names, values))


def variable_read(graph, name: str) -> str:
    """A tensor holding a variable's value: a ref variable's own output, a resource variable's
    `<name>/Read/ReadVariableOp` (TF1 makes one per resource variable)."""
    node = graph.get(name)
    if node.op in ("VariableV2", "Variable"):
        return f"{name}:0"
    read = graph.get(f"{name}/Read/ReadVariableOp")
    if read is None:
        raise ValueError(f"{name}: no {name}/Read/ReadVariableOp in the graph")
    return f"{read.name}:0"


def relative_error(actual: np.ndarray, expected: np.ndarray) -> float:
    return float(np.max(np.abs(actual - expected) / np.maximum(np.abs(expected), 1e-30), initial=0.0))


def check(cases: list[str]) -> bool:
    """Compare dftool's Session with every case's recorded runs; print one line per run."""
    ok = True
    for case in cases:
        case_dir = ROOT / case
        spec = json.loads((case_dir / "case.json").read_text())
        for run in spec["runs"]:
            try:
                losses, final = dftool_run(case_dir, run)
            except Exception as error:    # report, keep checking the other cases
                print(f"{case}/{run['name']}: dftool FAILED: {type(error).__name__}: {error}".splitlines()[0])
                ok = False
                continue
            want = np.load(case_dir / run["losses"])
            want_final = np.load(case_dir / run["final_variables"])
            loss_error = relative_error(losses, want)
            var_error = max(relative_error(np.asarray(final[key], np.float64), np.asarray(want_final[key], np.float64))
                            for key in want_final.files)
            var_abs = max(float(np.max(np.abs(np.asarray(final[key], np.float64) - want_final[key]), initial=0.0))
                          for key in want_final.files)
            good = np.allclose(losses, want, rtol=spec["rtol"], atol=0) and all(
                np.allclose(final[key], want_final[key], rtol=spec["rtol"], atol=VARIABLE_ATOL) for key in want_final.files)
            ok &= bool(good)
            print(f"{case}/{run['name']}: {'ok' if good else 'MISMATCH'}: losses max rel err {loss_error:.1e}; "
                  f"final variables max rel err {var_error:.1e}, max abs err {var_abs:.1e}")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=CASES, help="regenerate just these cases")
    parser.add_argument("--check", nargs="*", metavar="CASE",
                        help="only compare dftool's Session with the recorded cases (all when none named)")
    parser.add_argument("--no-check", action="store_true", help="do not run the dftool check after generating")
    args = parser.parse_args(argv)
    if args.check is not None:
        return 0 if check(args.check or CASES) else 1
    cases = args.only or CASES
    generate(cases)
    if args.no_check:
        return 0
    repo = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(repo))
    done = subprocess.run([DFTOOL_PYTHON, str(Path(__file__).resolve()), "--check", *cases], env=env, cwd=repo)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
