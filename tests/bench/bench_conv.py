"""Conv2D kernel speed against hand-written numpy convolutions (a benchmark, not a test).

The workload: a 4-layer net of 3x3 SAME convolutions, 16 -> 16 channels, batch 8, 64x64 images,
NHWC float32, forward only. Each contender computes all four layers; the table gives the best of
several runs per contender and its ratio to the fastest hand-written one (the target for our
kernel is within 2x).

`--layers` times single MobileNet/ResNet-style layers instead (1x1 pointwise, 3x3 at 64-512
channels, depthwise 3x3 stride 1 and 2): our kernel against the fastest numpy reference for the
layer, and against TensorFlow (one-op graphs in its own process) with --tf-python. Everything
runs on one thread (BLAS pinned to one, intra-op grant 1) unless --threads says otherwise.

    python tests/bench/bench_conv.py [--repeat N] [--batch B] [--size S] [--channels C]
    python tests/bench/bench_conv.py --layers [--threads T] [--tf-python PYTHON]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from graphtool import dtypes  # noqa: E402
from graphtool.exec import thread_budget  # noqa: E402
from graphtool.exec.kernels import CPU, KernelContext, lookup  # noqa: E402

LAYERS = 4


def ours(x, filters):
    conv = lookup("Conv2D", CPU).fn
    ctx = KernelContext(np, "conv", "Conv2D", [dtypes.float32], CPU)
    for f in filters:
        x = conv(ctx, x, f, strides=[1, 1, 1, 1], padding="SAME", explicit_paddings=[],
                 data_format="NHWC", dilations=[1, 1, 1, 1])
    return x


def _pad_same(x, k):
    return np.pad(x, ((0, 0), (k // 2, k - 1 - k // 2), (k // 2, k - 1 - k // 2), (0, 0)))


def im2col_matmul(x, filters):
    """Explicit im2col: copy every 3x3 window into a matrix row, then one matmul."""
    for f in filters:
        k = f.shape[0]
        n, h, w, c = x.shape
        windows = np.lib.stride_tricks.sliding_window_view(_pad_same(x, k), (k, k), axis=(1, 2))
        columns = windows.transpose(0, 1, 2, 4, 5, 3).reshape(n * h * w, k * k * c)
        x = (columns @ f.reshape(k * k * c, -1)).reshape(n, h, w, -1)
    return x


def shifted_matmuls(x, filters):
    """One matmul per filter tap on a shifted view of the padded input, accumulated."""
    for f in filters:
        k = f.shape[0]
        n, h, w, _ = x.shape
        padded = _pad_same(x, k)
        out = np.zeros((n, h, w, f.shape[-1]), x.dtype)
        for i in range(k):
            for j in range(k):
                out += padded[:, i:i + h, j:j + w, :] @ f[i, j]
        x = out
    return x


def einsum_windows(x, filters):
    """np.einsum over the sliding-window view (optimize lets it route through BLAS)."""
    for f in filters:
        k = f.shape[0]
        windows = np.lib.stride_tricks.sliding_window_view(_pad_same(x, k), (k, k), axis=(1, 2))
        x = np.einsum("nhwcij,ijco->nhwo", windows, f, optimize=True)
    return x


def tensordot_windows(x, filters):
    """np.tensordot over the sliding-window view (it makes the im2col copy itself)."""
    for f in filters:
        k = f.shape[0]
        windows = np.lib.stride_tricks.sliding_window_view(_pad_same(x, k), (k, k), axis=(1, 2))
        x = np.tensordot(windows, f.transpose(2, 0, 1, 3), axes=([3, 4, 5], [0, 1, 2]))
    return x


REFERENCES = {"im2col + matmul": im2col_matmul, "shifted matmuls (9 taps)": shifted_matmuls,
              "einsum on window view": einsum_windows, "tensordot on window view": tensordot_windows}


def best_time(fn, args, repeat: int) -> float:
    fn(*args)   # warm up (allocator, BLAS threads)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return min(times)


# --- single layers -----------------------------------------------------------------------------
# (name, input NHWC, filter taps, output channels or None for depthwise, stride)
LAYER_SHAPES = [
    ("conv net layer 3x3 16->16", (8, 64, 64, 16), 3, 16, 1),
    ("ResNet 3x3 64->64 @56", (1, 56, 56, 64), 3, 64, 1),
    ("ResNet 3x3 128->128 @28", (1, 28, 28, 128), 3, 128, 1),
    ("ResNet 3x3 256->256 @14", (1, 14, 14, 256), 3, 256, 1),
    ("ResNet 3x3 512->512 @7", (1, 7, 7, 512), 3, 512, 1),
    ("ResNet 3x3 128->128 @56 s2", (1, 56, 56, 128), 3, 128, 2),
    ("pointwise 1x1 32->64 @112", (1, 112, 112, 32), 1, 64, 1),
    ("pointwise 1x1 128->128 @56", (1, 56, 56, 128), 1, 128, 1),
    ("pointwise 1x1 512->512 @14", (1, 14, 14, 512), 1, 512, 1),
    ("ResNet 1x1 64->256 @56, b8", (8, 56, 56, 64), 1, 256, 1),
    ("depthwise 3x3 32 @112", (1, 112, 112, 32), 3, None, 1),
    ("depthwise 3x3 96 @112 s2", (1, 112, 112, 96), 3, None, 2),
    ("depthwise 3x3 144 @56", (1, 56, 56, 144), 3, None, 1),
    ("depthwise 3x3 384 @14", (1, 14, 14, 384), 3, None, 1),
    ("depthwise 3x3 960 @7", (1, 7, 7, 960), 3, None, 1),
]


def _same_pads(size: int, k: int, s: int) -> tuple[int, int]:
    needed = max(0, (-(-size // s) - 1) * s + k - size)
    return needed // 2, needed - needed // 2


def _layer_contenders(x, f, stride: int, depthwise: bool) -> dict:
    """Our kernel and the numpy references for one layer, as thunks."""
    op = "DepthwiseConv2dNative" if depthwise else "Conv2D"
    kernel = lookup(op, CPU).fn
    ctx = KernelContext(np, "conv", op, [dtypes.float32], CPU)
    attrs = dict(strides=[1, stride, stride, 1], padding="SAME", explicit_paddings=[], data_format="NHWC",
                 dilations=[1, 1, 1, 1])
    k = f.shape[0]
    pads = [_same_pads(size, k, stride) for size in x.shape[1:3]]
    padded = np.pad(x, ((0, 0), *pads, (0, 0)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (k, k), axis=(1, 2))[:, ::stride, ::stride]
    out = windows.shape[1:3]

    def tap(i, j):
        return padded[:, i:i + (out[0] - 1) * stride + 1:stride, j:j + (out[1] - 1) * stride + 1:stride]
    if depthwise:
        weights = f[:, :, :, 0]
        return {"ours": lambda: kernel(ctx, x, f, **attrs),
                "einsum on window view": lambda: np.einsum("nhwcij,ijc->nhwc", windows, weights),
                "multiply-add per tap": lambda: sum(tap(i, j) * weights[i, j] for i in range(k) for j in range(k))}
    matrix = f.reshape(-1, f.shape[-1])
    return {"ours": lambda: kernel(ctx, x, f, **attrs),
            "im2col + matmul": lambda: (windows.transpose(0, 1, 2, 4, 5, 3).reshape(-1, matrix.shape[0])
                                        @ matrix).reshape(*x.shape[:1], *out, -1),
            "matmul per tap": lambda: sum(tap(i, j) @ f[i, j] for i in range(k) for j in range(k))}


def _tf_layer_time(tf, x, f, stride: int, depthwise: bool, repeat: int):
    from graphtool.builder import GraphBuilder

    b = GraphBuilder()
    h = b.placeholder(dtypes.float32, list(x.shape), name="x")
    attrs = dict(strides=[1, stride, stride, 1], padding="SAME", data_format="NHWC", dilations=[1, 1, 1, 1])
    if depthwise:
        y = b.op("DepthwiseConv2dNative", [h, b.const(f, name="f")], name="y", **attrs)
    else:
        y = b.conv2d(h, b.const(f, name="f"), strides=attrs["strides"], padding="SAME", name="y")
    return tf.median(b.graph, [y.name], {"x": x}, repeat)


def layers_table(repeat: int, threads: int, tf_python: str | None) -> None:
    from threadpoolctl import threadpool_limits
    from timing import TensorFlowReference, tensorflow_python

    tf = TensorFlowReference(tensorflow_python(tf_python)) if tf_python else None
    rng = np.random.default_rng(0)
    print(f"single layers, NHWC float32, SAME, median of {repeat} round-robin runs; {threads} thread(s)")
    print(f"{'layer':<30}{'ours ms':>9}{'best numpy ms':>15}{'(which)':>24}{'vs numpy':>10}"
          + (f"{'TF ms':>8}{'vs TF':>7}" if tf else ""))
    for name, shape, k, out_channels, stride in LAYER_SHAPES:
        x = rng.standard_normal(shape, dtype=np.float32)
        depthwise = out_channels is None
        f = (rng.standard_normal((k, k, shape[-1], 1 if depthwise else out_channels))
             / np.sqrt(k * k * (1 if depthwise else shape[-1]))).astype(np.float32)
        contenders = _layer_contenders(x, f, stride, depthwise)
        expected = contenders["ours"]()
        times = {label: [] for label in contenders}
        with threadpool_limits(threads, user_api="blas"):
            thread_budget.grant(threads)
            try:
                for label, fn in contenders.items():
                    np.testing.assert_allclose(fn(), expected, rtol=1e-3, atol=1e-3)   # and warm up
                for _ in range(repeat):   # round robin: a shared machine's drifts hit every contender
                    for label, fn in contenders.items():
                        start = time.perf_counter()
                        fn()
                        times[label].append(time.perf_counter() - start)
            finally:
                thread_budget.grant(1)
        times = {label: statistics.median(values) for label, values in times.items()}
        ours = times.pop("ours")
        best = min(times, key=times.get)
        line = (f"{name:<30}{ours * 1e3:>9.2f}{times[best] * 1e3:>15.2f}{best:>24}"
                f"{ours / times[best]:>9.2f}x")
        if tf:
            tf_time = _tf_layer_time(tf, x, f, stride, depthwise, repeat)
            line += f"{tf_time * 1e3:>8.2f}{ours / tf_time:>6.2f}x" if tf_time else ""
        print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--channels", type=int, default=16)
    parser.add_argument("--layers", action="store_true", help="time single MobileNet/ResNet-style layers")
    parser.add_argument("--threads", type=int, default=1, help="--layers: BLAS threads and the intra-op grant")
    parser.add_argument("--tf-python", help="--layers: a Python with TensorFlow, for a TF column")
    args = parser.parse_args()
    if args.layers:
        layers_table(args.repeat, args.threads, args.tf_python)
        return
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.batch, args.size, args.size, args.channels), dtype=np.float32)
    filters = [rng.standard_normal((3, 3, args.channels, args.channels), dtype=np.float32) / 12
               for _ in range(LAYERS)]

    expected = im2col_matmul(x, filters)
    results = {}
    for name, fn in {"ours: Conv2D kernel": ours, **REFERENCES}.items():
        np.testing.assert_allclose(fn(x, filters), expected, rtol=1e-3, atol=1e-4)
        results[name] = best_time(fn, (x, filters), args.repeat)

    best_reference = min(results[name] for name in REFERENCES)
    flops = 2 * LAYERS * x.size * 9 * args.channels
    print(f"{LAYERS} x Conv2D 3x3 SAME, input {list(x.shape)} NHWC float32, best of {args.repeat}")
    print(f"{'implementation':<28}{'ms (4 layers)':>15}{'GFLOP/s':>10}{'vs best numpy':>15}")
    for name, seconds in results.items():
        print(f"{name:<28}{seconds * 1e3:>15.2f}{flops / seconds / 1e9:>10.1f}"
              f"{seconds / best_reference:>14.2f}x")


if __name__ == "__main__":
    main()
