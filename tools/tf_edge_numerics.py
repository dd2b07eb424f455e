#!/usr/bin/env python3
"""Print, as JSON, what TensorFlow's CPU kernels give at the numeric edges tests/hostile/test_exec.py
checks dftool against: Softplus and Sigmoid where float32 results underflow (TensorFlow runs its
kernels with denormals flushed to zero), TopKV2 with NaN and ties, FusedBatchNorm on an empty batch.
The test holds these numbers as literals; rerun this to refresh them for another TensorFlow.

    TF_ENABLE_ONEDNN_OPTS=0 $TF_PYTHON tools/tf_edge_numerics.py > edge.json
"""
import json

import numpy as np
import tensorflow as tf

ACTIVATION_INPUTS = [-104, -103, -100, -90, -89, -88, -87.5, -87, -30, -20, -17, -16, -15, 0, 15, 16, 17,
                     20, 30, 88, 89, 100, -710, -740, -746]
TOPK_CASES = [  # (values, k, sorted)
    ([1.0, "nan", 3.0, "nan", 3.0, "-inf", "inf", 2.0], 8, True),
    ([1.0, "nan", 3.0, "nan", 3.0, "-inf", "inf", 2.0], 3, True),
    ([1.0, "nan", 3.0, "nan", 2.0], 5, False),
    ([1.0, "nan", 3.0, "nan", 2.0], 1, True),
    (["nan", 1.0, 2.0], 1, True),
    ([3.0, "nan", 1.0, 2.0], 1, True),
    ([5.0, 5.0, "nan", 5.0], 4, True),
    ([1.0, 3.0, 3.0, 2.0, 3.0], 5, True),
    ([1.0, 3.0, 3.0, 2.0, 3.0], 2, True),
    ([0.0, -0.0, 0.0, -0.0], 4, True),
    # Longer rows: introsort (over 16 columns), TopN heaps, Eigen's 8-lane packets for k = 1.
    (["nan", "nan", 2.0, "nan", "nan", 5.0, 3.0, 0.0, 5.0, "nan", 0.0, 3.0, 0.0, 3.0, "nan", 0.0, "nan"], 1, True),
    ([5.0, "nan", "nan", 2.0, 3.0, 4.0, 4.0, "inf", 0.0, 5.0, 2.0, 1.0, 1.0, "inf", "inf", "nan", "inf", 5.0, 4.0,
      "inf", "inf", "nan", 3.0, 2.0, 4.0, "inf", 1.0, 4.0, "nan", 2.0, "inf", 2.0, "inf"], 16, False),
    ([5.0, "nan", "nan", 2.0, 3.0, 4.0, 4.0, "inf", 0.0, 5.0, 2.0, 1.0, 1.0, "inf", "inf", "nan", "inf", 5.0, 4.0,
      "inf", "inf", "nan", 3.0, 2.0, 4.0, "inf", 1.0, 4.0, "nan", 2.0, "inf", 2.0, "inf"], 33, True),
    ([5.0, "nan", "nan", 2.0, 3.0, 4.0, 4.0, "inf", 0.0, 5.0, 2.0, 1.0, 1.0, "inf", "inf", "nan", "inf", 5.0, 4.0,
      "inf", "inf", "nan", 3.0, 2.0, 4.0, "inf", 1.0, 4.0, "nan", 2.0, "inf", 2.0, "inf"], 7, True),
    # Eigen's packets hold 4 float64 and 8 float16.
    (["nan", "nan", 1.0, "nan"], 1, True, "float64"),
    (["nan", "nan", 5.0, "nan", 3.0], 1, True, "float16"),
]


def _floats(values):
    return [None if np.isnan(v) else float(v) for v in np.asarray(values, np.float64).ravel()]


def activations() -> dict:
    out = {}
    for dtype in ("float16", "bfloat16", "float32", "float64"):
        x = tf.constant(np.array(ACTIVATION_INPUTS, np.float64), dtype=getattr(tf, dtype))
        out[dtype] = {"Softplus": _floats(tf.cast(tf.nn.softplus(x), tf.float64).numpy()),
                      "Sigmoid": _floats(tf.cast(tf.math.sigmoid(x), tf.float64).numpy())}
    return out


def top_k() -> list:
    out = []
    for values, k, is_sorted, *dtype in TOPK_CASES:
        dtype = dtype[0] if dtype else "float32"
        array = np.array([float(v) for v in values], dtype)
        result = tf.math.top_k(array, k=k, sorted=is_sorted)
        out.append({"input": values, "k": k, "sorted": is_sorted, "dtype": dtype,
                    "values": _floats(result.values.numpy()), "indices": result.indices.numpy().tolist()})
    return out


def batch_norm_empty() -> list:
    out = []
    for op in ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"):
        for is_training in (True, False):
            for shape, data_format in (((0, 2, 2, 3), "NHWC"), ((2, 0, 2, 3), "NHWC"), ((0, 3, 2, 2), "NCHW")):
                args = dict(x=np.zeros(shape, np.float32), scale=np.ones(3, np.float32),
                            offset=np.zeros(3, np.float32), mean=np.full(3, 0.5, np.float32),
                            variance=np.full(3, 2.0, np.float32), is_training=is_training,
                            data_format=data_format, exponential_avg_factor=0.5 if is_training else 1.0)
                try:
                    outputs = getattr(tf.raw_ops, op)(**args)
                    record = {"outputs": [{"shape": list(o.shape), "values": _floats(o.numpy())} for o in outputs]}
                except tf.errors.OpError as exc:
                    record = {"error": type(exc).__name__, "message": exc.message.splitlines()[0]}
                out.append({"op": op, "is_training": is_training, "shape": list(shape),
                            "data_format": data_format, **record})
    return out


if __name__ == "__main__":
    print(json.dumps({"tensorflow": tf.__version__, "activations": activations(), "top_k": top_k(),
                      "batch_norm_empty": batch_norm_empty()}, indent=1))
