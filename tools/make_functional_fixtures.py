#!/usr/bin/env python3
"""Record TensorFlow 2 function graphs (If/While/Case/PartitionedCall kept as functional ops) for
dftool's `lower` tests, under tests/fixtures/functional/<case>/:

    graph.pb       tf.function(...).get_concrete_function().graph.as_graph_def(): functional ops
                   with their bodies in the FunctionDefLibrary, nothing lowered
    feeds.npz      feed values keyed by placeholder tensor name (``x:0``)
    expected.npz   TensorFlow's results keyed by fetch (``Identity:0``)
    feeds_<run>.npz / expected_<run>.npz   further runs of the same graph
    grads.npz (grads_<run>.npz)   for cases that differentiate: tf.gradients(sum(y), xs), keyed by x
    case.json      fetches, runs, gradient y/xs, the functional ops the graph holds

Run with a TensorFlow environment (dftool itself never imports TensorFlow), e.g.

    $TF_PYTHON tools/make_functional_fixtures.py

Weights are constants made inside the functions (Const nodes, nothing to freeze); every case has a
fixed seed.
"""
import json
import shutil
import zlib
from pathlib import Path

import numpy as np
import tensorflow as tf

OUT_DIR = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "functional"
CASES = {}


def case(func):
    CASES[func.__name__] = func
    return func


def spec(shape, dtype=tf.float32, name=None):
    return tf.TensorSpec(shape, dtype, name=name)


@case
def while_loop(rng):
    """A tf.while_loop over a tanh layer; n iterations (fed), parallel_iterations 10."""
    w = rng.standard_normal((4, 4)).astype(np.float32) * 0.5
    b = rng.standard_normal(4).astype(np.float32) * 0.1

    def f(x, n):
        def body(i, acc):
            return i + 1, tf.tanh(tf.matmul(acc, tf.constant(w)) + tf.constant(b))
        i, acc = tf.while_loop(lambda i, acc: i < n, body, (tf.constant(0), x))
        return acc, i * 2

    x = rng.standard_normal((2, 4)).astype(np.float32)
    return (f, [spec([2, 4], name="x"), spec([], tf.int32, name="n")],
            {"": [x, np.int32(5)], "zero": [x, np.int32(0)]}, [0])


@case
def heavy_loop(rng):
    """Iterations with independent heavy work (a 256x256 matmul scaled by the counter): they can
    overlap when parallel_iterations > 1."""
    m = rng.standard_normal((256, 256)).astype(np.float32) / 16

    def f(x, n):
        def body(i, acc):
            scaled = tf.constant(m) * tf.cast(i + 1, tf.float32)
            heavy = tf.reduce_mean(tf.matmul(tf.matmul(scaled, scaled), scaled))
            return i + 1, acc + heavy
        return tf.while_loop(lambda i, acc: i < n, body, (tf.constant(0), x), parallel_iterations=10)[1]

    return (f, [spec([], name="x"), spec([], tf.int32, name="n")],
            {"": [np.float32(1.0), np.int32(6)]}, None)


@case
def cond(rng):
    """tf.cond on a fed bool, and one on a computed predicate; both branches use x."""
    def f(x, p):
        a = tf.cond(p, lambda: tf.debugging.check_numerics(x * 2.0 + 1.0, "then"), lambda: tf.sin(x))
        b = tf.cond(tf.reduce_sum(x) > 0, lambda: tf.exp(x), lambda: tf.constant(np.ones(3, np.float32)))
        return a + b

    x = rng.standard_normal(3).astype(np.float32)
    return (f, [spec([3], name="x"), spec([], tf.bool, name="p")],
            {"": [x, np.bool_(True)], "false": [-np.abs(x), np.bool_(False)]}, [0])


@case
def switch_case(rng):
    """tf.switch_case with three branches; an out-of-range index runs the last one."""
    def f(x, k):
        return tf.switch_case(k, [lambda: x + 1.0, lambda: x * x, lambda: tf.cos(x) * 3.0])

    x = rng.standard_normal(3).astype(np.float32)
    runs = {"": [x, np.int32(0)], "one": [x, np.int32(1)], "two": [x, np.int32(2)],
            "out_of_range": [x, np.int32(7)], "negative": [x, np.int32(-1)]}
    return f, [spec([3], name="x"), spec([], tf.int32, name="k")], runs, None


@case
def nested_calls(rng):
    """A tf.function calling one that calls another, with two outputs."""
    w = rng.standard_normal((3, 3)).astype(np.float32)

    @tf.function
    def inner(v):
        return tf.nn.relu(tf.matmul(v, tf.constant(w)))

    @tf.function
    def middle(v):
        h = tf.debugging.check_numerics(inner(v), "inner output")
        return h * 2.0, tf.reduce_sum(h)

    def f(x):
        a, s = middle(x)
        return a + inner(x), s

    x = rng.standard_normal((2, 3)).astype(np.float32)
    return f, [spec([2, 3], name="x")], {"": [x]}, [0]


