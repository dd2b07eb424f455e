"""GPU benchmarks (not tests): dftool's GPU device against the same computation written directly in
cupy, and an LSTM-style loop with and without swap_memory under a device memory limit.

1. MLP: 4 layers of MatMul + BiasAdd + Relu, 2048 wide, batch 512, float32 (forward).
2. Conv net: 4 layers of 3x3 SAME Conv2D + BiasAdd + Relu, 64 channels, batch 32, 64x64, NHWC.
   The direct cupy version is the same im2col + matmul the Conv2D kernel does.
3. LSTM: a forward while loop of LSTM cells saving each step's activations on stacks for a
   backward loop that pops them in reverse (the memory pattern of a loop gradient), at a sequence
   length whose saved activations do not fit under --memory-limit (cupy's pool limit): without
   swapping the step runs out of device memory; with swap_memory the saved values live in pinned
   host memory; without the attr, the device's memory threshold (80% of the limit) swaps them.

Needs cupy and a CUDA GPU; without them it prints why and exits 0. `--simulate` runs every
contender at tiny sizes on the simulated GPU test double with numpy (checks the benchmark's
graphs and code paths, measures nothing meaningful).

With --jit the MLP and the conv net also run with Session(jit=True): XLA through JAX, on the GPU
when JAX has CUDA (else JAX's CPU, which the printed jit line shows).

    python tests/bench/bench_gpu.py [--repeat N] [--seq-len T] [--memory-limit GIB] [--simulate] [--jit]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from graphtool import dtypes  # noqa: E402
from graphtool.builder import GraphBuilder  # noqa: E402
from graphtool.exec.session import Session  # noqa: E402

FLOAT32 = dtypes.as_dtype("float32")


# --- the graphs ---------------------------------------------------------------------------------

def mlp_graph(width: int, batch: int, layers: int, rng):
    b = GraphBuilder()
    x = b.placeholder("float32", [batch, width], name="x")
    weights = [(rng.standard_normal((width, width), dtype=np.float32) / np.sqrt(width),
                rng.standard_normal(width, dtype=np.float32) * 0.1) for _ in range(layers)]
    for i, (w, bias) in enumerate(weights):
        x = b.op("Relu", [b.op("BiasAdd", [b.op("MatMul", [x, w], name=f"matmul{i}"), bias])], name=f"relu{i}")
    return b.graph, x.name, weights


def conv_graph(channels: int, batch: int, size: int, layers: int, rng):
    b = GraphBuilder()
    x = b.placeholder("float32", [batch, size, size, channels], name="x")
    weights = [(rng.standard_normal((3, 3, channels, channels), dtype=np.float32) / np.sqrt(9 * channels),
                rng.standard_normal(channels, dtype=np.float32) * 0.1) for _ in range(layers)]
    for i, (f, bias) in enumerate(weights):
        conv = b.op("Conv2D", [x, f], name=f"conv{i}", strides=[1, 1, 1, 1], padding="SAME")
        x = b.op("Relu", [b.op("BiasAdd", [conv, bias])], name=f"relu{i}")
    return b.graph, x.name, weights


def lstm_graph(batch: int, hidden: int, steps: int, swap_memory: bool, rng):
    """Forward: `steps` LSTM cells pushing (gates, cell) onto stacks; backward: pop them all in
    reverse into a running sum (a stand-in for the gradient's use of the saved values)."""
    b = GraphBuilder()
    x = b.placeholder("float32", [batch, hidden], name="x")
    kernel = rng.standard_normal((2 * hidden, 4 * hidden), dtype=np.float32) / np.sqrt(2 * hidden)
    saved_gates = b.op("StackV2", [np.int32(-1)], name="saved_gates", elem_type=FLOAT32)
    saved_cells = b.op("StackV2", [np.int32(-1)], name="saved_cells", elem_type=FLOAT32)

    def cell(i, h, c):
        gates = b.op("MatMul", [b.op("ConcatV2", [[x, h], np.int32(1)]), kernel])
        gates = b.op("StackPushV2", [saved_gates, gates], swap_memory=swap_memory)
        i_gate, f_gate, o_gate, g_gate = b.op("Split", [np.int32(1), gates], num_split=4)
        c = b.op("AddV2", [b.op("Mul", [b.op("Sigmoid", [f_gate]), c]),
                           b.op("Mul", [b.op("Sigmoid", [i_gate]), b.op("Tanh", [g_gate])])])
        c = b.op("StackPushV2", [saved_cells, c], swap_memory=swap_memory)
        h = b.op("Mul", [b.op("Sigmoid", [o_gate]), b.op("Tanh", [c])])
        return [b.op("AddV2", [i, np.int32(1)]), h, c]

    zeros = np.zeros((batch, hidden), np.float32)
    _, h, _ = b.while_loop(lambda i, h, c: b.op("Less", [i, np.int32(steps)]), cell, [np.int32(0), zeros, zeros],
                           parallel_iterations=1, name="forward")

    def backward(total, j):
        gates = b.op("StackPopV2", [saved_gates], elem_type=FLOAT32)
        cells = b.op("StackPopV2", [saved_cells], elem_type=FLOAT32)
        used = b.op("AddV2", [b.op("Sum", [gates, np.int32(1)], keep_dims=True), cells])
        return [b.op("AddV2", [total, used]), b.op("AddV2", [j, np.int32(1)])]
    total, _ = b.while_loop(lambda total, j: b.op("Less", [j, np.int32(steps)]), backward, [h, np.int32(0)],
                            parallel_iterations=1, name="backward")
    return b.graph, total.name


# --- the same computations in the array module directly -------------------------------------------

def direct_mlp(xp, x, weights):
    for w, bias in weights:
        x = xp.maximum(x @ w + bias, 0)
    return x


def direct_conv(xp, x, weights):
    for f, bias in weights:
        n, h, w, c = x.shape
        padded = xp.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
        windows = xp.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(1, 2))
        columns = windows.transpose(0, 1, 2, 4, 5, 3).reshape(n * h * w, 9 * c)
        x = xp.maximum((columns @ f.reshape(9 * c, -1)).reshape(n, h, w, -1) + bias, 0)
    return x


