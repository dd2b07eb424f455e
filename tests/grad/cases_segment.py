"""Finite-difference cases for graphtool/grad/segment.py and sparse.py: op -> list of Case."""
from __future__ import annotations

import numpy as np

from tests.grad.fd_harness import Case, Rand, Value


def i32(value):
    return np.array(value, np.int32)


CASES: dict[str, list[Case]] = {
    "SegmentSum": [Case([Rand((4, 2)), np.array([0, 0, 1, 3], np.int32)])],
    "UnsortedSegmentSum": [Case([Rand((4, 2)), np.array([2, 0, -1, 2], np.int32), np.array(3, np.int32)]),
                           Case([Rand((2, 2, 2)), np.array([[1, 0], [1, 1]], np.int64), np.array(2, np.int32)])],
    # No empty segments: their outputs are the dtype's lowest/highest value, which no
    # finite-difference objective survives.
    "UnsortedSegmentMax": [Case([Rand((5, 2), distinct=True), np.array([2, 0, -1, 2, 1], np.int32),
                                 np.array(3, np.int32)])],
    "UnsortedSegmentMin": [Case([Rand((2, 3, 2), distinct=True), np.array([[2, 0, 1], [-1, 2, 0]], np.int32),
                                 np.array(3, np.int32)])],
    "UnsortedSegmentProd": [
        Case([Rand((5, 2), 0.5, 1.5, signed=True), np.array([2, 0, -1, 2, 0], np.int32), np.array(3, np.int32)]),
        Case([Value([[0.0, 1.2], [0.8, 0.0], [1.1, 0.0], [-0.9, 1.3]]), np.array([0, 0, 1, 1], np.int32),
              np.array(2, np.int32)], label="zeros: single and double per segment"),
    ],
    # Sorted ids; segment 1 is empty (its output row is 0 and gets no gradient through).
    "SegmentMean": [Case([Rand((4, 2)), i32([0, 0, 2, 2])]), Case([Rand((3,)), i32([0, 1, 1])])],
    "SegmentMax": [Case([Rand((5, 2), distinct=True), i32([0, 0, 0, 2, 2])])],
    "SegmentMin": [Case([Rand((2, 3), distinct=True), i32([1, 1])])],
    "SegmentProd": [
        Case([Rand((4, 2), 0.5, 1.5, signed=True), i32([0, 0, 2, 2])]),
        Case([Value([[0.0, 1.2], [0.8, 0.0], [1.1, 0.0], [-0.9, 1.3], [0.7, 0.6]]), i32([0, 0, 1, 1, 1])],
             label="zeros: single and double per segment"),
    ],
    **{op: [Case([Rand((4, 2)), i32([3, 0, 3, 1, 2]), i32([0, 0, 1, 3, 3])], label="repeated rows, empty segment"),
            Case([Rand((3,)), np.array([2, 2], np.int64), i32([1, 1])])]
       for op in ("SparseSegmentSum", "SparseSegmentMean", "SparseSegmentSqrtN")},
    **{op: [Case([Rand((4, 2)), i32([3, 0, 3, 1]), i32([0, 0, 1, 3]), i32(5)])]
       for op in ("SparseSegmentSumWithNumSegments", "SparseSegmentMeanWithNumSegments",
                  "SparseSegmentSqrtNWithNumSegments")},
    "DynamicPartition": [Case([Rand((5, 2)), i32([2, 0, 2, 1, 0])], attrs={"num_partitions": 3}),
                         Case([Rand((2, 2, 3)), i32([[1, 0], [1, 1]])], attrs={"num_partitions": 3},
                              outputs=(1,), label="one output used, one partition empty")],
    "SparseFillEmptyRows": [Case([np.array([[3, 0], [1, 2], [1, 0]], np.int64), Rand((3,)),
                                  np.array([5, 3], np.int64), Rand(())], outputs=(1,))],
}
