"""Segment, sparse and resource-scatter kernels: the error paths TensorFlow has (the TensorFlow
fixtures cover the values), each quoting TensorFlow's message, and DestroyResourceOp."""
from __future__ import annotations

import numpy as np
import pytest

from graphtool import dtypes
from graphtool.builder import GraphBuilder
from graphtool.builder.binding import GraphBuildError
from graphtool.errors import RuntimeFailure
from graphtool.exec.session import Session

I32 = np.int32
DATA = np.arange(8, dtype=np.float32).reshape(4, 2)


def run(op, inputs, **attrs):
    b = GraphBuilder()
    out = b.op(op, inputs, name="op", **attrs)
    first = out[0] if isinstance(out, list) else out
    return Session(b.graph, threads=1).run([f"op:{first.index}"]).values[0]


@pytest.mark.parametrize("op, inputs, attrs, message", [
    ("SegmentMax", [DATA, I32([0, 2, 1, 1])], {}, "segment ids are not increasing"),
    ("SegmentMean", [DATA, I32([-1, 0, 0, 1])], {}, r"Segment id -1 out of range \[0, 2\)"),
    ("SegmentProd", [DATA, I32([0, 0, 1])], {}, "same size as dimension 0"),
    ("UnsortedSegmentMax", [DATA, I32([0, 5, 1, -1]), I32(3)], {}, r"segment_ids\[1\] = 5 is out of range \[0, 3\)"),
    ("SparseSegmentSum", [DATA, I32([0, 4]), I32([0, 1])], {}, r"Bad: indices\[1\] == 4 out of range \[0, 4\)"),
    ("SparseSegmentMean", [DATA, I32([0, 1]), I32([1, 0])], {}, "segment ids are not increasing"),
    ("SparseSegmentSqrtNWithNumSegments", [DATA, I32([0, 1]), I32([0, 3]), I32(3)], {},
     "segment ids must be < num_segments"),
    ("SparseSegmentMeanGrad", [DATA, I32([0, 9]), I32([0, 1]), I32(5)], {}, r"indices\[1\] == 9 out of range \[0, 5\)"),
    ("Bincount", [I32([1, -2]), I32(3), np.zeros(0, np.float32)], {}, "Input arr must be non-negative!"),
    ("DenseBincount", [I32([1, 2]), I32(3), np.ones(3, np.float32)], {}, "Weights and input must have the same shape"),
    ("DynamicPartition", [DATA, I32([0, 3, 1, 0])], {"num_partitions": 3}, r"partitions\[1\] = 3 is not in \[0, 3\)"),
    ("SparseFillEmptyRows", [np.array([[0, 0], [5, 1]], np.int64), np.float32([1, 2]), np.array([3, 3], np.int64),
                             np.float32(0)], {}, r"indices\(1, 0\) is invalid: 5 >= 3"),
    ("SparseReshape", [np.array([[0, 0]], np.int64), np.array([2, 3], np.int64), np.array([4, -1], np.int64)], {},
     "requires a multiple of 4"),
])
def test_invalid_inputs_fail_as_in_tensorflow(op, inputs, attrs, message):
    with pytest.raises(RuntimeFailure, match=message):
        run(op, inputs, **attrs)


@pytest.mark.parametrize("op, inputs, message", [
    ("SparseSegmentSum", [DATA, I32([0, 1, 2]), I32([0, 1])], "must have the same length"),
    ("DenseBincount", [I32([[[1]]]), I32(3), np.zeros(0, np.float32)], "rank 1 or 2")])
def test_shape_functions_refuse_what_the_kernels_would(op, inputs, message):
    with pytest.raises(GraphBuildError, match=message):
        run(op, inputs)


def test_empty_segments_follow_tensorflow():
    """Sorted ops give 0 (products 1) for a skipped id, unsorted ones the reduction's identity."""
    assert run("SegmentMax", [np.float32([1, 2]), I32([0, 2])]).tolist() == [1, 0, 2]
    assert run("SegmentProd", [np.float32([3, 2]), I32([1, 1])]).tolist() == [1, 6]
    assert run("SegmentMean", [I32([-7, 2]), I32([0, 0])]).tolist() == [-2]     # truncates toward 0
    assert run("UnsortedSegmentMin", [I32([3, 4]), I32([1, 1]), I32(3)]).tolist() == \
        [np.iinfo(np.int32).max, 3, np.iinfo(np.int32).max]
    assert run("SparseSegmentSqrtN", [np.float32([[4], [9]]), I32([0, 1]), I32([1, 1])]).ravel().tolist() == \
        pytest.approx([0, 13 / np.sqrt(2)])


def variable_graph(ignore_lookup_error: bool):
    b = GraphBuilder()
    handle = b.op("VarHandleOp", [], name="v", dtype=dtypes.float32, shape=[3], shared_name="v")
    b.op("AssignVariableOp", [handle, np.float32([1, 2, 3])], name="init")
    b.op("ResourceScatterAdd", [handle, I32([0, 3]), np.float32([1, 1])], name="bad_scatter")
    b.op("DestroyResourceOp", [handle], name="destroy", ignore_lookup_error=ignore_lookup_error)
    b.op("VarIsInitializedOp", [handle], name="initialized")
    b.op("ReadVariableOp", [handle], name="read", dtype=dtypes.float32)
    return b.graph


def test_destroy_resource_op_deletes_the_variable():
    session = Session(variable_graph(ignore_lookup_error=False), threads=1)
    session.run([], targets=["init"])
    with pytest.raises(RuntimeFailure, match=r"indices\[1\] = 3 is not in \[0, 3\)"):
        session.run([], targets=["bad_scatter"])
    assert session.run(["read:0"]).values[0].tolist() == [1, 2, 3]   # a failed scatter changes nothing
    session.run([], targets=["destroy"])
    assert not session.run(["initialized:0"]).values[0]
    with pytest.raises(RuntimeFailure, match="Could not find variable v"):
        session.run(["read:0"])
    with pytest.raises(RuntimeFailure, match="does not exist"):
        session.run([], targets=["destroy"])
    lenient = Session(variable_graph(ignore_lookup_error=True), threads=1)
    lenient.run([], targets=["destroy"])   # nothing to delete: ignored
