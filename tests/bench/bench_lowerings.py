"""Per-op lowering choices, measured (a benchmark, not a test): for each workload, the
interpreter's kernel against the registered JAX lowering under jax.jit and against the
alternatives a lowering could have used. The numbers behind the comments in
graphtool/jit/lowerings/conv.py and pool.py come from this script.

Each contender runs `--repeat` times after a warm-up (compilation excluded); the table gives the
median in ms and the ratio to the interpreter. Timings on a shared machine are noisy: compare
ratios within one run.

    python tests/bench/bench_lowerings.py [--repeat N] [--only NAME]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_enable_x64", True)

from graphtool import dtypes  # noqa: E402
from graphtool.exec.kernels import CPU, KernelContext, bind, lookup  # noqa: E402
from graphtool.ir import Graph  # noqa: E402
from graphtool.jit.lowerings import registry  # noqa: E402

RNG = np.random.default_rng(0)


def node_of(op, arrays, attrs):
    graph = Graph()
    refs = [graph.add_node("Const", f"in{i}", attrs={"value": a, "dtype": dtypes.as_dtype(a.dtype)}).output(0)
            for i, a in enumerate(arrays)]
    attrs = {"T": dtypes.as_dtype(arrays[0].dtype), **attrs}
    return graph.add_node(op, op.lower(), inputs=refs, attrs=attrs)


def interpreter_fn(node):
    kernel_def = lookup(node.op, CPU)
    ctx = KernelContext(np, node.name, node.op, node.spec.output_dtypes(node), CPU)
    bound = bind(kernel_def, node)
    return lambda *arrays: bound(ctx, *arrays)


def lowering_ctx(node):
    out = [d.base.numpy for d in node.spec.output_dtypes(node)]
    return registry.LowerContext(node, out, jnp, jax.lax)


def lowered_fn(node, arrays):
    lowering = registry.lookup(node.op)
    static = set(lowering.static_inputs)
    ctx = lowering_ctx(node)
    traced_at = [i for i in range(len(arrays)) if i not in static]

    def fn(*traced):
        values = list(arrays)
        for i, value in zip(traced_at, traced):
            values[i] = value
        return lowering.fn(ctx, *values)
    compiled = jax.jit(fn)
    return lambda *values: compiled(*(values[i] for i in traced_at))


def timed(fn, arrays, repeat):
    def once():
        out = fn(*arrays)
        jax.block_until_ready(out) if not isinstance(out, np.ndarray) else None
    once()
    once()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        once()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def conv_attrs(stride=1, padding="SAME"):
    return {"strides": [1, stride, stride, 1], "padding": padding, "data_format": "NHWC",
            "dilations": [1, 1, 1, 1], "explicit_paddings": []}


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def workload_mobilenet_block(repeat):
    """Depthwise 3x3 SAME + pointwise 1x1, 1x56x56x96 (issue 15's example)."""
    x, dw, pw = f32(1, 56, 56, 96), f32(3, 3, 96, 1), f32(1, 1, 96, 96)
    depthwise = node_of("DepthwiseConv2dNative", [x, dw], conv_attrs())
    pointwise = node_of("Conv2D", [x, pw], conv_attrs())
    interp_dw, interp_pw = interpreter_fn(depthwise), interpreter_fn(pointwise)
    dw_lowering, pw_lowering = registry.lookup("DepthwiseConv2dNative").fn, registry.lookup("Conv2D").fn
    dctx, pctx = lowering_ctx(depthwise), lowering_ctx(pointwise)

    def grouped(x, dw, pw):
        y = jax.lax.conv_general_dilated(x, dw.reshape(3, 3, 1, 96), (1, 1), "SAME",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=96)
        return pw_lowering(pctx, y, pw)

    return {
        "interpreter (depthwise kernel + Conv2D kernel)": (lambda x, dw, pw: interp_pw(interp_dw(x, dw), pw), False),
        "jit: depthwise as shifted multiply-adds (chosen)": (
            jax.jit(lambda x, dw, pw: pw_lowering(pctx, dw_lowering(dctx, x, dw), pw)), True),
        "jit: XLA grouped convolution": (jax.jit(grouped), True),
    }, [x, dw, pw]


def depthwise_workload(shape, taps, stride, multiplier=1):
    def workload(repeat):
        channels = shape[-1]
        x, w = f32(*shape), f32(taps, taps, channels, multiplier)
        node = node_of("DepthwiseConv2dNative", [x, w], conv_attrs(stride))
        ctx = lowering_ctx(node)

        def grouped(x, w):
            return jax.lax.conv_general_dilated(
                x, w.reshape(taps, taps, 1, channels * multiplier), (stride, stride), "SAME",
                dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=channels)

        return {"interpreter DepthwiseConv2dNative kernel": (interpreter_fn(node), False),
                "jit: shifted multiply-adds (chosen)": (
                    jax.jit(lambda x, w: registry.lookup("DepthwiseConv2dNative").fn(ctx, x, w)), True),
                "jit: XLA grouped convolution": (jax.jit(grouped), True)}, [x, w]
    workload.__doc__ = f"DepthwiseConv2dNative {shape} {taps}x{taps} x{multiplier}, stride {stride}, SAME"
    return workload


def conv_workload(shape, taps, out, stride, padding="SAME"):
    def workload(repeat):
        x, w = f32(*shape), f32(taps, taps, shape[-1], out)
        node = node_of("Conv2D", [x, w], conv_attrs(stride, padding))
        ctx = lowering_ctx(node)

        def im2col(x, w):   # patches [N, oh, ow, k*k*C] @ [k*k*C, O]
            patches = jax.lax.conv_general_dilated_patches(
                x, (taps, taps), (stride, stride), padding, dimension_numbers=("NHWC", "HWIO", "NHWC"))
            # conv_general_dilated_patches orders a patch as [C, kh, kw]
            return patches @ w.transpose(2, 0, 1, 3).reshape(-1, out)

        return {"interpreter Conv2D kernel": (interpreter_fn(node), False),
                "jit: lax.conv_general_dilated (chosen)": (
                    jax.jit(lambda x, w: registry.lookup("Conv2D").fn(ctx, x, w)), True),
                "jit: im2col patches @ matmul": (jax.jit(im2col), True)}, [x, w]
    workload.__doc__ = f"Conv2D {shape} {taps}x{taps} -> {out}, stride {stride}, {padding}"
    return workload


def single_op_workload(op, arrays, attrs, doc):
    def workload(repeat):
        node = node_of(op, arrays, attrs)
        return {f"interpreter {op} kernel": (interpreter_fn(node), False),
                f"jit: {op} lowering": (lowered_fn(node, arrays), True)}, arrays
    workload.__doc__ = doc
    return workload


def pool_attrs(k, s, padding="SAME"):
    return {"ksize": [1, k, k, 1], "strides": [1, s, s, 1], "padding": padding, "data_format": "NHWC",
            "explicit_paddings": []}


WORKLOADS = {
    "mobilenet_block": workload_mobilenet_block,
    "depthwise_stride2": depthwise_workload((1, 112, 112, 32), 3, 2),
    "depthwise_5x5": depthwise_workload((1, 28, 28, 240), 5, 1),
    "depthwise_multiplier": depthwise_workload((4, 32, 32, 16), 3, 1, multiplier=4),
    "conv_net_layer": conv_workload((8, 64, 64, 16), 3, 16, 1),
    "conv_first_layer": conv_workload((1, 224, 224, 3), 3, 32, 2),
    "conv_pointwise": conv_workload((1, 56, 56, 96), 1, 96, 1),
    "conv_deep": conv_workload((1, 14, 14, 256), 3, 256, 1),
    "maxpool": single_op_workload("MaxPool", [f32(8, 64, 64, 32)], pool_attrs(3, 2), "MaxPool 3x3/2 8x64x64x32"),
    "avgpool": single_op_workload("AvgPool", [f32(8, 64, 64, 32)], pool_attrs(3, 2), "AvgPool 3x3/2 8x64x64x32"),
    "batchnorm": single_op_workload("FusedBatchNormV3", [f32(8, 32, 32, 64), *(f32(64) for _ in range(3)),
                                                         np.abs(f32(64))],
                                    {"is_training": False, "epsilon": 1e-3, "data_format": "NHWC",
                                     "U": dtypes.float32}, "FusedBatchNormV3 inference 8x32x32x64"),
    "maxpool_grad": single_op_workload(
        "MaxPoolGrad", [f32(8, 64, 64, 32), f32(8, 32, 32, 32), f32(8, 32, 32, 32)], pool_attrs(3, 2),
        "MaxPoolGrad 3x3/2 8x64x64x32"),
    "avgpool_grad": single_op_workload(
        "AvgPoolGrad", [np.array([8, 64, 64, 32], np.int32), f32(8, 32, 32, 32)], pool_attrs(3, 2),
        "AvgPoolGrad 3x3/2 8x64x64x32"),
    "conv_backprop_input": single_op_workload(
        "Conv2DBackpropInput", [np.array([8, 32, 32, 32], np.int32), f32(3, 3, 32, 32), f32(8, 32, 32, 32)],
        conv_attrs(), "Conv2DBackpropInput 3x3 8x32x32x32 -> 32"),
    "conv_backprop_filter": single_op_workload(
        "Conv2DBackpropFilter", [f32(8, 32, 32, 32), np.array([3, 3, 32, 32], np.int32), f32(8, 32, 32, 32)],
        conv_attrs(), "Conv2DBackpropFilter 3x3 8x32x32x32 -> 32"),
    "batchnorm_grad": single_op_workload(
        "FusedBatchNormGradV3", [f32(8, 32, 32, 64), f32(8, 32, 32, 64), f32(64), f32(64), np.abs(f32(64)), f32(0)],
        {"is_training": True, "epsilon": 1e-3, "data_format": "NHWC", "U": dtypes.float32},
        "FusedBatchNormGradV3 training 8x32x32x64"),
    "segment_sum": single_op_workload(
        "UnsortedSegmentSum", [f32(10000, 64), RNG.integers(0, 500, 10000).astype(np.int32), np.array(500, np.int32)],
        {"Tindices": dtypes.int32, "Tnumsegments": dtypes.int32}, "UnsortedSegmentSum 10000x64 rows into 500"),
    "gather": single_op_workload(
        "GatherV2", [f32(50000, 64), RNG.integers(0, 50000, 4096).astype(np.int32), np.array(0, np.int32)],
        {"Tindices": dtypes.int32, "Taxis": dtypes.int32, "batch_dims": 0, "Tparams": dtypes.float32},
        "GatherV2 4096 rows of 50000x64"),
    "cumsum_long": single_op_workload(
        "Cumsum", [f32(4, 100000), np.array(1, np.int32)], {"exclusive": False, "reverse": False, "Tidx": dtypes.int32},
        "Cumsum along 100000"),
    "cumsum_rows": single_op_workload(
        "Cumsum", [f32(1000, 256), np.array(0, np.int32)], {"exclusive": False, "reverse": False, "Tidx": dtypes.int32},
        "Cumsum down 1000 rows of 256"),
    "top_k": single_op_workload(
        "TopKV2", [RNG.integers(0, 1 << 30, (64, 10000)).astype(np.int32), np.array(10, np.int32)], {"sorted": True},
        "TopKV2 k=10 of 64x10000 int32"),
    "segment_prod": single_op_workload(
        "UnsortedSegmentProd", [f32(10000, 64), RNG.integers(0, 500, 10000).astype(np.int32), np.array(500, np.int32)],
        {"Tindices": dtypes.int32, "Tnumsegments": dtypes.int32}, "UnsortedSegmentProd 10000x64 rows into 500"),
    "matrix_inverse": single_op_workload(
        "MatrixInverse", [f32(64, 32, 32) + 8 * np.eye(32, dtype=np.float32)], {"adjoint": False},
        "MatrixInverse 64 x 32x32"),
    "cholesky": single_op_workload(
        "Cholesky", [np.eye(64, dtype=np.float32)[None].repeat(32, 0) * 64 + f32(32, 64, 64) * 0.01], {},
        "Cholesky 32 x 64x64"),
    "triangular_solve": single_op_workload(
        "MatrixTriangularSolve", [np.tril(f32(16, 128, 128)) + 16 * np.eye(128, dtype=np.float32), f32(16, 128, 8)],
        {"lower": True, "adjoint": False}, "MatrixTriangularSolve 16 x 128x128, 8 rhs"),
    "matrix_solve": single_op_workload(
        "MatrixSolve", [f32(64, 32, 32) + 8 * np.eye(32, dtype=np.float32), f32(64, 32, 4)], {"adjoint": False},
        "MatrixSolve 64 x 32x32, 4 rhs"),
    "determinant": single_op_workload(
        "MatrixDeterminant", [f32(64, 32, 32) + 8 * np.eye(32, dtype=np.float32)], {}, "MatrixDeterminant 64 x 32x32"),
    "log_determinant": single_op_workload(
        "LogMatrixDeterminant", [f32(64, 32, 32) + 8 * np.eye(32, dtype=np.float32)], {},
        "LogMatrixDeterminant 64 x 32x32"),
    "rfft": single_op_workload(
        "RFFT", [f32(256, 1024), np.array([1024], np.int32)], {"Tcomplex": dtypes.complex64}, "RFFT 256 x 1024"),
    "softmax": single_op_workload("Softmax", [f32(256, 1000)], {}, "Softmax 256x1000"),
    "matmul": single_op_workload("MatMul", [f32(512, 1024), f32(1024, 1024)],
                                 {"transpose_a": False, "transpose_b": False}, "MatMul 512x1024 @ 1024x1024"),
    "sum": single_op_workload("Sum", [f32(256, 4096), np.array([1], np.int32)], {"keep_dims": False,
                                                                                 "Tidx": dtypes.int32},
                              "Sum over the last axis of 256x4096"),
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--only", action="append")
    args = parser.parse_args(argv)
    for name, workload in WORKLOADS.items():
        if args.only and name not in args.only:
            continue
        contenders, arrays = workload(args.repeat)
        print(f"\n{name}: {workload.__doc__.strip().splitlines()[0]}")
        baseline = None
        for label, (fn, is_jax) in contenders.items():
            inputs = [jnp.asarray(a) for a in arrays] if is_jax else arrays
            ms = timed(fn, inputs, args.repeat)
            baseline = baseline or ms
            print(f"  {label:55s} {ms:9.3f} ms  {ms / baseline:6.2f}x")


if __name__ == "__main__":
    main()