# --- timing -----------------------------------------------------------------------------------------

def best_time(run, synchronize, repeat: int) -> float:
    run()
    synchronize()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        synchronize()
        times.append(time.perf_counter() - start)
    return min(times)


def compare(name: str, graph, fetch: str, feeds, direct, env, args, rtol: float) -> None:
    """Time the graph on the device against `direct()` and print their ratio; with --jit also the
    graph with its clusters compiled by XLA (JAX on the same GPU when JAX has CUDA)."""
    expected = env.asnumpy(direct())
    direct_s = best_time(direct, env.synchronize, args.repeat)
    for label, jit in ((name, False),) + (((f"  {name.split(',')[0]} --jit", True),) if args.jit else ()):
        session = Session(graph, device=env.device, jit=jit)
        ours = session.run([fetch], feeds).values[0]
        np.testing.assert_allclose(ours, expected, rtol=rtol, atol=rtol)
        ours_s = best_time(lambda: session.run([fetch], feeds), env.synchronize, args.repeat)
        print(f"{label:<34}{ours_s * 1e3:>12.2f}{direct_s * 1e3:>12.2f}{ours_s / direct_s:>10.2f}x")
        if jit and session.jit_report is not None:
            from graphtool.jit import runtime

            print(f"    {session.jit_report.summary()}; JAX device {runtime.jax_device(env.device)}")


def bench_mlp(env, args, rng) -> None:
    width, batch = (2048, 512) if not args.simulate else (32, 8)
    graph, fetch, weights = mlp_graph(width, batch, 4, rng)
    x = rng.standard_normal((batch, width), dtype=np.float32)
    on_device = [(env.xp.asarray(w), env.xp.asarray(bias)) for w, bias in weights]
    x_device = env.xp.asarray(x)
    compare(f"MLP 4x{width}, batch {batch}", graph, fetch, {"x": x},
            lambda: direct_mlp(env.xp, x_device, on_device), env, args, 1e-3)


def bench_conv(env, args, rng) -> None:
    channels, batch, size = (64, 32, 64) if not args.simulate else (4, 2, 8)
    graph, fetch, weights = conv_graph(channels, batch, size, 4, rng)
    x = rng.standard_normal((batch, size, size, channels), dtype=np.float32)
    on_device = [(env.xp.asarray(f), env.xp.asarray(bias)) for f, bias in weights]
    x_device = env.xp.asarray(x)
    compare(f"conv net 4x3x3x{channels}, {batch}x{size}x{size}", graph, fetch, {"x": x},
            lambda: direct_conv(env.xp, x_device, on_device), env, args, 1e-3)


