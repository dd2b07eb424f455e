"""The paper's model-parallel experiment (Figure 12), scaled to this machine; prints one table
(not a pass/fail test).

    .venv/bin/python tests/bench/bench_model_parallel.py [--repeat N] [--hidden H] [--batch B] [--steps T]

An 8-layer tanh RNN (sample_graphs/model_parallel.py: hidden 512, batch 64, 32 time steps by
default), layer k on CPU:k, inside ONE while loop over the time steps, is placed, partitioned
and run on 8 executors (one thread each) joined by the rendezvous, with parallel_iterations 1, 8
and 32. As with tf.while_loop, the loop's own nodes (every layer's Merge/Switch/NextIteration)
sit on CPU:0, so with one parallel iteration a time step must leave every layer before the next
one starts; with more, layer k works on step t while layer k-1 is on step t+1 (a wavefront).
For comparison: the same graph on one executor (2 threads), and the layout where each layer's
loop state lives on its own device (each device's control skeleton then iterates on its own,
so the pipeline forms even with parallel_iterations 1).

BLAS is pinned to one thread (before numpy loads) so that parallelism comes from the executors;
the matmuls release the GIL. The speed-up is bounded by the number of free cores (2 here, fewer
when other work runs; the paper used 8 GPUs), so the table also shows how many MatMuls were in
progress at once on average (their summed durations over the step's wall time, from one traced
run): the pipelining itself, whatever the cores.
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from graphtool.exec.session import Session  # noqa: E402
from sample_graphs.model_parallel import stacked_rnn  # noqa: E402

FETCHES = ["final_state", "top_sum"]
PARALLEL_ITERATIONS = (1, 8, 32)


def best_of(fn, repeat: int) -> float:
    fn()  # warm-up: placement, partitioning, plan compilation
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def matmuls_in_flight(step_stats) -> float:
    """Average number of MatMuls running at once during a traced step."""
    busy = sum(n.duration_ns for device in step_stats.devices.values() for n in device.nodes if n.op == "MatMul")
    return busy / max(step_stats.wall_ns, 1)


def measure(args, parallel_iterations: int, layout: str) -> tuple[float, float, list, int]:
    """Best step time, MatMuls in flight, results and executor count for one configuration."""
    builder, feeds = stacked_rnn(np.random.default_rng(0), layers=8, hidden=args.hidden, batch=args.batch,
                                 steps=args.steps, parallel_iterations=parallel_iterations,
                                 colocate_state=layout == "state per device")
    graph = builder.graph
    if layout == "one device":
        for node in graph.nodes:
            node.device = ""
    session = Session(graph, threads=2 if layout == "one device" else 1)
    seconds = best_of(lambda: session.run(FETCHES, feeds), args.repeat)
    result = session.run(FETCHES, feeds, trace=True)
    return seconds, matmuls_in_flight(result.step_stats), result.values, len(result.devices)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=32)
    args = parser.parse_args()
    flops = 8 * args.steps * 2 * (2 * args.batch * args.hidden * args.hidden)
    print(f"8-layer tanh RNN, hidden {args.hidden}, batch {args.batch}, {args.steps} time steps "
          f"({flops / 1e9:.1f} GFLOP per step), best of {args.repeat}, {os.cpu_count()} cores")
    print(f"{'layout':30} {'executors':>9} {'parallel_iterations':>19} {'step ms':>9} {'speed-up vs 1':>14} "
          f"{'MatMuls in flight':>18}")
    reference = None
    for layout in ("loop state on CPU:0 (paper)", "state per device", "one device"):
        base = None
        for parallel_iterations in PARALLEL_ITERATIONS:
            seconds, in_flight, values, executors = measure(args, parallel_iterations, layout)
            reference = reference or values
            # Same kernels in the same order on every layout: results must agree exactly.
            assert all(np.array_equal(a, b) for a, b in zip(values, reference)), layout
            base = base or seconds
            print(f"{layout:30} {executors:9d} {parallel_iterations:19d} {seconds * 1e3:9.1f} "
                  f"{base / seconds:13.2f}x {in_flight:18.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