@case
def loop_calls_function(rng):
    """A while loop whose body calls a tf.function and holds a cond."""
    w = rng.standard_normal((3, 3)).astype(np.float32) * 0.4

    @tf.function
    def step(v):
        return tf.tanh(tf.matmul(v, tf.constant(w)))

    def f(x, n):
        def body(i, acc):
            nxt = step(acc)
            nxt = tf.cond(i % 2 == 0, lambda: nxt + 1.0, lambda: nxt * 0.5)
            return i + 1, nxt
        return tf.while_loop(lambda i, acc: i < n, body, (tf.constant(0), x))[1]

    x = rng.standard_normal((1, 3)).astype(np.float32)
    return f, [spec([1, 3], name="x"), spec([], tf.int32, name="n")], {"": [x, np.int32(4)]}, [0]


@case
def nested_while(rng):
    """A while loop inside a while loop body."""
    def f(x, n):
        def outer(i, acc):
            def inner(j, a):
                return j + 1, a * 0.5 + tf.cast(j, tf.float32)
            _, acc = tf.while_loop(lambda j, a: j < i, inner, (tf.constant(0), acc))
            return i + 1, acc + 1.0
        return tf.while_loop(lambda i, acc: i < n, outer, (tf.constant(0), x))[1]

    x = rng.standard_normal(2).astype(np.float32)
    return f, [spec([2], name="x"), spec([], tf.int32, name="n")], {"": [x, np.int32(4)]}, [0]


@case
def tensor_array_loop(rng):
    """A loop writing one row per iteration into a TensorArray (TensorList ops through the While),
    then stacked: the shape of tf.map_fn."""
    w = rng.standard_normal((3, 3)).astype(np.float32)

    def f(x):
        rows = tf.TensorArray(tf.float32, size=tf.shape(x)[0], element_shape=[3])

        def body(i, acc):
            return i + 1, acc.write(i, tf.tanh(tf.linalg.matvec(tf.constant(w), x[i])))
        _, rows = tf.while_loop(lambda i, acc: i < tf.shape(x)[0], body, (tf.constant(0), rows))
        return rows.stack()

    x = rng.standard_normal((4, 3)).astype(np.float32)
    return f, [spec([None, 3], name="x")], {"": [x]}, [0]


def save_npz(path, arrays):
    np.savez(path, **{k: np.asarray(v) for k, v in arrays.items()})


def record(name, builder):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    tf.random.set_seed(7)
    fn, signature, runs, grad_outputs = builder(rng)
    concrete = tf.function(fn, input_signature=signature).get_concrete_function()
    graph_def = concrete.graph.as_graph_def()
    inputs = [t.name for t in concrete.inputs]
    fetches = [t.name for t in concrete.outputs]
    out = OUT_DIR / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    (out / "graph.pb").write_bytes(graph_def.SerializeToString(deterministic=True))
    info = {"name": name, "doc": " ".join(builder.__doc__.split()), "inputs": inputs, "fetches": fetches,
            "runs": [label for label in runs if label],
            "functional_ops": sorted(({n.op for n in graph_def.node}
                                      | {n.op for f in graph_def.library.function for n in f.node_def})
                                     & {"If", "StatelessIf", "While", "StatelessWhile", "Case", "StatelessCase",
                                        "PartitionedCall", "StatefulPartitionedCall"}),
            "functions": len(graph_def.library.function)}
    if grad_outputs is not None:
        info["grad"] = {"y": [fetches[k] for k in grad_outputs], "xs": [inputs[0]]}

        @tf.function(input_signature=signature)
        def gradient(*args):
            outputs = fn(*args)
            outputs = outputs if isinstance(outputs, (tuple, list)) else [outputs]
            y = tf.add_n([tf.reduce_sum(outputs[k]) for k in grad_outputs])
            return tf.gradients(y, args[0])[0]
    for label, values in runs.items():
        suffix = f"_{label}" if label else ""
        save_npz(out / f"feeds{suffix}.npz", dict(zip(inputs, values)))
        results = concrete(*[tf.constant(v) for v in values])
        results = results if isinstance(results, (tuple, list)) else [results]
        save_npz(out / f"expected{suffix}.npz", {k: r.numpy() for k, r in zip(fetches, results)})
        if grad_outputs is not None:
            grad = gradient(*[tf.constant(v) for v in values])
            save_npz(out / f"grads{suffix}.npz", {inputs[0]: grad.numpy()})
    (out / "case.json").write_text(json.dumps(info, indent=2) + "\n")
    print(f"{name}: {len(graph_def.node)} nodes, {info['functions']} functions, {info['functional_ops']}")


def main():
    for name, builder in CASES.items():
        record(name, builder)


if __name__ == "__main__":
    main()
