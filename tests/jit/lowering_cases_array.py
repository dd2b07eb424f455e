"""Cases for the array family: shapes given as static inputs, negative axes, empty tensors,
every masking rule of StridedSlice, and dtypes beyond float32 (these ops take half precision)."""
from __future__ import annotations

import numpy as np

from tests.jit.lowering_cases_math import BOOLS, F64, I32, I64, floats, ints

F16 = np.float16
X = floats(2, 3, 4)
CASES = [
    ("Reshape", [X, np.array([4, -1], I32)], {}),
    ("Reshape", [X, np.array([24], I64)], {}),
    ("Reshape", [floats(0, 3), np.array([-1, 0], I32)], {}),
    ("Reshape", [np.float32(3), np.array([1, 1], I32)], {}),
    ("Reshape", [BOOLS, np.array([3, 2], I32)], {}),
    ("Transpose", [X, np.array([2, 0, 1], I32)], {}),
    ("Transpose", [ints(2, 3, dtype=I64), np.array([-1, 0], I64)], {}),
    ("Transpose", [floats(0, 2, dtype=F16), np.array([1, 0], I32)], {}),
    ("ExpandDims", [X, np.array(-1, I32)], {}),
    ("ExpandDims", [X, np.array([0], I64)], {}),
    ("ExpandDims", [np.int32(4), np.array(0, I32)], {}),
    ("Squeeze", [floats(1, 3, 1, 2), ], {"squeeze_dims": []}),
    ("Squeeze", [floats(1, 3, 1, 2)], {"squeeze_dims": [-2]}),
    ("Squeeze", [floats(1, 0, 1)], {"squeeze_dims": [0]}),
    ("ConcatV2", [X, floats(2, 1, 4), np.array(1, I32)], {}),
    ("ConcatV2", [X, X, X, np.array(-1, I64)], {}),
    ("ConcatV2", [ints(0, 2), ints(3, 2), np.array(0, I32)], {}),
    ("ConcatV2", [BOOLS, BOOLS, np.array(0, I32)], {}),
    ("Concat", [np.array(2, I32), X, floats(2, 3, 2)], {}),
    ("Split", [np.array(1, I32), floats(2, 6)], {"num_split": 3}),
    ("Split", [np.array(-1, I32), ints(2, 4, dtype=I64)], {"num_split": 2}),
    ("Split", [np.array(0, I32), floats(3, 0)], {"num_split": 1}),
    ("SplitV", [floats(2, 7), np.array([2, -1, 1], I32), np.array(1, I32)], {"num_split": 3}),
    ("SplitV", [ints(6, 2), np.array([0, 6], I64), np.array(-2, I32)], {"num_split": 2}),
    ("Pack", [floats(2, 3), floats(2, 3), floats(2, 3)], {"axis": 1}),
    ("Pack", [ints(3), ints(3)], {"axis": -1}),
    ("Pack", [np.float64(1.5), np.float64(2.5)], {"axis": 0}),
    ("Unpack", [X], {"num": 3, "axis": 1}),
    ("Unpack", [ints(2, 2)], {"num": 2, "axis": -1}),
    ("Unpack", [floats(0, 2)], {"num": 2, "axis": 1}),
    ("Tile", [floats(2, 3), np.array([2, 1], I32)], {}),
    ("Tile", [ints(2, 1, dtype=I64), np.array([0, 3], I64)], {}),
    ("Tile", [np.float32(1), np.array([], I32)], {}),
    ("Pad", [floats(2, 3), np.array([[1, 0], [2, 3]], I32)], {}),
    ("Pad", [ints(2, 3), np.array([[0, 0], [0, 1]], I64)], {}),
    ("Pad", [floats(0, 2, dtype=F16), np.array([[1, 1], [0, 0]], I32)], {}),
    ("PadV2", [floats(2, 3), np.array([[1, 1], [2, 0]], I32), np.float32(-7.5)], {}),
    ("MirrorPad", [floats(3, 4), np.array([[2, 1], [3, 0]], I32)], {"mode": "REFLECT"}),
    ("MirrorPad", [ints(3, 4), np.array([[3, 1], [0, 4]], I32)], {"mode": "SYMMETRIC"}),
    ("Fill", [np.array([2, 3], I32), np.float32(2.5)], {}),
    ("Fill", [np.array([0, 4], I64), np.int64(7)], {}),
    ("Fill", [np.array([], I32), np.array(True)], {}),
    ("ZerosLike", [X], {}), ("ZerosLike", [BOOLS], {}), ("ZerosLike", [ints(0, 3)], {}),
    ("OnesLike", [X], {}), ("OnesLike", [ints(2, 2, dtype=I64)], {}),
    ("Range", [np.int32(0), np.int32(10), np.int32(3)], {}),
    ("Range", [np.int64(5), np.int64(-4), np.int64(-2)], {}),
    ("Range", [np.float32(0.5), np.float32(2.0), np.float32(0.1)], {}),
    ("Range", [np.float64(1), np.float64(1), np.float64(1)], {}),
    ("BroadcastTo", [floats(3, 1), np.array([2, 3, 4], I32)], {}),
    ("BroadcastTo", [ints(1), np.array([0, 5], I64)], {}),
    ("Bitcast", [floats(3, 2), ], {"type": np.dtype(I32)}),
    ("Bitcast", [floats(3, 2, dtype=F64)], {"type": np.dtype(I32)}),
    ("Bitcast", [ints(3, 2)], {"type": np.dtype(F64)}),
    ("Bitcast", [ints(4, dtype=np.uint8, low=0, high=255)], {"type": np.dtype(np.uint8)}),
]

