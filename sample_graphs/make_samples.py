"""Build the sample graphs with graphtool's GraphBuilder and write them next to this script.

    python sample_graphs/make_samples.py [--out DIR] [NAME ...]

For each sample: NAME.pb (binary GraphDef) and NAME.feeds.npz (one array per placeholder, keyed
by the placeholder's name, e.g. `x`). Deterministic: weights and feeds come from a generator
seeded per sample, and the .npz archives carry fixed timestamps, so re-running reproduces the files
byte for byte. Every graph must pass Graph.verify() and whole-graph shape inference without an
error; otherwise the script stops with the problem.
"""
from __future__ import annotations

import argparse
import io
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from graphtool import graph_io  # noqa: E402
from graphtool.builder import GraphBuilder  # noqa: E402
from graphtool.shape_inference import infer_shapes  # noqa: E402
from sample_graphs.model_parallel import pipeline, stacked_rnn  # noqa: E402

HERE = Path(__file__).resolve().parent
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"
MAX_BYTES = 200_000


def _weights(rng, *shape, scale=0.5) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _dense(b, x, rng, units: int, name: str, activation=None):
    """x @ W + bias (then `activation`) under scope `name`, with seeded Const weights."""
    with b.name_scope(name):
        fan_in = b.shape(x)[-1]
        w = b.const(_weights(rng, fan_in, units, scale=fan_in ** -0.5), name="kernel")
        y = b.bias_add(b.matmul(x, w), b.const(_weights(rng, units, scale=0.1), name="bias"))
        return activation(y) if activation else y


def build_mlp(rng):
    """Two dense layers: x[?,16] -> relu(32) -> softmax(10)."""
    b = GraphBuilder()
    x = b.placeholder("float32", [None, 16], name="x")
    hidden = _dense(b, x, rng, 32, "dense", activation=b.relu)
    logits = _dense(b, hidden, rng, 10, "logits")
    b.softmax(logits, name="probs")
    return b, {"x": _weights(rng, 4, 16, scale=1.0)}


def build_convnet(rng):
    """conv(SAME)+bias+relu+maxpool, conv(VALID)+batchnorm+relu+avgpool, reshape, dense, softmax."""
    b = GraphBuilder()
    x = b.placeholder("float32", [None, 8, 8, 3], name="x")
    with b.name_scope("conv1"):
        y = b.conv2d(x, b.const(_weights(rng, 3, 3, 3, 8, scale=0.3), name="kernel"), padding="SAME")
        y = b.relu(b.bias_add(y, b.const(_weights(rng, 8, scale=0.1), name="bias")))
        y = b.max_pool(y, ksize=2, strides=2, padding="SAME")                      # [?,4,4,8]
    with b.name_scope("conv2"):
        y = b.conv2d(y, b.const(_weights(rng, 3, 3, 8, 16, scale=0.2), name="kernel"), padding="VALID")
        stats = {name: b.const(value, name=name) for name, value in (
            ("gamma", 1.0 + _weights(rng, 16, scale=0.1)), ("beta", _weights(rng, 16, scale=0.1)),
            ("moving_mean", _weights(rng, 16, scale=0.1)),
            ("moving_variance", 1.0 + np.abs(_weights(rng, 16, scale=0.1))))}
        y = b.fused_batch_norm(y, *stats.values(), epsilon=0.001)[0]               # [?,2,2,16]
        y = b.avg_pool(b.relu(y), ksize=2, strides=2, padding="VALID")            # [?,1,1,16]
    flat = b.reshape(y, [-1, 16], name="flatten")
    b.softmax(_dense(b, flat, rng, 10, "logits"), name="probs")
    return b, {"x": _weights(rng, 2, 8, 8, 3, scale=1.0)}


def build_cond(rng):
    """y = relu(x @ W) if p else 2 * x - 1, with a bool placeholder p."""
    b = GraphBuilder()
    p = b.placeholder("bool", [], name="p")
    x = b.placeholder("float32", [None, 4], name="x")
    w = b.const(_weights(rng, 4, 4), name="w")
    y = b.cond(p, lambda: b.relu(b.matmul(x, w)), lambda: b.sub(b.mul(x, 2.0), 1.0))
    b.identity(y, name="y")
    return b, {"p": np.array(True), "x": _weights(rng, 3, 4, scale=1.0)}


