"""Cost of step statistics: step time with statistics off vs on; prints one table (not a
pass/fail test).

    python tests/bench/bench_profile_overhead.py [--repeat N] [--only NAME ...]

Graphs: the mlp, convnet and while_loop samples (tiny: every node costs microseconds, so they are
bound by executor overhead too), (chains) 6 parallel chains of 250 tiny elementwise nodes, the
executor-overhead benchmark of bench_executor.py, and (big-mlp) 4 x [256x1024 @ 1024x1024], where
kernels dominate. Off and on steps are interleaved so that load on the machine hits both alike;
the table shows medians. "build" is the time to turn one step's raw records into NodeExecutions
and its memory timeline, which happens after the step, when the stats are first read.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from graphtool import dtypes, graph_io  # noqa: E402
from graphtool.builder import GraphBuilder  # noqa: E402
from graphtool.exec.session import Session  # noqa: E402
from graphtool.ir import from_graphdef  # noqa: E402


def sample(name: str):
    graph = from_graphdef(graph_io.load_graphdef(str(ROOT / "sample_graphs" / f"{name}.pb")))
    feeds = dict(np.load(ROOT / "sample_graphs" / f"{name}.feeds.npz"))
    return graph, feeds


def chains():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [4], name="x")
    one = b.const(np.float32(1.0001), name="one")
    for c in range(6):
        y = x
        for k in range(250):
            y = b.op("Mul" if k % 2 else "AddV2", [y, one], name=f"c{c}/n{k}")
    return b.graph, {"x": np.ones(4, np.float32)}


def big_mlp():
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    h = b.placeholder(dtypes.float32, [256, 1024], name="x")
    for k in range(4):
        weight = rng.standard_normal((1024, 1024), dtype=np.float32) * 0.03
        h = b.relu(b.matmul(h, b.const(weight, name=f"w{k}"), name=f"layer{k}"), name=f"relu{k}")
    return b.graph, {"x": rng.standard_normal((256, 1024), dtype=np.float32)}


GRAPHS = {
    "mlp": lambda: sample("mlp"),
    "convnet": lambda: sample("convnet"),
    "while_loop": lambda: sample("while_loop"),
    "chains": chains,
    "big-mlp": big_mlp,
}


def measure(name: str, repeat: int, threads: int) -> tuple:
    graph, feeds = GRAPHS[name]()
    session = Session(graph, threads=threads)
    fetches = session.default_fetches()

    def step(trace: bool) -> tuple[float, object]:
        start = time.perf_counter()
        result = session.run(fetches, feeds, trace=trace, allow_dead=True)
        return time.perf_counter() - start, result

    for _ in range(max(3, repeat // 10)):   # warm-up: plans, caches, the thread pool
        step(False)
        step(True)
    off, on, build = [], [], []
    for _ in range(repeat):
        off.append(step(False)[0])
        elapsed, result = step(True)
        on.append(elapsed)
        start = time.perf_counter()
        executed = result.step_stats.nodes_executed   # builds the NodeExecutions
        result.step_stats.peak_bytes                      # and the memory timeline
        build.append(time.perf_counter() - start)
    off_ms, on_ms = statistics.median(off) * 1e3, statistics.median(on) * 1e3
    per_node_us = (on_ms - off_ms) * 1e3 / max(1, executed)
    return (name, executed, off_ms, on_ms, 100 * (on_ms / off_ms - 1), per_node_us,
            statistics.median(build) * 1e3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", nargs="*", choices=sorted(GRAPHS), help="subset of the graphs")
    args = parser.parse_args()
    print(f"{'graph':12} {'nodes':>6} {'off ms':>9} {'on ms':>9} {'overhead':>9} {'us/node':>8} {'build ms':>9}")
    for name in args.only or GRAPHS:
        row = measure(name, args.repeat, args.threads)
        print(f"{row[0]:12} {row[1]:6d} {row[2]:9.3f} {row[3]:9.3f} {row[4]:8.1f}% {row[5]:8.2f} {row[6]:9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
