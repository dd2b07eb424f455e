"""Executor benchmarks from the `dftool run` issue; prints one table (not a pass/fail test).

    .venv/bin/python tests/bench/bench_executor.py [--repeat N]

(a) 6 parallel chains of 250 tiny elementwise nodes: executor overhead per node executed
    (step time minus the same numpy calls made directly, over the node count);
(b) a 1000-iteration while loop with a small body: time per iteration;
(c) 4 x [512x2048 @ 2048x2048] MLP: ratio to the same numpy calls made directly;
(d) 4 independent 1024x1024 matmul+tanh branches: speed-up of the executor on 2 threads over the
    branches run one after another;
(e) a 4-layer 3x3 conv net, batch 8, 64x64x16: ratio to the best direct numpy convolution
    (tests/bench/bench_conv.py).
BLAS is pinned to one thread (set before numpy loads) so (d) measures the executor's own
parallelism rather than the BLAS library's.
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from graphtool import dtypes  # noqa: E402
from graphtool.builder import GraphBuilder  # noqa: E402
from graphtool.exec.session import Session  # noqa: E402
from tests.bench.timing import best_of  # noqa: E402


def bench_chains(repeat):
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
    session = Session(b.graph, threads=2)
    feed = {"x": np.ones(4, np.float32)}
    fetches = [e.name for e in ends]
    run = session.run(fetches, feed)
    nodes = run.nodes_executed
    step = best_of(lambda: session.run(fetches, feed), repeat)

    value, factor = np.ones(4, np.float32), np.float32(1.0001)

    def direct():
        for _ in range(chains):
            y = value
            for k in range(length):
                y = np.multiply(y, factor) if k % 2 else np.add(y, factor)
    kernels = best_of(direct, repeat)
    overhead_us = (step - kernels) / nodes * 1e6
    return ("(a) 6 x 250 tiny nodes", f"{step * 1e3:.1f} ms/step, {nodes} nodes",
            f"{overhead_us:.2f} us overhead/node", "<= 5 us/node", overhead_us <= 5)


def bench_loop(repeat):
    iterations = 1000
    b = GraphBuilder()
    _, acc = b.while_loop(lambda i, a: b.less(i, iterations), lambda i, a: [b.add(i, 1), b.mul(a, 1.0001)],
                          [b.const(0), b.const(np.float32(1.0))], name="loop")
    session = Session(b.graph, threads=2)
    step = best_of(lambda: session.run([acc.name]), repeat)
    per_iteration = step / iterations * 1e6
    return ("(b) 1000-iteration while loop", f"{step * 1e3:.1f} ms/step", f"{per_iteration:.1f} us/iteration",
            "<= 50 us/iteration", per_iteration <= 50)


def bench_mlp(repeat):
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal((2048, 2048), dtype=np.float32) * 0.02 for _ in range(4)]
    x_value = rng.standard_normal((512, 2048), dtype=np.float32)
    b = GraphBuilder()
    h = b.placeholder(dtypes.float32, [512, 2048], name="x")
    for k, w in enumerate(weights):
        h = b.matmul(h, b.const(w, name=f"w{k}"), name=f"layer{k}")
    session = Session(b.graph, threads=2)
    step = best_of(lambda: session.run([h.name], {"x": x_value}), repeat)

    def direct():
        y = x_value
        for w in weights:
            y = y @ w
    baseline = best_of(direct, repeat)
    ratio = step / baseline
    return ("(c) 4 x [512x2048 @ 2048x2048]", f"{step * 1e3:.1f} ms vs numpy {baseline * 1e3:.1f} ms",
            f"{ratio:.3f}x numpy", "<= 1.10x", ratio <= 1.10)


def bench_branches(repeat):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((1024, 1024), dtype=np.float32) * 0.03
    ws = [rng.standard_normal((1024, 1024), dtype=np.float32) * 0.03 for _ in range(4)]
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [1024, 1024], name="x")
    outs = [b.tanh(b.matmul(x, b.const(w, name=f"w{k}")), name=f"branch{k}") for k, w in enumerate(ws)]
    session = Session(b.graph, threads=2)
    fetches = [o.name for o in outs]
    parallel = best_of(lambda: session.run(fetches, {"x": a}), repeat)

    def sequential():
        for w in ws:
            np.tanh(a @ w)
    one_after_another = best_of(sequential, repeat)
    speedup = one_after_another / parallel
    return ("(d) 4 matmul+tanh branches, 2 threads", f"{parallel * 1e3:.1f} ms vs sequential "
            f"{one_after_another * 1e3:.1f} ms", f"{speedup:.2f}x faster", ">= 1.4x", speedup >= 1.4)


def bench_convnet(repeat):
    from bench_conv import LAYERS, REFERENCES  # the direct numpy convolutions to compare with

    rng = np.random.default_rng(2)
    x_value = rng.standard_normal((8, 64, 64, 16), dtype=np.float32)
    filters = [rng.standard_normal((3, 3, 16, 16), dtype=np.float32) / 12 for _ in range(LAYERS)]
    b = GraphBuilder()
    h = b.placeholder(dtypes.float32, [8, 64, 64, 16], name="x")
    for k, f in enumerate(filters):
        h = b.conv2d(h, b.const(f, name=f"filter{k}"), strides=[1, 1, 1, 1], padding="SAME", name=f"conv{k}")
    session = Session(b.graph, threads=2)
    step = best_of(lambda: session.run([h.name], {"x": x_value}), repeat)
    baseline = min(best_of(lambda fn=fn: fn(x_value, filters), repeat) for fn in REFERENCES.values())
    ratio = step / baseline
    return ("(e) 4-layer 3x3 conv net, b8 64x64x16", f"{step * 1e3:.1f} ms vs best numpy {baseline * 1e3:.1f} ms",
            f"{ratio:.2f}x numpy", "<= 2x", ratio <= 2.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", nargs="*", help="subset of a b c d e")
    args = parser.parse_args()
    benches = {"a": bench_chains, "b": bench_loop, "c": bench_mlp, "d": bench_branches, "e": bench_convnet}
    rows = [benches[k](args.repeat) for k in (args.only or benches)]
    print(f"{'benchmark':40} {'measured':44} {'result':26} {'target':20} met")
    for name, measured, result, target, met in rows:
        print(f"{name:40} {measured:44} {result:26} {target:20} {'yes' if met else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