def build_while_loop(rng):
    """The paper's loop (i = 4; while i < 16: i *= 2 -> 16) and an accumulation:
    acc = 0; for k in 0..4: acc += k * x (x fed, entering the loop as a loop constant)."""
    b = GraphBuilder()
    i = b.while_loop(lambda i: b.less(i, 16), lambda i: b.mul(i, 2), b.const(4, name="i"), name="double")
    b.identity(i, name="i_final")
    x = b.placeholder("float32", [3], name="x")

    def accumulate(k, acc):
        return b.add(k, 1), b.add(acc, b.mul(x, b.cast(k, "float32")))

    _, acc = b.while_loop(lambda k, acc: b.less(k, 5), accumulate, [0, b.zeros([3])], name="accumulate")
    b.identity(acc, name="acc")
    return b, {"x": _weights(rng, 3, scale=1.0)}


def build_rnn(rng):
    """A dynamic tanh RNN over time-major inputs x[T,2,4] (T known only at run time): the inputs
    are unstacked into a TensorArray, a while loop reads step t, computes
    h = tanh(x_t @ Wx + h @ Wh + b) and writes h to an output TensorArray, gathered afterwards."""
    b = GraphBuilder()
    x = b.placeholder("float32", [None, 2, 4], name="x")
    with b.name_scope("rnn"):
        steps = b.op("StridedSlice", [b.shape_of(x), [0], [1], [1]], name="time_steps", shrink_axis_mask=1)
        inputs = b.tensor_array("float32", steps, element_shape=[2, 4], name="inputs").unstack(x)
        outputs = b.tensor_array("float32", steps, element_shape=[2, 8], name="outputs")
        wx = b.const(_weights(rng, 4, 8), name="wx")
        wh = b.const(_weights(rng, 8, 8, scale=0.3), name="wh")
        bias = b.const(_weights(rng, 8, scale=0.1), name="bias")

        def step(t, h, out):
            h = b.tanh(b.bias_add(b.add(b.matmul(inputs.read(t), wx), b.matmul(h, wh)), bias))
            return b.add(t, 1), h, out.write(t, h)

        _, final, outputs = b.while_loop(lambda t, h, out: b.less(t, steps), step, [0, b.zeros([2, 8]), outputs])
        stacked = outputs.stack()
    b.identity(stacked, name="outputs")
    b.identity(final, name="final_state")
    return b, {"x": _weights(rng, 5, 2, 4, scale=1.0)}


def build_multi_device(rng):
    """A residual block split over two CPUs: x @ W1 on CPU:0, relu and @ W2 on CPU:1, the sum
    with x back on CPU:0, so tensors cross devices both ways."""
    b = GraphBuilder()
    with b.device(CPU0):
        x = b.placeholder("float32", [None, 8], name="x")
        h = b.matmul(x, b.const(_weights(rng, 8, 8, scale=0.35), name="w1"), name="layer1")
    with b.device(CPU1):
        h = b.relu(h, name="relu")
        h = b.matmul(h, b.const(_weights(rng, 8, 8, scale=0.35), name="w2"), name="layer2")
    with b.device(CPU0):
        b.add(x, h, name="y")
    return b, {"x": _weights(rng, 3, 8, scale=1.0)}


def build_model_parallel_rnn(rng):
    """The paper's model-parallel case: an 8-layer tanh RNN, layer k on CPU:k, in ONE while loop
    over 12 time steps (parallel_iterations 32); see model_parallel.py."""
    return stacked_rnn(rng, layers=8, hidden=16, batch=4, steps=12, parallel_iterations=32)


def build_pipeline(rng):
    """4 dense+relu stages on CPU:0..3 over 8 micro-batches in one while loop; see model_parallel.py."""
    return pipeline(rng, stages=4, width=16, batch=4, micro_batches=8, parallel_iterations=8)


