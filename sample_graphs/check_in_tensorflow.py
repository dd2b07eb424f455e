"""Load every sample graph into TensorFlow and run it on its feeds (needs tensorflow; not a test).

    $TF_PYTHON sample_graphs/check_in_tensorflow.py [NAME ...]

Shows that the GraphDefs graphtool writes are TensorFlow GraphDefs: each file is parsed with
TensorFlow's own GraphDef proto, imported with tf.compat.v1.import_graph_def (the v1 control flow
as written), and run in a Session with eight CPU devices on NAME.feeds.npz. The graph's outputs
(nodes nothing consumes) are fetched, printed, and compared with a NumPy version of the sample
computed from its feeds and Const weights (the paper's loop must give 16). Exit status 1 when
any sample fails.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

HERE = Path(__file__).resolve().parent
tf1 = tf.compat.v1


def _relu(v):
    return np.maximum(v, 0.0)


def _softmax(v):
    e = np.exp(v - v.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _rnn(x, c):
    h = np.zeros((x.shape[1], c["rnn/wh"].shape[0]), np.float32)
    states = []
    for x_t in x:
        h = np.tanh(x_t @ c["rnn/wx"] + h @ c["rnn/wh"] + c["rnn/bias"])
        states.append(h)
    return np.stack(states), h


def _stacked_rnn(x, c):
    """model_parallel_rnn: (final_state, top_sum) of the 8-layer RNN."""
    states = [np.zeros((x.shape[1], x.shape[2]), np.float32) for _ in range(8)]
    top_sum = np.zeros_like(states[0])
    for x_t in x:
        inputs = x_t
        for k in range(8):
            inputs = states[k] = np.tanh(inputs @ c[f"layer{k}/wx"] + states[k] @ c[f"layer{k}/wh"]
                                         + c[f"layer{k}/bias"])
        top_sum = top_sum + inputs
    return {"final_state": states[-1], "top_sum": top_sum}


def _pipeline(x, c):
    outputs = []
    for h in x:
        for k in range(4):
            h = _relu(h @ c[f"stage{k}/kernel"] + c[f"stage{k}/bias"])
        outputs.append(h)
    return {"total": np.sum(outputs, axis=0)}


# NumPy versions of the samples, from their feeds `f` and their Const values `c` (by node name).
REFERENCES = {
    "mlp": lambda f, c: {"probs": _softmax(_relu(f["x"] @ c["dense/kernel"] + c["dense/bias"])
                                           @ c["logits/kernel"] + c["logits/bias"])},
    "cond": lambda f, c: {"y": _relu(f["x"] @ c["w"]) if f["p"] else 2 * f["x"] - 1},
    "while_loop": lambda f, c: {"i_final": 16, "acc": 10.0 * f["x"]},
    "rnn": lambda f, c: dict(zip(("outputs", "final_state"), _rnn(f["x"], c))),
    "multi_device": lambda f, c: {"y": f["x"] + _relu(f["x"] @ c["w1"]) @ c["w2"]},
    "convnet": lambda f, c: {},
    "model_parallel_rnn": lambda f, c: _stacked_rnn(f["x"], c),
    "pipeline": lambda f, c: _pipeline(f["x"], c),
}


def _mismatches(name: str, feeds: dict, consts: dict, outputs: dict) -> list[str]:
    """Outputs that differ from the NumPy reference (and softmax rows that do not sum to 1)."""
    expected = REFERENCES.get(name, lambda f, c: {})(feeds, consts)
    problems = [f"{key} differs from the NumPy reference" for key, value in expected.items()
                if not np.allclose(outputs[key], value, rtol=1e-4, atol=1e-5)]
    if "probs" in outputs and not np.allclose(outputs["probs"].sum(axis=-1), 1.0, atol=1e-5):
        problems.append("softmax rows do not sum to 1")
    return problems


def graph_outputs(graph_def) -> list[str]:
    """Names of nodes no other node reads, in file order."""
    consumed = {text.lstrip("^").split(":")[0] for node in graph_def.node for text in node.input}
    return [node.name for node in graph_def.node if node.name not in consumed]


def run_sample(name: str) -> bool:
    graph_def = tf1.GraphDef()
    graph_def.ParseFromString((HERE / f"{name}.pb").read_bytes())
    with np.load(HERE / f"{name}.feeds.npz") as archive:
        feeds = {key: archive[key] for key in archive.files}
    graph = tf1.Graph()
    with graph.as_default():
        tf1.import_graph_def(graph_def, name="")
    fetch_names = [n for n in graph_outputs(graph_def) if graph.get_operation_by_name(n).outputs]
    config = tf1.ConfigProto(device_count={"CPU": 8}, allow_soft_placement=False)
    with tf1.Session(graph=graph, config=config) as session:
        values = session.run([f"{n}:0" for n in fetch_names], feed_dict={f"{k}:0": v for k, v in feeds.items()})
    outputs = dict(zip(fetch_names, values))
    print(f"{name}: {len(graph_def.node)} nodes, fed {', '.join(feeds)}")
    for key, value in outputs.items():
        text = np.array2string(np.asarray(value), precision=4, threshold=12, max_line_width=100)
        print(f"  {key} {value.dtype}{list(np.shape(value))}: " + " ".join(text.split()))
    consts = {n.name: tf.make_ndarray(n.attr["value"].tensor) for n in graph_def.node if n.op == "Const"}
    problems = _mismatches(name, feeds, consts, outputs)
    checked = ", ".join(REFERENCES.get(name, lambda f, c: {})(feeds, consts)) or "softmax sums"
    for problem in problems:
        print(f"  MISMATCH: {problem}")
    if not problems:
        print(f"  matches the NumPy reference ({checked})")
    return not problems


def main(names: list[str]) -> int:
    names = names or sorted(p.name[: -len(".pb")] for p in HERE.glob("*.pb"))
    failed = []
    for name in names:
        try:
            ok = run_sample(name)
        except Exception as exc:  # report every sample, then fail
            print(f"{name}: FAILED in TensorFlow: {type(exc).__name__}: {str(exc).splitlines()[0]}")
            ok = False
        if not ok:
            failed.append(name)
    print(f"{len(names) - len(failed)}/{len(names)} samples load and run in TensorFlow {tf.__version__}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
