"""Single-op cases for the GPU kernels the TensorFlow fixtures do not reach: each runs on the CPU
and on the strict GPU test double, and the two must agree (test_gpu_kernels.py)."""
from __future__ import annotations

import numpy as np

F = np.array([[0.25, -0.5, 0.75], [0.1, 0.6, -0.9]], np.float32)
POSITIVE = np.abs(F) + 0.5
COMPLEX = (F + 1j * F[::-1]).astype(np.complex64)
INTS = np.array([[3, -5, 12], [7, 0, -1]], np.int32)
SHIFTS = np.array([[1, 2, 3], [0, 4, 5]], np.int32)
VECTOR = np.array([3, 1, 3, 2, 1, 5], np.int32)
SQUARE = np.arange(9, dtype=np.float32).reshape(3, 3)
BATCH_SQUARE = np.arange(18, dtype=np.float32).reshape(2, 3, 3)
IMAGE = np.linspace(-1, 1, 2 * 4 * 4 * 3, dtype=np.float32).reshape(2, 4, 4, 3)
I32 = np.int32


def i32(*values):
    return np.array(values, np.int32)


POOL = dict(ksize=i32(1, 2, 2, 1), strides=i32(1, 2, 2, 1))
POOL_ATTRS = dict(ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")
SEGMENT_DATA = np.arange(12, dtype=np.float32).reshape(4, 3) - 5
UPDATES = np.array([[1.5, -2, 3], [4, 5, -6]], np.float32)

# (case id, op, inputs, attrs); inputs are numpy values (they become Consts) or lists of them.
CASES = [
    *[(op, op, [F], {}) for op in ("Acos", "Asin", "Atanh", "Asinh", "L2Loss", "Snapshot", "StopGradient",
                                   "PreventGradient")],
    ("Acosh", "Acosh", [POSITIVE + 1], {}),
    ("Digamma", "Digamma", [POSITIVE], {}),
    ("Erfinv", "Erfinv", [F], {}),
    ("Ndtri", "Ndtri", [POSITIVE - 0.3], {}),
    ("Inv", "Inv", [POSITIVE], {}),
    *[(op, op, [COMPLEX], {}) for op in ("Angle", "Real", "Imag", "Conj", "ComplexAbs")],
    ("Invert", "Invert", [INTS], {}),
    ("CheckNumerics", "CheckNumerics", [F], dict(message="checked")),
    ("EnsureShape", "EnsureShape", [F], dict(shape=[2, 3])),
    ("Diag", "Diag", [F[0]], {}),
    ("DiagPart", "DiagPart", [SQUARE], {}),
    ("MatrixDiag", "MatrixDiag", [F], {}),
    ("MatrixDiagPart", "MatrixDiagPart", [BATCH_SQUARE], {}),
    ("MatrixSetDiag", "MatrixSetDiag", [BATCH_SQUARE, F], {}),
    ("MatrixDiagV2", "MatrixDiagV2", [F, i32(0), I32(-1), I32(-1), np.float32(0)], {}),
    ("MatrixDiagV3", "MatrixDiagV3", [F[:, None, :].repeat(2, 1), i32(-1, 0), I32(-1), I32(-1), np.float32(7)], dict(align="LEFT_RIGHT")),
    ("MatrixDiagPartV2", "MatrixDiagPartV2", [BATCH_SQUARE, i32(0, 1), np.float32(0)], {}),
    ("MatrixDiagPartV3", "MatrixDiagPartV3", [BATCH_SQUARE, i32(-1, 1), np.float32(9)], dict(align="RIGHT_LEFT")),
    ("MatrixSetDiagV2", "MatrixSetDiagV2", [BATCH_SQUARE, F, i32(0)], {}),
    ("MatrixSetDiagV3", "MatrixSetDiagV3", [BATCH_SQUARE, F, i32(0)], dict(align="LEFT_LEFT")),
    ("Reverse", "Reverse", [F, np.array([True, False])], {}),
    ("IdentityN", "IdentityN", [[F, INTS]], {}),
    ("PlaceholderWithDefault", "PlaceholderWithDefault", [F], dict(shape=[2, 3])),
    ("Unique", "Unique", [VECTOR], {}),
    ("UniqueV2", "UniqueV2", [VECTOR, np.array([0], np.int64)], {}),
    ("UniqueWithCounts", "UniqueWithCounts", [VECTOR], {}),
    ("UniqueWithCountsV2", "UniqueWithCountsV2", [VECTOR, np.array([0], np.int64)], {}),
    ("ApproximateEqual", "ApproximateEqual", [F, F + 2e-6], dict(tolerance=1e-5)),
    *[(op, op, [F, POSITIVE], {}) for op in ("MulNoNan", "Xdivy", "Xlogy", "InvGrad", "ReciprocalGrad",
                                             "SoftsignGrad")],
    *[(op, op, [INTS, INTS[::-1]], {}) for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor")],
    *[(op, op, [INTS, SHIFTS], {}) for op in ("LeftShift", "RightShift")],
    ("Complex", "Complex", [F, POSITIVE], {}),
    ("ClipByValue", "ClipByValue", [F, np.float32(-0.3), np.float32(0.3)], {}),
    ("BiasAddV1", "BiasAddV1", [F, F[0]], {}),
    ("BatchMatMul", "BatchMatMul", [BATCH_SQUARE, BATCH_SQUARE[:, :, :2]], dict(adj_x=True)),
    ("BatchMatMulV3", "BatchMatMulV3", [BATCH_SQUARE, BATCH_SQUARE], dict(Tout="float32")),
    ("AccumulateNV2", "AccumulateNV2", [[F, POSITIVE, F]], dict(shape=[2, 3])),
    ("Bitcast", "Bitcast", [F], dict(type="int32")),
    ("Concat", "Concat", [I32(1), [F, POSITIVE]], {}),
    ("Gather", "Gather", [SEGMENT_DATA, i32(3, 0, 3)], {}),
    ("SegmentSum", "SegmentSum", [SEGMENT_DATA, i32(0, 0, 1, 3)], {}),
    *[(op, op, [SEGMENT_DATA, i32(2, -1, 0, 2), I32(4)], {}) for op in
      ("UnsortedSegmentMax", "UnsortedSegmentMin", "UnsortedSegmentProd")],
    ("UnsortedSegmentProd-ints", "UnsortedSegmentProd", [INTS.T.copy(), i32(1, 1, 0), I32(3)], {}),
    *[(op, op, [SEGMENT_DATA, i32(0, 0, 2, 2)], {}) for op in
      ("SegmentMean", "SegmentMax", "SegmentMin", "SegmentProd")],
    ("SegmentMean-ints", "SegmentMean", [INTS.T.copy(), i32(0, 0, 1)], {}),
    *[(op, op, [SEGMENT_DATA, i32(3, 0, 3, 1), i32(0, 0, 2, 2)], {}) for op in
      ("SparseSegmentSum", "SparseSegmentMean", "SparseSegmentSqrtN")],
    *[(op, op, [SEGMENT_DATA, i32(3, 0, 3), i32(0, 0, 2), I32(4)], {}) for op in
      ("SparseSegmentSumWithNumSegments", "SparseSegmentMeanWithNumSegments",
       "SparseSegmentSqrtNWithNumSegments")],
    *[(op, op, [UPDATES, i32(3, 0, 3), i32(0, 0, 1), I32(5)], {}) for op in
      ("SparseSegmentSumGrad", "SparseSegmentMeanGrad", "SparseSegmentSqrtNGrad", "SparseSegmentSumGradV2",
       "SparseSegmentMeanGradV2", "SparseSegmentSqrtNGradV2")],
    ("Bincount", "Bincount", [VECTOR, I32(4), np.arange(6, dtype=np.float32)], {}),
    ("Bincount-counts", "Bincount", [VECTOR, I32(6), np.zeros(0, np.int32)], {}),
    ("DenseBincount", "DenseBincount", [VECTOR.reshape(2, 3), I32(4), np.zeros(0, np.float32)], {}),
    ("DenseBincount-binary", "DenseBincount", [VECTOR, I32(4), np.zeros(0, np.int64)],
     dict(binary_output=True)),
    ("DynamicPartition", "DynamicPartition", [SEGMENT_DATA, i32(1, 0, 1, 2)], dict(num_partitions=3)),
    ("SparseFillEmptyRows", "SparseFillEmptyRows", [np.array([[3, 0], [1, 2], [1, 0]], np.int64), F[0],
                                                     np.array([5, 3], np.int64), np.float32(-1)], {}),
    ("SparseFillEmptyRowsGrad", "SparseFillEmptyRowsGrad", [np.array([3, 1, 0], np.int64), F.reshape(-1)], {}),
    ("SparseReshape", "SparseReshape", [np.array([[3, 0], [1, 2], [1, 0]], np.int64), np.array([5, 3], np.int64),
                                         np.array([3, -1], np.int64)], {}),
    *[(op, op, [[i32(0, 2), i32(1, 3)], [F[:, :2].T.copy(), POSITIVE[:, :2].T.copy()]], {})
      for op in ("DynamicStitch", "ParallelDynamicStitch")],
    ("ListDiff", "ListDiff", [VECTOR, i32(1, 5)], {}),
    ("UnravelIndex", "UnravelIndex", [i32(1, 5, 7), i32(2, 4)], {}),
    ("LinSpace", "LinSpace", [np.float32(0), np.float32(1), I32(5)], {}),
    ("Empty", "Empty", [i32(2, 2)], dict(dtype="float32", init=True)),
    ("EuclideanNorm", "EuclideanNorm", [F, i32(1)], {}),
    ("InTopKV2", "InTopKV2", [F, i32(2, 1), i32(2)], {}),
    ("ReverseSequence", "ReverseSequence", [BATCH_SQUARE, np.array([2, 3], np.int64)], dict(seq_dim=1, batch_dim=0)),
    *[(op, op, [SEGMENT_DATA[:2], i32(1, 0, 1).reshape(3, 1), np.concatenate([UPDATES, UPDATES[:1]])], {})
      for op in ("TensorScatterAdd", "TensorScatterSub", "TensorScatterMin", "TensorScatterMax")],
    ("TensorScatterUpdate", "TensorScatterUpdate", [SEGMENT_DATA[:2], i32(1, 0).reshape(2, 1), UPDATES], {}),
    ("StridedSliceGrad", "StridedSliceGrad", [i32(4, 3), i32(0, 0), i32(4, 3), i32(2, 1), SEGMENT_DATA[::2]], {}),
    ("MirrorPadGrad", "MirrorPadGrad", [SEGMENT_DATA, i32(1, 1, 0, 0).reshape(2, 2)], dict(mode="SYMMETRIC")),
    ("MaxPoolV2", "MaxPoolV2", [IMAGE, POOL["ksize"], POOL["strides"]], dict(padding="VALID")),
    ("MaxPoolGradV2", "MaxPoolGradV2", [IMAGE, IMAGE[:, ::2, ::2], np.ones((2, 2, 2, 3), np.float32),
                                        POOL["ksize"], POOL["strides"]], dict(padding="VALID")),
    ("MaxPoolWithArgmax", "MaxPoolWithArgmax", [IMAGE], POOL_ATTRS),
    ("LRNGrad", "LRNGrad", [IMAGE, IMAGE, IMAGE * 0.5], dict(depth_radius=1)),
    ("ResizeBilinearGrad", "ResizeBilinearGrad", [IMAGE, IMAGE[:, :2, :2]], {}),
    ("ResizeNearestNeighborGrad", "ResizeNearestNeighborGrad", [IMAGE, i32(2, 2)], {}),
    ("Conv3D", "Conv3D", [IMAGE.reshape(1, 2, 4, 4, 3), np.ones((1, 2, 2, 3, 2), np.float32) * 0.5],
     dict(strides=[1, 1, 1, 1, 1], padding="SAME")),
    ("DepthwiseConv2dNativeBackpropFilter", "DepthwiseConv2dNativeBackpropFilter",
     [IMAGE, i32(2, 2, 3, 1), np.ones((2, 3, 3, 3), np.float32)], dict(strides=[1, 1, 1, 1], padding="VALID")),
    ("DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropInput",
     [i32(2, 4, 4, 3), np.ones((2, 2, 3, 1), np.float32), np.ones((2, 3, 3, 3), np.float32)],
     dict(strides=[1, 1, 1, 1], padding="VALID")),
    *[(op, op, [IMAGE, F[0] + 1, F[1], np.zeros(3, np.float32), np.ones(3, np.float32)], dict(is_training=True))
      for op in ("FusedBatchNorm", "FusedBatchNormV2")],
    *[(op, op, [IMAGE, IMAGE, F[0] + 1, F[1], POSITIVE[0]], dict(is_training=False))
      for op in ("FusedBatchNormGrad", "FusedBatchNormGradV2")],
    ("_FusedMatMul", "_FusedMatMul", [F, SQUARE, [F[1]]], dict(fused_ops=["BiasAdd", "Relu"])),
    ("_FusedConv2D", "_FusedConv2D", [IMAGE, np.ones((2, 2, 3, 2), np.float32) * 0.25, [F[0, :2]], []],
     dict(fused_ops=["BiasAdd", "Relu"], num_args=1, strides=[1, 1, 1, 1], padding="SAME")),
    ("Multinomial", "Multinomial", [F, I32(4)], dict(seed=3, seed2=4)),
    *[(op, op, [i32(2, 3)], dict(dtype="float32", seed=5, seed2=6)) for op in
      ("RandomUniform", "RandomStandardNormal", "TruncatedNormal")],
    ("RandomUniformInt", "RandomUniformInt", [i32(2, 3), I32(-4), I32(9)], dict(seed=7, seed2=8)),
    *[(op, op, [i32(2, 3), np.array([1, 2], np.int64)], dict(dtype="float32")) for op in
      ("StatelessRandomUniform", "StatelessRandomNormal")],
    ("RandomShuffle", "RandomShuffle", [np.arange(24, dtype=np.float32).reshape(6, 4)], dict(seed=3, seed2=4)),
    ("RandomShuffle_strings", "RandomShuffle", [np.array([b"a", b"b", b"c", b"d"], dtype=object)], dict(seed=1)),
    ("RandomShuffle_one_row", "RandomShuffle", [F[:1]], dict(seed=2)),
    ("HostConst", "HostConst", [], dict(value=F, dtype="float32")),
    ("ToBool", "ToBool", [F], {}),
    ("ToBool_scalar", "ToBool", [np.float32(0.0)], {}),
]
# Ops without outputs: run as targets.
TARGET_CASES = [
    ("NoOp", "NoOp", [], {}),
    ("ControlTrigger", "ControlTrigger", [], {}),
    ("Abort", "Abort", [], dict(exit_without_error=True)),
]

# Summary ops (graphtool/exec/kernels/summary.py) run from host memory on a GPU device.
_SCALAR_SUMMARY = b"\n\x08\n\x01s\x15\x00\x00\x80?"   # Summary{value {tag: "s" simple_value: 1.0}}
CASES += [
    ("ScalarSummary", "ScalarSummary", [np.array([b"a", b"b"]), F[0, :2]], {}),
    ("HistogramSummary", "HistogramSummary", [np.array(b"h"), F], {}),
    ("ImageSummary", "ImageSummary", [np.array(b"i"), IMAGE], dict(max_images=2)),
    ("AudioSummaryV2", "AudioSummaryV2", [np.array(b"a"), F, np.float32(8000)], {}),
    ("AudioSummary", "AudioSummary", [np.array(b"a"), F], dict(sample_rate=8000.0)),
    ("Print", "Print", [F, [F[0, :2]]], dict(message="values: ", summarize=2)),
    ("MergeSummary", "MergeSummary", [[np.array([_SCALAR_SUMMARY]), np.array(b"")]], {}),
    ("TensorSummaryV2", "TensorSummaryV2", [np.array(b"t"), INTS, np.array(b"")], {}),
    ("TensorSummary", "TensorSummary", [F], {}),
]
