"""Finite-difference cases for graphtool/grad/array*.py: op -> list of Case."""
from __future__ import annotations

import numpy as np

from tests.grad.fd_harness import Case, Rand


def i32(value):
    return np.array(value, np.int32)


def i64(value):
    return np.array(value, np.int64)


def single(shape=(2, 3), *rest, **extra) -> list[Case]:
    return [Case([Rand(shape), *rest], **extra)]


SHAPES = {
    "Identity": single(),
    "Snapshot": single(),
    "PlaceholderWithDefault": [Case([Rand((2, 3))], attrs={"dtype": "float64", "shape": [2, 3]})],
    "EnsureShape": [Case([Rand((2, 3))], attrs={"shape": [2, 3]})],
    "IdentityN": [Case([[Rand((2,)), Rand((3, 1))]]),
                  Case([[Rand((2,)), Rand((3, 1))]], outputs=(1,), label="no gradient for output 0")],
    "CheckNumerics": [Case([Rand((2, 3))], attrs={"message": "checked"})],
    # first_n=0: the finite differences run it many times, and nothing needs printing.
    "Print": [Case([Rand((2, 3)), [Rand((2,)), Rand((3,))]], attrs={"message": "fd", "first_n": 0})],
    "Reshape": single((2, 3), i32([3, -1])) + single((2, 2, 3), i64([4, 3])),
    "ExpandDims": single((2, 3), i32(1)) + single((2, 3), i32(-1)),
    "Squeeze": single((2, 1, 3, 1)) + single((1, 3, 1), attrs={"squeeze_dims": [-1]}),
    "Transpose": single((2, 3, 4), i32([2, 0, 1])) + single((2, 3), i64([1, 0])),
    "BroadcastTo": single((3,), i32([2, 3])) + single((2, 1), i32([2, 2, 3])) + single((), i32([2, 2])),
    "Tile": single((2, 3), i32([2, 1])) + single((1, 2, 2), i64([2, 3, 1])),
    "ConcatV2": [Case([[Rand((2, 3)), Rand((2, 1)), Rand((2, 2))], i32(1)]),
                 Case([[Rand((1, 3)), Rand((2, 3))], i32(-2)])],
    "Concat": [Case([i32(0), [Rand((1, 2)), Rand((2, 2))]])],
    "Pack": [Case([[Rand((2, 3)), Rand((2, 3))]], attrs={"axis": 1}),
             Case([[Rand((2,)), Rand((2,)), Rand((2,))]], attrs={"axis": -1})],
    "Unpack": [Case([Rand((3, 2))], attrs={"num": 3, "axis": 0}),
               Case([Rand((2, 3))], attrs={"num": 3, "axis": 1}, outputs=(0, 2),
                    label="no gradient for output 1")],
    "Split": [Case([i32(1), Rand((2, 4))], attrs={"num_split": 2}),
              Case([i32(0), Rand((3, 2))], attrs={"num_split": 3}, outputs=(1,), label="one output used")],
    "SplitV": [Case([Rand((2, 5)), i32([1, 3, 1]), i32(-1)], attrs={"num_split": 3}),
               Case([Rand((4, 2)), i64([2, -1]), i32(0)], attrs={"num_split": 2}, outputs=(0,))],
    "Pad": single((2, 3), i32([[1, 0], [2, 1]])),
    "PadV2": single((2, 2), i32([[0, 1], [1, 1]]), Rand(())),
    "MirrorPad": single((3, 3), i32([[1, 2], [0, 1]]), attrs={"mode": "REFLECT"})
    + single((2, 3), i64([[2, 0], [1, 3]]), attrs={"mode": "SYMMETRIC"}),
    "MirrorPadGrad": single((5, 4), i32([[1, 1], [0, 1]]), attrs={"mode": "REFLECT"})
    + single((4, 5), i32([[1, 0], [2, 0]]), attrs={"mode": "SYMMETRIC"}),
    "Slice": single((3, 4), i32([1, 0]), i32([2, -1])) + single((2, 3, 2), i64([0, 1, 1]), i64([1, 2, 1])),
    "StridedSlice": [
        Case([Rand((3, 4)), i32([0, 1]), i32([3, 4]), i32([2, 2])]),
        Case([Rand((2, 3, 4)), i32([1, -1]), i32([0, 0]), i32([1, -1])],
             attrs={"ellipsis_mask": 1, "end_mask": 2}, label="ellipsis, negative stride"),
        Case([Rand((3, 4)), i64([1, 0]), i64([2, 0]), i64([1, 1])],
             attrs={"shrink_axis_mask": 1, "end_mask": 2, "new_axis_mask": 0}, label="shrink"),
    ],
    "StridedSliceGrad": [Case([i32([3, 4]), i32([0, 1]), i32([3, 4]), i32([2, 2]), Rand((2, 2))])],
    "Reverse": single((2, 3), np.array([True, False])),
    "ReverseV2": single((2, 3, 2), i32([0, -1])),
    "ReverseSequence": single((3, 4), i64([2, 4, 1]), attrs={"seq_dim": 1, "batch_dim": 0}),
}

