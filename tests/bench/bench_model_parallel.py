"""The paper's model-parallel experiment (Figure 12), scaled to this machine; prints two tables
(not a pass/fail test).

    python tests/bench/bench_model_parallel.py [--repeat N] [--hidden H] [--batch B]
                                                         [--steps T] [--device-ms MS]

An 8-layer tanh RNN (sample_graphs/model_parallel.py), layer k on CPU:k, inside ONE while loop over
the time steps, is placed, partitioned and run on 8 executors (one thread each) joined by the
rendezvous, with parallel_iterations 1, 8 and 32. As with tf.while_loop, the loop's own nodes
(every layer's Merge/Switch/NextIteration) sit on CPU:0, so with one parallel iteration a time step
must leave every layer before the next one starts; with more, layer k works on step t while layer
k-1 is on step t+1 (a wavefront). For comparison: the layout where each layer's loop state lives
on its own device (each device's control skeleton then iterates on its own, so the pipeline forms
even with parallel_iterations 1), and the same graph on one executor (2 threads).

Table 1 computes on the host's cores (hidden 512, batch 64, 32 steps by default; BLAS pinned to
one thread, the matmuls release the GIL): its speed-up is bounded by the free cores (2 here, fewer
while other work runs). Table 2 gives every layer a device of its own, as the paper's 8 GPUs do:
each Tanh kernel also spends `--device-ms` of device time that holds no host core (a sleep), so
the pipelining shows whatever the cores. "Kernels in flight" is the average number of the layers'
MatMul/Tanh kernels running at once (their summed durations over the wall time of one traced step).
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from graphtool.exec.kernels import registry  # noqa: E402
from graphtool.exec.session import Session  # noqa: E402
from sample_graphs.model_parallel import stacked_rnn  # noqa: E402
from tests.bench.timing import best_of  # noqa: E402

FETCHES = ["final_state", "top_sum"]
PARALLEL_ITERATIONS = (1, 8, 32)
LAYOUTS = ("loop state on CPU:0 (paper)", "state per device", "one device")
LAYER_KERNELS = ("MatMul", "Tanh")


@contextmanager
def tanh_with_device_time(milliseconds: float):
    """Tanh kernels (in plans compiled inside the block) that also wait `milliseconds` without
    holding a core or the GIL: a stand-in for a kernel running on a device of its own. The bench
    swaps the registry entry for the duration; nothing else is changed."""
    key = ("Tanh", registry.CPU)
    original = registry.lookup(*key)

    def tanh(ctx, x):
        time.sleep(milliseconds / 1e3)
        return original.fn(ctx, x)
    registry._KERNELS[key] = dataclasses.replace(original, fn=tanh, expensive=True)
    try:
        yield
    finally:
        registry._KERNELS[key] = original


def kernels_in_flight(step_stats) -> float:
    """Average number of the layers' kernels running at once during a traced step."""
    busy = sum(n.duration_ns for device in step_stats.devices.values() for n in device.nodes
               if n.op in LAYER_KERNELS)
    return busy / max(step_stats.wall_ns, 1)


def measure(sizes: dict, repeat: int, parallel_iterations: int, layout: str) -> tuple[float, float, list, int]:
    """Best step time, kernels in flight, results and executor count for one configuration."""
    builder, feeds = stacked_rnn(np.random.default_rng(0), layers=8, parallel_iterations=parallel_iterations,
                                 colocate_state=layout == "state per device", **sizes)
    graph = builder.graph
    if layout == "one device":
        for node in graph.nodes:
            node.device = ""
    session = Session(graph, threads=2 if layout == "one device" else 1)
    seconds = best_of(lambda: session.run(FETCHES, feeds), repeat)
    result = session.run(FETCHES, feeds, trace=True)
    return seconds, kernels_in_flight(result.step_stats), result.values, len(result.devices)


def table(title: str, sizes: dict, repeat: int) -> None:
    print(title)
    print(f"  {'layout':30} {'executors':>9} {'parallel_iterations':>19} {'step ms':>9} {'speed-up vs 1':>14} "
          f"{'kernels in flight':>18}")
    reference = None
    for layout in LAYOUTS:
        base = None
        for parallel_iterations in PARALLEL_ITERATIONS:
            seconds, in_flight, values, executors = measure(sizes, repeat, parallel_iterations, layout)
            reference = reference or values
            # Same kernels in the same order on every layout: results must agree exactly.
            assert all(np.array_equal(a, b) for a, b in zip(values, reference)), layout
            base = base or seconds
            print(f"  {layout:30} {executors:9d} {parallel_iterations:19d} {seconds * 1e3:9.1f} "
                  f"{base / seconds:13.2f}x {in_flight:18.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--device-ms", type=float, default=5.0, help="table 2's device time per Tanh (0: skip)")
    args = parser.parse_args()
    sizes = dict(hidden=args.hidden, batch=args.batch, steps=args.steps)
    flops = 8 * args.steps * 2 * (2 * args.batch * args.hidden * args.hidden)
    table(f"1. 8-layer tanh RNN on the host's {os.cpu_count()} cores: hidden {args.hidden}, batch {args.batch}, "
          f"{args.steps} time steps ({flops / 1e9:.1f} GFLOP per step), best of {args.repeat}", sizes, args.repeat)
    if args.device_ms > 0:
        small = dict(hidden=16, batch=4, steps=args.steps)
        with tanh_with_device_time(args.device_ms):
            table(f"2. the same loop with a device per layer: every Tanh takes {args.device_ms:g} ms of device "
                  f"time ({8 * args.steps * args.device_ms:.0f} ms in sequence), hidden 16, batch 4", small, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