def build_train_loop(rng):
    """In-graph training: ONE while loop runs `steps` SGD steps of a 4-8-1 tanh MLP regressing y
    on x. Each iteration computes the loss, its gradients (graphtool.grad's add_gradients, built
    inside the loop body) and the updated weights, which are the loop variables; every step's
    loss is written to a TensorArray. Outputs `losses` [steps] and the trained weights."""
    from graphtool.grad.driver import add_gradients

    b = GraphBuilder()
    x = b.placeholder("float32", [32, 4], name="x")
    y = b.placeholder("float32", [32, 1], name="y")
    steps = b.placeholder("int32", [], name="steps")
    initial = [_weights(rng, 4, 8), np.zeros(8, np.float32), _weights(rng, 8, 1), np.zeros(1, np.float32)]
    history = b.tensor_array("float32", steps, element_shape=[], name="loss_history")

    def step(t, w1, b1, w2, b2, record):
        with b.name_scope("model"):
            hidden = b.tanh(b.bias_add(b.matmul(x, w1), b1))
            error = b.sub(b.bias_add(b.matmul(hidden, w2), b2), y)
            loss = b.reduce_mean(b.mul(error, error), [0, 1], name="loss")
        params = [w1, b1, w2, b2]
        grads = add_gradients(b.graph, loss, params, builder=b).tensors(b.graph)
        with b.name_scope("sgd"):
            updated = [b.sub(p, b.mul(g, 0.2)) for p, g in zip(params, grads)]
        return (b.add(t, 1), *updated, record.write(t, loss))

    _, *trained, record = b.while_loop(lambda t, *_: b.less(t, steps), step, [0, *initial, history],
                                       name="train")
    b.identity(record.stack(), name="losses")
    for name, value in zip(("w1", "b1", "w2", "b2"), trained):
        b.identity(value, name=name)
    inputs = _weights(rng, 32, 4, scale=1.0)
    targets = np.sin(inputs @ np.array([[1.0], [-0.5], [0.25], [0.5]], np.float32)).astype(np.float32)
    return b, {"x": inputs, "y": targets, "steps": np.array(60, np.int32)}


SAMPLES = {
    "mlp": build_mlp,
    "convnet": build_convnet,
    "cond": build_cond,
    "while_loop": build_while_loop,
    "rnn": build_rnn,
    "multi_device": build_multi_device,
    "model_parallel_rnn": build_model_parallel_rnn,
    "pipeline": build_pipeline,
    "train_loop": build_train_loop,
}


def build(name: str):
    """(GraphDef, feeds) for sample `name`, checked: verify() and shape inference must pass."""
    seed = zlib.crc32(name.encode())  # fixed per sample, whatever other samples exist
    builder, feeds = SAMPLES[name](np.random.default_rng(seed))
    graph = builder.graph
    graph.verify()
    result = infer_shapes(graph)
    if result.errors:
        raise SystemExit(f"{name}: shape inference failed: {next(iter(result.errors.values()))}")
    for key, value in feeds.items():
        ref = graph.tensor(key)
        if not result.shape(ref).is_compatible_with(value.shape) or result.dtype(ref).numpy != value.dtype:
            raise SystemExit(f"{name}: feed '{key}' {value.dtype}{list(value.shape)} does not fit "
                             f"{result.dtype(ref)}{result.shape(ref)}")
    return builder.to_graphdef(), feeds


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """An .npz archive (what np.load reads) with fixed timestamps, so equal arrays give equal bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for key in sorted(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asarray(arrays[key]), allow_pickle=False)
            archive.writestr(zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0)), member.getvalue())
    return buffer.getvalue()


def write(name: str, out_dir: Path) -> list[Path]:
    graph_def, feeds = build(name)
    graph_path, feeds_path = out_dir / f"{name}.pb", out_dir / f"{name}.feeds.npz"
    graph_io.save_graphdef(graph_def, str(graph_path))
    graph_io.write_atomic(str(feeds_path), npz_bytes(feeds))
    for path in (graph_path, feeds_path):
        if path.stat().st_size > MAX_BYTES:
            raise SystemExit(f"{path}: {path.stat().st_size} bytes, over the {MAX_BYTES} byte limit for samples")
    return [graph_path, feeds_path]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"samples to write (default: all of {', '.join(SAMPLES)})")
    parser.add_argument("--out", type=Path, default=HERE, help="output directory (default: next to this script)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in SAMPLES]
    if unknown:
        parser.error(f"unknown sample {unknown[0]!r} (choose from {', '.join(SAMPLES)})")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.names or SAMPLES:
        paths = write(name, args.out)
        print(f"{name}: " + ", ".join(f"{p.name} ({p.stat().st_size} bytes)" for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