INDEXING = {
    "Gather": [Case([Rand((4, 2)), i32([3, 0, 3])]),
               Case([Rand((3,)), i64([[0, 2], [2, 2]])])],
    "GatherV2": [Case([Rand((4, 2)), i32([3, 0, 3]), i32(0)]),
                 Case([Rand((2, 4, 3)), i32([[1, 3], [1, 0]]), i32(1)], label="axis 1, 2-D indices"),
                 Case([Rand((2, 3)), i64([2, 2, 0, 1]), i32(-1)], label="last axis"),
                 Case([Rand((2, 3, 2)), i32([[2, 0], [1, 1]]), i32(1)], attrs={"batch_dims": 1},
                      label="batch_dims 1"),
                 Case([Rand((2, 2, 3, 2)), i32([[0, 2, 2], [1, 0, 1]]), i32(2)], attrs={"batch_dims": 1},
                      label="batch_dims 1, axis 2")],
    "GatherNd": [Case([Rand((3, 2)), i32([[2, 1], [0, 0], [2, 1]])]),
                 Case([Rand((2, 3, 2)), i64([[1], [0]])], label="slices")],
    "ScatterNd": [Case([i32([[1], [3], [1]]), Rand((3, 2)), i32([4, 2])])],
    "TensorScatterUpdate": [Case([Rand((4, 2)), i32([[1], [3]]), Rand((2, 2))])],
    "TensorScatterAdd": [Case([Rand((4, 2)), i32([[1], [3], [1]]), Rand((3, 2))])],
    "TensorScatterSub": [Case([Rand((3, 2)), i32([[0, 1], [2, 0]]), Rand((2,))])],
    "TensorScatterMax": [Case([Rand((4,), distinct=True), i32([[1], [3], [1]]),
                               Rand((3,), -1.9, 1.95, distinct=True)])],
    "TensorScatterMin": [Case([Rand((4,), distinct=True), i32([[2], [0]]),
                               Rand((2,), -1.9, 1.95, distinct=True)])],
    "DynamicStitch": [Case([[i32([0, 2]), i32([[1], [3]])], [Rand((2, 2)), Rand((2, 1, 2))]]),
                      Case([[i32([0, 1, 2]), i32([1, 3])], [Rand((3,)), Rand((2,))]],
                           label="slot 1 overwritten")],
    "ParallelDynamicStitch": [Case([[i32([3, 1]), i32([0, 2])], [Rand((2,)), Rand((2,))]])],
    "TopKV2": [Case([Rand((2, 4), distinct=True), i32(2)]),
               Case([Rand((5,), distinct=True), i32(3)], attrs={"sorted": False})],
    "Fill": [Case([i32([2, 3]), Rand(())])],
    "Diag": single((3,)) + single((2, 2)),
    "DiagPart": single((3, 3)) + single((2, 3, 2, 3)),
    "MatrixDiag": single((2, 3)),
    "MatrixDiagPart": single((2, 3, 3)) + single((2, 4)),
    "MatrixSetDiag": [Case([Rand((2, 3)), Rand((2,))]), Case([Rand((2, 2, 2)), Rand((2, 2))])],
    "MatrixDiagV2": [Case([Rand((2, 3)), i32([-1, 0]), i32(3), i32(4), Rand(())]),
                     Case([Rand((3,)), i32(1), i32(-1), i32(-1), Rand(())])],
    "MatrixDiagV3": [Case([Rand((2, 3)), i32([-1, 0]), i32(3), i32(4), Rand(())], attrs={"align": "LEFT_RIGHT"}),
                     Case([Rand((2, 2)), i32([0, 1]), i32(-1), i32(-1), Rand(())])],
    "MatrixDiagPartV2": [Case([Rand((3, 4)), i32([-1, 1]), Rand(())]), Case([Rand((2, 3)), i32(0), Rand(())])],
    "MatrixDiagPartV3": [Case([Rand((3, 4)), i32([-1, 1]), Rand(())], attrs={"align": "RIGHT_RIGHT"}),
                         Case([Rand((2, 3, 3)), i32(-1), Rand(())])],
    "MatrixSetDiagV2": [Case([Rand((3, 4)), Rand((2, 3)), i32([0, 1])])],
    "MatrixSetDiagV3": [Case([Rand((3, 4)), Rand((2, 3)), i32([-1, 0])], attrs={"align": "LEFT_LEFT"}),
                        Case([Rand((2, 3)), Rand((2,)), i32(0)])],
    "MatrixBandPart": single((3, 4), i64(1), i64(0)) + single((2, 3, 3), i32(-1), i32(1)),
}

CASES: dict[str, list[Case]] = {**SHAPES, **INDEXING}
