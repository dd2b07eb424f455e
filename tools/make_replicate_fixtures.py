"""Record small TF1 training graphs for `dftool replicate`'s tests: float64 variants of the
training-run fixtures' MLP and conv net, with a batch of 8 (divisible by 2 and 4 replicas).

    $TF_PYTHON tools/make_replicate_fixtures.py

Per case, tests/fixtures/replicate/<case>/ holds
- graph.pb: placeholders `x` and `labels`, variables, `init`, the train op `train` (also
  increments `global_step`), the mean loss `loss`, a tf.compat.v1.train.Saver and a merged summary
  (the loss and a histogram of the first layer's weights), exported with as_graph_def().
- feeds.npz: one full batch (`x:0`, `labels:0`), fed on every step.
- expected/losses.npy: the loss TensorFlow fetched with `train` on each of STEPS steps.
- case.json: node names, model, optimizer, dtype, variable kind, steps.

The `mlp64_sgd_random` case initialises its first layer's weights with a seeded random op
(RandomStandardNormal), so a replicated graph must not rerun it per replica; its recorded losses
are TensorFlow's for that seed, which another runtime need not reproduce (the tests compare the
replicated graph with the single-device graph in dftool instead). Single-threaded sessions;
re-running writes the same files.
"""
from __future__ import annotations

import io
import json
import os
import sys
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "replicate"
STEPS = 20
BATCH = 8
# (model, optimizer, resource variables, a random initializer)
CASES = {"mlp64_adam_resource": ("mlp", "adam", True, False),
         "mlp64_sgd_random": ("mlp", "sgd", False, True),
         "conv64_momentum_ref": ("conv", "momentum", False, False)}


def make_feeds(model: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(2026 if model == "mlp" else 2027)
    if model == "mlp":
        x = rng.normal(size=(BATCH, 6))
        labels = np.eye(4)[np.argmax(x @ rng.normal(size=(6, 4)), axis=-1)]
    else:
        x = rng.normal(size=(BATCH, 6, 6, 2))
        labels = np.argmax(x.reshape(BATCH, 72) @ rng.normal(size=(72, 3)), axis=-1).astype(np.int32)
    return {"x:0": x.astype(np.float64), "labels:0": labels}


def build(tf, model: str, optimizer: str, resource: bool, random_init: bool):
    tf1 = tf.compat.v1
    f64 = tf.float64
    rng = np.random.default_rng(11 + (model == "conv"))

    def variable(name, shape, scale, random=False):
        if random:
            return tf1.get_variable(name, shape=shape, dtype=f64, use_resource=resource,
                                    initializer=tf1.random_normal_initializer(stddev=scale, seed=5, dtype=f64))
        return tf1.get_variable(name, initializer=rng.normal(size=shape) * scale, dtype=f64, use_resource=resource)

    if model == "mlp":
        x = tf1.placeholder(f64, [None, 6], name="x")
        labels = tf1.placeholder(f64, [None, 4], name="labels")
        with tf1.variable_scope("hidden1"):
            w1, b1 = variable("weights", (6, 16), 0.4, random_init), variable("biases", (16,), 0.1)
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
        x = tf1.placeholder(f64, [None, 6, 6, 2], name="x")
        labels = tf1.placeholder(tf.int32, [None], name="labels")
        with tf1.variable_scope("conv1"):
            kernel, bias = variable("kernel", (3, 3, 2, 4), 0.3), variable("bias", (4,), 0.1)
            conv = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, kernel, [1, 1, 1, 1], "SAME"), bias))
            pool = tf.nn.max_pool2d(conv, 2, 2, "VALID")
        with tf1.variable_scope("dense"):
            w, b = variable("weights", (36, 3), 0.25), variable("biases", (3,), 0.1)
            logits = tf.matmul(tf.reshape(pool, [-1, 36]), w) + b
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits, name="xent")
        first = kernel
    loss = tf.reduce_mean(xent, name="loss")
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
    tf1.train.Saver(write_version=tf1.train.SaverDef.V2, save_relative_paths=True)
    return {"x": x, "labels": labels, "loss": loss, "train": train, "init": init, "summary": summary}


def save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for key in sorted(arrays):
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.asarray(arrays[key]), allow_pickle=False)
            archive.writestr(zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0)), buffer.getvalue())


def record(tf, case: str) -> None:
    tf1 = tf.compat.v1
    model, optimizer, resource, random_init = CASES[case]
    feeds = make_feeds(model)
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(19)
        nodes = build(tf, model, optimizer, resource, random_init)
    assert (nodes["init"].name, nodes["train"].name, nodes["loss"].name) == ("init", "train", "loss:0")
    out = ROOT / case
    (out / "expected").mkdir(parents=True, exist_ok=True)
    (out / "graph.pb").write_bytes(graph.as_graph_def().SerializeToString(deterministic=True))
    save_npz(out / "feeds.npz", feeds)
    config = tf1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    with tf1.Session(graph=graph, config=config) as sess:
        sess.run(nodes["init"])
        fed = {nodes["x"]: feeds["x:0"], nodes["labels"]: feeds["labels:0"]}
        losses = np.asarray([sess.run([nodes["loss"], nodes["train"]], fed)[0] for _ in range(STEPS)])
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0], (case, losses)
    np.save(out / "expected" / "losses.npy", losses)
    info = {"name": case, "model": model, "optimizer": optimizer, "resource": resource, "dtype": "float64",
            "random_init": random_init, "steps": STEPS, "batch": BATCH, "init": "init", "train": "train",
            "loss": "loss:0", "inputs": ["x", "labels"], "feeds": "feeds.npz", "losses": "expected/losses.npy",
            "tensorflow": tf.__version__}
    (out / "case.json").write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
    print(f"{case}: {len(graph.as_graph_def().node)} nodes, loss {losses[0]:.4f} -> {losses[-1]:.4f}",
          file=sys.stderr)


def main() -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    import tensorflow as tf
    tf.compat.v1.disable_eager_execution()
    for case in CASES:
        record(tf, case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