# --- reading parts --------------------------------------------------------------------------
CASES += [
    ("Slice", [X, np.array([1, 0, 2], I32), np.array([1, -1, 2], I32)], {}),
    ("Slice", [ints(4, 5, dtype=I64), np.array([0, 5], I64), np.array([4, 0], I64)], {}),
    ("Slice", [floats(3, 3, dtype=F16), np.array([1, 1], I32), np.array([-1, 1], I32)], {}),
]
for begin, end, strides, masks in [
        ([0, 1, 0], [2, 3, 4], [1, 1, 1], {}),
        ([1], [2], [1], {"shrink_axis_mask": 1}),
        ([-1, 0], [0, 0], [-1, 2], {"end_mask": 3}),
        ([0, 2], [0, 0], [1, -1], {"begin_mask": 1, "end_mask": 3}),
        ([0, 1], [0, 2], [1, 1], {"ellipsis_mask": 1, "shrink_axis_mask": 2}),
        ([0, 0, 1], [0, 0, 3], [1, 1, 1], {"new_axis_mask": 2, "begin_mask": 1, "end_mask": 1}),
        ([5, -10], [10, 10], [1, 1], {}),                                            # clamped
        ([1, 3], [1, 0], [1, 1], {})]:                                               # empty
    attrs = {"begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0, "new_axis_mask": 0,
             "shrink_axis_mask": 0, **masks}
    CASES.append(("StridedSlice", [X, np.array(begin, I32), np.array(end, I32), np.array(strides, I32)],
                  attrs))
CASES.append(("StridedSlice", [ints(5, dtype=I64), np.array([-1], I64), np.array([-6], I64), np.array([-2], I64)],
              {"begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0, "new_axis_mask": 0, "shrink_axis_mask": 0}))

# Traced begin/end (a loop counter): x[i], x[:, i], x[-1], and Slice at a traced start.
NO_MASKS = {"begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0, "new_axis_mask": 0, "shrink_axis_mask": 0}
CASES += [
    ("StridedSlice", [X, np.array([1], I32), np.array([2], I32), np.array([1], I32)],
     {**NO_MASKS, "shrink_axis_mask": 1, "_traced": (1, 2)}),
    ("StridedSlice", [X, np.array([0, -2], I32), np.array([0, -1], I32), np.array([1, 1], I32)],
     {**NO_MASKS, "begin_mask": 1, "end_mask": 1, "shrink_axis_mask": 2, "_traced": (1, 2)}),
    ("StridedSlice", [ints(5, 2, dtype=I64), np.array([-1], I64), np.array([0], I64), np.array([1], I64)],
     {**NO_MASKS, "shrink_axis_mask": 1, "_traced": (1, 2)}),
    ("Slice", [X, np.array([1, 1, 0], I32), np.array([1, 2, 4], I32)], {"_traced": (1,)}),
]

INDICES = np.array([[2, 0], [1, 1]], I32)
CASES += [
    ("Gather", [floats(4, 3), INDICES], {}),
    ("GatherV2", [floats(4, 3), INDICES, np.array(0, I32)], {"batch_dims": 0}),
    ("GatherV2", [ints(2, 5, dtype=I64), np.array([4, 0, 4], I64), np.array(-1, I32)], {"batch_dims": 0}),
    ("GatherV2", [floats(2, 3, 4), np.array([[2, 0], [1, 1]], I32), np.array(1, I32)], {"batch_dims": 1}),
    ("GatherV2", [floats(2, 3, 4), np.array([[3], [0]], I32), np.array(-1, I32)], {"batch_dims": -1}),
    ("GatherV2", [floats(4, 3), np.zeros((0,), I32), np.array(0, I32)], {"batch_dims": 0}),
    ("GatherNd", [floats(3, 4, 2), np.array([[0, 1], [2, 3]], I32)], {}),
    ("GatherNd", [ints(3, 4), np.array([[[2]], [[0]]], I64)], {}),
    ("GatherNd", [floats(2, 2), np.zeros((3, 0), I32)], {}),
    ("ReverseV2", [X, np.array([0, -1], I32)], {}),
    ("ReverseV2", [ints(3), np.array([], I32)], {}),
    ("OneHot", [np.array([0, 2, -1, 5], I32), np.array(3, I32), np.float32(1), np.float32(-1)], {"axis": -1}),
    ("OneHot", [np.array([[1, 0], [2, 2]], I64), np.array(4, I32), np.int32(7), np.int32(0)], {"axis": 0}),
    ("InvertPermutation", [np.array([2, 0, 3, 1], I32)], {}),
    ("InvertPermutation", [np.array([], I64)], {}),
    ("Einsum", [floats(2, 3), floats(3, 4)], {"equation": "ij,jk->ik", "N": 2}, 1e-4),
    ("Einsum", [floats(5, 2, 3), floats(5, 3, 2)], {"equation": "bij,bjk->bik", "N": 2}, 1e-4),
    ("Einsum", [floats(2, 3, 4, dtype=F64)], {"equation": "...ij->...ji", "N": 1}),
    ("Einsum", [ints(3, 4), ints(4)], {"equation": "ij,j->i", "N": 2}),
]
