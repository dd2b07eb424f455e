"""Shape functions of the segment and sparse families on partly known shapes (TensorFlow's
SegmentReductionShapeFn, SparseSegmentReductionShapeFn, ... conclusions); the values are checked
against TensorFlow by the op_segment_* fixtures."""
from __future__ import annotations

import pytest

from graphtool.ops import registry
from graphtool.shapes import Shape

from .test_array_ops import I32, I64, U, Net, inferred

SEGMENT_OPS = """SegmentSum SegmentMean SegmentMax SegmentMin SegmentProd UnsortedSegmentSum UnsortedSegmentMax
UnsortedSegmentMin UnsortedSegmentProd SparseSegmentSum SparseSegmentMean SparseSegmentSqrtN
SparseSegmentSumWithNumSegments SparseSegmentMeanWithNumSegments SparseSegmentSqrtNWithNumSegments
SparseSegmentSumGrad SparseSegmentMeanGrad SparseSegmentSqrtNGrad SparseSegmentSumGradV2 SparseSegmentMeanGradV2
SparseSegmentSqrtNGradV2 Bincount DenseBincount""".split()
SPARSE_OPS = ["SparseFillEmptyRows", "SparseFillEmptyRowsGrad", "SparseReshape"]


@pytest.mark.parametrize("op", SEGMENT_OPS + SPARSE_OPS)
def test_op_is_registered_in_its_family(op):
    spec = registry.get(op)
    assert spec.family == ("sparse" if op in SPARSE_OPS else "segment") and spec.shape_fn is not None


@pytest.mark.parametrize("op", ["SegmentSum", "SegmentMean", "SegmentMax", "SegmentMin", "SegmentProd"])
def test_sorted_segments_count_is_known_only_at_run_time(op):
    n = Net()
    assert inferred(n.op(op, n.input([U, 3, 2]), n.input([U], I32))) == [Shape([U, 3, 2])]


def test_sparse_segments_take_num_segments_when_known():
    n = Net()
    data, indices, ids = n.input([7, 3]), n.input([U], I32), n.input([5], I64)
    assert inferred(n.op("SparseSegmentMean", data, indices, ids)) == [Shape([U, 3])]
    assert inferred(n.op("SparseSegmentSqrtNWithNumSegments", data, indices, ids, n.const(4))) == [Shape([4, 3])]
    assert inferred(n.op("SparseSegmentSumWithNumSegments", data, indices, ids, n.input([], I32))) == [Shape([U, 3])]
    assert inferred(n.op("SparseSegmentSumGrad", n.input([4, 3]), indices, ids, n.const(9))) == [Shape([9, 3])]


def test_bincount_shapes():
    n = Net()
    assert inferred(n.op("Bincount", n.input([U], I32), n.const(5), n.input([0]))) == [Shape([5])]
    matrix = n.op("DenseBincount", n.input([2, U], I64), n.const(6, I64), n.input([0]), binary_output=True)
    assert inferred(matrix) == [Shape([2, 6])]


def test_dynamic_partition_outputs_have_unknown_row_counts():
    n = Net()
    node = n.op("DynamicPartition", n.input([U, 4, 3]), n.input([2, U], I32), num_partitions=3)
    assert inferred(node) == [Shape([U, 3])] * 3


def test_sparse_fill_empty_rows_reads_the_dense_shape():
    n = Net()
    node = n.op("SparseFillEmptyRows", n.input([U, 2], I64), n.input([U]), n.const([6, 3], I64), n.input([]))
    assert inferred(node) == [Shape([U, 2]), Shape([U]), Shape([6]), Shape([U])]
    reshaped = n.op("SparseReshape", n.input([5, 2], I64), n.input([2], I64), n.input([3], I64))
    assert inferred(reshaped) == [Shape([5, 3]), Shape([3])]