def bench_lstm(env, args, rng) -> None:
    batch, hidden = (512, 1024) if not args.simulate else (4, 8)
    steps = args.seq_len if not args.simulate else 6
    saved_bytes = steps * batch * hidden * 5 * 4     # gates (4 * hidden) and cell per step
    print(f"LSTM batch {batch}, hidden {hidden}, {steps} steps: {saved_bytes / 2**30:.2f} GiB saved for the "
          f"backward loop; device memory limit {args.memory_limit:g} GiB")
    x = rng.standard_normal((batch, hidden), dtype=np.float32)
    no_threshold = 1 << 62
    for swap_memory, threshold, label in ((False, no_threshold, "  no swapping"),
                                          (True, no_threshold, "  swap_memory=True"),
                                          (False, None, "  memory threshold only")):
        graph, fetch = lstm_graph(batch, hidden, steps, swap_memory, rng)
        device = env.fresh_device(int(args.memory_limit * 2**30), threshold)
        session = Session(graph, device=device)
        try:
            seconds = best_time(lambda: session.run([fetch], {"x": x}, timeout=3600), env.synchronize, 1)
        except Exception as exc:   # out of device memory is the expected result without swapping
            print(f"{label:<34} failed: {' '.join(str(exc).split())[:160]}")
            continue
        stats = device.swapper.stats
        print(f"{label:<34}{seconds:>10.2f} s  swapped out {stats.swapped_out}, prefetch hits "
              f"{stats.prefetch_hits}, peak stack device bytes {stats.peak_stack_device_bytes / 2**20:.1f} MiB")


class CupyEnv:
    def __init__(self):
        import cupy

        from graphtool.exec.device_factory import create_device

        self.cupy = cupy
        self.xp = cupy
        self.device = create_device("gpu")
        self.name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()

    def asnumpy(self, value):
        return self.cupy.asnumpy(value)

    def synchronize(self):
        self.cupy.cuda.Device().synchronize()

    def fresh_device(self, limit_bytes: int, swap_threshold_bytes: int | None):
        from graphtool.exec.gpu import GPUDevice

        pool = self.cupy.get_default_memory_pool()
        pool.free_all_blocks()
        pool.set_limit(size=limit_bytes)
        return GPUDevice(0, swap_threshold_bytes=swap_threshold_bytes)


class SimulatedEnv:
    """Tiny sizes on the simulated GPU with numpy as the direct contender."""

    name = "simulated GPU (numpy test double)"
    xp = np

    def __init__(self):
        from graphtool.exec.sim_gpu import SimulatedGPUDevice

        self._make = SimulatedGPUDevice
        self.device = SimulatedGPUDevice()

    def asnumpy(self, value):
        return np.asarray(value)

    def synchronize(self):
        """numpy is synchronous."""

    def fresh_device(self, limit_bytes: int, swap_threshold_bytes: int | None):
        return self._make(swap_threshold_bytes=swap_threshold_bytes if swap_threshold_bytes is not None
                          else limit_bytes * 8 // 10)


def environment(simulate: bool):
    """The benchmark environment, or None with the reason printed."""
    if simulate:
        return SimulatedEnv()
    try:
        return CupyEnv()
    except ImportError as exc:
        print(f"skipped: cupy is not installed ({exc}); pip install 'dftool[gpu]' on a GPU machine")
    except Exception as exc:   # DeviceUnavailable: cupy is there, a GPU is not
        print(f"skipped: {exc}")
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--seq-len", type=int, default=1000)
    parser.add_argument("--memory-limit", type=float, default=8.0, help="GiB of device memory for the LSTM")
    parser.add_argument("--simulate", action="store_true", help="tiny sizes on the GPU test double")
    parser.add_argument("--jit", action="store_true", help="also time the MLP and conv net with Session(jit=True)")
    args = parser.parse_args()
    env = environment(args.simulate)
    if env is None:
        return
    rng = np.random.default_rng(0)
    print(f"device: {env.name}; TF32 off; best of {args.repeat}")
    print(f"{'workload':<34}{'dftool ms':>12}{'direct ms':>12}{'ratio':>11}")
    bench_mlp(env, args, rng)
    bench_conv(env, args, rng)
    bench_lstm(env, args, rng)


if __name__ == "__main__":
    main()
