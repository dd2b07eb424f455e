"""Cases for segment reductions, ScatterNd, space/depth moves, pooling gradients and the nn ops
training graphs add (batch norm gradients, sparse softmax loss, LRN)."""
from __future__ import annotations

import numpy as np

from tests.jit.lowering_cases_conv import POOL_GEOMETRIES, image
from tests.jit.lowering_cases_math import F32, F64, I32, I64, floats, ints
from graphtool.jit.lowerings.conv import window_geometry

CASES = []
IDS = np.array([0, 2, -1, 2, 0, 4], I32)
for op in ("UnsortedSegmentSum", "UnsortedSegmentProd", "UnsortedSegmentMax", "UnsortedSegmentMin"):
    with_nan = floats(6, 3)
    with_nan[1, 1] = np.nan
    CASES += [(op, [floats(6, 3), IDS, np.array(5, I32)], {}),
              (op, [ints(6, 2, low=-3, high=4), IDS.astype(I64), np.array(6, I64)], {}),
              (op, [floats(2, 3, dtype=F64), np.array([[0, 1, 1], [3, 3, -2]], I32), np.array(4, I32)], {}),
              (op, [floats(0, 3), np.zeros(0, I32), np.array(2, I32)], {}),
              (op, [with_nan, IDS, np.array(5, I32)], {})]
CASES += [("ScatterNd", [np.array([[0], [2], [0]], I32), floats(3, 4), np.array([3, 4], I32)], {}),
          ("ScatterNd", [np.array([[1, 1], [0, 2]], I64), ints(2), np.array([2, 3], I64)], {}),
          ("ScatterNd", [np.zeros((0, 1), I32), floats(0, 2), np.array([3, 2], I32)], {})]

for data_format in ("NHWC", "NCHW"):
    CASES += [("SpaceToDepth", [image(2, 4, 6, 3, data_format)], {"block_size": 2, "data_format": data_format}),
              ("DepthToSpace", [image(2, 2, 3, 8, data_format)], {"block_size": 2, "data_format": data_format})]
CASES += [("SpaceToDepth", [ints(1, 3, 3, 2)], {"block_size": 3, "data_format": "NHWC"}),
          ("SpaceToBatchND", [floats(2, 5, 6, 3), np.array([2, 3], I32), np.array([[1, 0], [0, 0]], I32)], {}),
          ("SpaceToBatchND", [ints(1, 4, 2), np.array([2], I64), np.array([[0, 2]], I64)], {}),
          ("BatchToSpaceND", [floats(12, 3, 2, 3), np.array([2, 3], I32), np.array([[1, 0], [0, 2]], I32)], {}),
          ("BatchToSpaceND", [ints(4, 3, 2), np.array([2], I64), np.array([[0, 1]], I64)], {})]

for data_format in ("NHWC", "NCHW"):
    for padding, ksize, strides in POOL_GEOMETRIES:
        four = (lambda v: [1, 1, *v]) if data_format == "NCHW" else (lambda v: [1, *v, 1])
        attrs = {"ksize": four(ksize), "strides": four(strides), "padding": padding, "data_format": data_format}
        _, (oh, ow) = window_geometry([5, 6], ksize, strides, [1, 1], padding)
        x = image(2, 5, 6, 3, data_format)
        x.reshape(-1)[::4] = 0.5   # ties: the first maximum takes the gradient
        in_shape = np.array(x.shape, I32)
        CASES += [("MaxPoolGrad", [x, image(2, oh, ow, 3, data_format), image(2, oh, ow, 3, data_format)],
                   attrs, 1e-4),
                  ("AvgPoolGrad", [in_shape, image(2, oh, ow, 3, data_format)], attrs, 1e-4)]
CASES += [("MaxPoolGrad", [image(1, 4, 4, 2, dtype=F64), floats(1, 2, 2, 2, dtype=F64), floats(1, 2, 2, 2, dtype=F64)],
           {"ksize": [1, 3, 3, 1], "strides": [1, 2, 2, 1], "padding": "SAME"})]

for op in ("FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3"):
    for data_format, shape in (("NHWC", (2, 3, 4, 5)), ("NCHW", (2, 5, 3, 4))):
        vectors = [floats(5), floats(5), floats(5, low=0.1, high=2)]
        extra = [floats(0)] if op == "FusedBatchNormGradV3" else []
        attrs = {"data_format": data_format, "epsilon": 1e-3}
        if op != "FusedBatchNormGrad":
            attrs["U"] = np.dtype(F32)
        for training in (False, True):
            CASES.append((op, [floats(*shape), floats(*shape), *vectors, *extra],
                          {**attrs, "is_training": training}, 1e-4))

CASES += [("SparseSoftmaxCrossEntropyWithLogits", [floats(4, 5, low=-20, high=20), np.array([0, 4, 2, 2], I32)], {}),
          ("SparseSoftmaxCrossEntropyWithLogits", [floats(3, 2, dtype=F64), np.array([1, 0, 1], I64)], {}),
          ("SparseSoftmaxCrossEntropyWithLogits", [floats(0, 3), np.zeros(0, I32)], {})]
for radius, bias, alpha, beta in ((2, 1.0, 1e-3, 0.75), (0, 2.0, 0.5, 0.5), (5, 1.0, 1.0, 1.0)):
    attrs = {"depth_radius": radius, "bias": bias, "alpha": alpha, "beta": beta}
    x = floats(2, 3, 3, 7)
    CASES += [("LRN", [x], attrs, 1e-4), ("LRN", [floats(1, 2, 2, 3, dtype=F64)], attrs),
              ("LRNGrad", [floats(2, 3, 3, 7), x, floats(2, 3, 3, 7)], attrs, 1e-4)]

for name in ("Sum", "Mean", "SqrtN"):
    CASES += [(f"SparseSegment{name}WithNumSegments",
               [floats(5, 3), np.array([0, 4, 2, 2, 1], I32), np.array([0, 0, 1, 3, 3], I32), np.array(5, I32)], {}),
              (f"SparseSegment{name}WithNumSegments",
               [floats(4, dtype=F64), np.array([3, 1], I64), np.array([1, 1], I64), np.array(2, I64)], {}),
              (f"SparseSegment{name}WithNumSegments",
               [floats(3, 2), np.zeros(0, I32), np.zeros(0, I32), np.array(3, I32)], {}),
              (f"SparseSegment{name}Grad",
               [floats(4, 3), np.array([0, 4, 2, 2, 1], I32), np.array([0, 0, 1, 3, 3], I32), np.array(6, I32)], {}),
              (f"SparseSegment{name}Grad",
               [floats(2, dtype=F64), np.array([3, 1, 3], I64), np.array([0, 1, 1], I32), np.array(4, I32)], {})]
