"""Interpreter benchmarks (issue 15's acceptance); prints one table, it is not a pass/fail test.

    python tests/bench/bench_executor.py [--rounds N] [--only a b ...] [--tf-python PY] [--busy]

(a) 6 parallel chains of 250 tiny elementwise nodes: overhead per node executed (step time minus
    the same numpy calls made directly, over the node count);
(b) a 1000-iteration while loop with a small body: time per iteration;
(c) 4 x [512x2048 @ 2048x2048] MLP;
(d) 4 independent 1024x1024 matmul+tanh branches;
(e) a 4-layer 3x3 conv net, batch 8, 64x64x16 (numpy: the best direct convolution of bench_conv.py).
Each row gives dftool's median step time and its ratio to the same work in numpy and in TensorFlow,
measured in interleaved rounds (timing.interleaved) so that all three see the same machine load
(when a Python with TensorFlow is found: --tf-python, $TF_PYTHON, or this one), all in one run, in
the environment a user has (no BLAS variables, default threads). --busy measures again with one
busy process per core running beside both, and reports how much each slowed down.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from graphtool import dtypes  # noqa: E402
from graphtool.builder import GraphBuilder  # noqa: E402
from graphtool.exec.session import Session  # noqa: E402
from graphtool.exec.thread_budget import usable_cores  # noqa: E402
from timing import TensorFlowReference, busy_cores, interleaved, median_of, ratio, tensorflow_python, timed  # noqa: E402


class Case:
    """One benchmark graph: how to run it in dftool, the same work in numpy, and its target."""

    def __init__(self, key, title, graph, fetches, feeds, direct, target, nodes_or_iterations=None, unit=None):
        self.key, self.title, self.graph, self.fetches, self.feeds = key, title, graph, fetches, feeds
        self.direct, self.target = direct, target
        self.count, self.unit = nodes_or_iterations, unit   # per-node / per-iteration overhead rows


def tiny_nodes() -> Case:
    chains, length = 6, 250
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [4], name="x")
    one = b.const(np.float32(1.0001), name="one")
    ends = []
    for c in range(chains):
        y = x
        for k in range(length):
            y = b.op("Mul" if k % 2 else "AddV2", [y, one], name=f"c{c}/n{k}")
        ends.append(y)
    value, factor = np.ones(4, np.float32), np.float32(1.0001)

    def direct():
        for _ in range(chains):
            y = value
            for k in range(length):
                y = np.multiply(y, factor) if k % 2 else np.add(y, factor)
    return Case("a", "6 x 250 tiny nodes", b.graph, [e.name for e in ends], {"x": value}, direct,
                ("us/node", 1.5), chains * length + 2, "node")


def while_loop() -> Case:
    iterations = 1000
    b = GraphBuilder()
    _, acc = b.while_loop(lambda i, a: b.less(i, iterations), lambda i, a: [b.add(i, 1), b.mul(a, 1.0001)],
                          [b.const(0), b.const(np.float32(1.0))], name="loop")

    def direct():
        i, a = 0, np.float32(1.0)
        while np.less(i, iterations):
            i, a = np.add(i, 1), np.multiply(a, np.float32(1.0001))
    return Case("b", "1000-iteration while loop", b.graph, [acc.name], {}, direct, ("us/iteration", 20),
                iterations, "iteration")


def mlp() -> Case:
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal((2048, 2048), dtype=np.float32) * 0.02 for _ in range(4)]
    x_value = rng.standard_normal((512, 2048), dtype=np.float32)
    b = GraphBuilder()
    h = b.placeholder(dtypes.float32, [512, 2048], name="x")
    for k, w in enumerate(weights):
        h = b.matmul(h, b.const(w, name=f"w{k}"), name=f"layer{k}")

    def direct():
        y = x_value
        for w in weights:
            y = y @ w
    return Case("c", "4 x [512x2048 @ 2048x2048] MLP", b.graph, [h.name], {"x": x_value}, direct, ("x TF", 1.1))


def branches() -> Case:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((1024, 1024), dtype=np.float32) * 0.03
    ws = [rng.standard_normal((1024, 1024), dtype=np.float32) * 0.03 for _ in range(4)]
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [1024, 1024], name="x")
    outs = [b.tanh(b.matmul(x, b.const(w, name=f"w{k}")), name=f"branch{k}") for k, w in enumerate(ws)]

    def direct():
        for w in ws:
            np.tanh(a @ w)
    return Case("d", "4 matmul+tanh branches", b.graph, [o.name for o in outs], {"x": a}, direct, ("x TF", 1.2))


def convnet() -> Case:
    from bench_conv import LAYERS, REFERENCES  # the direct numpy convolutions to compare with

    rng = np.random.default_rng(2)
    x_value = rng.standard_normal((8, 64, 64, 16), dtype=np.float32)
    filters = [rng.standard_normal((3, 3, 16, 16), dtype=np.float32) / 12 for _ in range(LAYERS)]
    b = GraphBuilder()
    h = b.placeholder(dtypes.float32, [8, 64, 64, 16], name="x")
    for k, f in enumerate(filters):
        h = b.conv2d(h, b.const(f, name=f"filter{k}"), strides=[1, 1, 1, 1], padding="SAME", name=f"conv{k}")
    fastest = min(REFERENCES.values(), key=lambda fn: median_of(lambda: fn(x_value, filters), 3))
    return Case("e", "4-layer 3x3 conv net, b8 64x64x16", b.graph, [h.name], {"x": x_value},
                lambda: fastest(x_value, filters), ("x TF", 2.0))


CASES = {"a": tiny_nodes, "b": while_loop, "c": mlp, "d": branches, "e": convnet}


def measure(case: Case, tf: TensorFlowReference, rounds: int) -> dict:
    """Median step times of dftool, numpy and TensorFlow, taken in interleaved rounds."""
    session = Session(case.graph)   # default threads: the cores this process may use
    with tf.live(case.graph, case.fetches, case.feeds) as tf_step:
        return interleaved({"ours": timed(lambda: session.run(case.fetches, case.feeds)),
                            "numpy": timed(case.direct), "tf": tf_step}, rounds)


def verdict(case: Case, m: dict) -> tuple[str, str]:
    unit, limit = case.target
    if case.count:   # overhead per node / per iteration beyond the kernels' own time
        value = (m["ours"] - m["numpy"]) / case.count * 1e6
        return f"{value:.2f} {unit}", "yes" if value <= limit else "NO"
    if m["tf"] is None:
        return "-", "?"
    value = m["ours"] / m["tf"]
    return f"{value:.2f}{unit}", "yes" if value <= limit else "NO"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (timing.interleaved)")
    parser.add_argument("--only", nargs="*", help="a subset of: " + " ".join(CASES))
    parser.add_argument("--tf-python", help="a Python with TensorFlow installed (default: $TF_PYTHON)")
    parser.add_argument("--busy", action="store_true", help="also measure with one busy process per core")
    args = parser.parse_args()
    tf = TensorFlowReference(tensorflow_python(args.tf_python))
    cases = [CASES[k]() for k in (args.only or CASES)]
    quiet = [measure(case, tf, args.rounds) for case in cases]
    print(f"{'benchmark':36} {'dftool':>10} {'numpy':>10} {'TF':>10} {'vs numpy':>9} {'vs TF':>7}  "
          f"{'measure':>18} {'target':>16} met")
    for case, m in zip(cases, quiet):
        tf_text = "-" if m["tf"] is None else f"{m['tf'] * 1e3:.2f}ms"
        value, met = verdict(case, m)
        unit, limit = case.target
        print(f"{case.key}) {case.title:33} {m['ours'] * 1e3:8.2f}ms {m['numpy'] * 1e3:8.2f}ms {tf_text:>10} "
              f"{ratio(m['ours'], m['numpy']):>9} {ratio(m['ours'], m['tf']):>7}  {value:>18} "
              f"{'<= ' + str(limit) + ' ' + unit:>16} {met}")
    if args.busy:
        cores = usable_cores()
        with busy_cores(cores):
            loaded = [measure(case, tf, args.rounds) for case in cases]
        print(f"\nwith {cores} busy process(es) beside: slow-down = loaded / quiet median "
              f"(target: dftool's within 15% of TensorFlow's)")
        print(f"{'benchmark':36} {'dftool':>18} {'TF':>18} {'dftool vs TF':>13}")
        for case, q, m in zip(cases, quiet, loaded):
            ours = m["ours"] / q["ours"]
            theirs = None if m["tf"] is None else m["tf"] / q["tf"]
            print(f"{case.key}) {case.title:33} {m['ours'] * 1e3:8.2f}ms {ours:6.2f}x "
                  f"{'-' if theirs is None else f'{m[chr(116) + chr(102)] * 1e3:8.2f}ms {theirs:6.2f}x':>18} "
                  f"{'-' if theirs is None else f'{ours / theirs:.2f}':>13}")
    if tf.version:
        print(f"\nTensorFlow {tf.version}; numpy {np.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
