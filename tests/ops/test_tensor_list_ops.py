"""TensorList shape functions: element shape and dtype travel with the list as handle data, so
reads get static shapes where TensorFlow's shape functions give them, and the static checks fail
where TensorFlow's do. (The fixtures' _output_shapes are compared for every case in
tests/test_tf_fixtures.py.)"""
from __future__ import annotations

import numpy as np
import pytest

from graphtool import dtypes
from graphtool.builder import GraphBuilder
from graphtool.builder.binding import GraphBuildError
from graphtool.shapes import Shape

F32 = dtypes.float32


def _shape(*dims):
    return np.asarray(dims, np.int32).reshape(len(dims))


def _get(b, handle, element_shape=np.int32(-1), dtype=F32):
    return b.op("TensorListGetItem", [handle, np.int32(0), element_shape], element_dtype=dtype)


def _handle(b, ref):
    return b.shapes.info[ref].handle


def test_creating_ops_record_their_element_shape_and_dtype():
    b = GraphBuilder()
    x = b.placeholder("float32", [4, 3], name="x")
    cases = {
        "from_tensor": (b.op("TensorListFromTensor", [x, _shape(3)]), Shape([3])),
        "from_tensor_unknown": (b.op("TensorListFromTensor", [x, np.int32(-1)]), Shape.unknown()),
        "reserve": (b.op("TensorListReserve", [_shape(-1, 2), np.int32(3)], element_dtype=F32), Shape([None, 2])),
        "empty": (b.op("EmptyTensorList", [_shape(), np.int32(-1)], element_dtype=F32), Shape([])),
        "scatter": (b.op("TensorListScatterV2", [x, np.int32([0, 1, 2, 3]), _shape(3), np.int32(-1)]), Shape([3])),
        "split": (b.op("TensorListSplit", [x, _shape(-1, 3), np.int64([4])]), Shape([None, 3])),
    }
    for name, (ref, element) in cases.items():
        assert b.shape(ref) == Shape.scalar(), name
        handle = _handle(b, ref)
        assert handle.element_shape == element and handle.dtype == F32, name


def test_from_tensor_keeps_its_element_shape_input_not_the_rows_shape():
    """As TensorFlow: a later SetItem may store other shapes when element_shape is partial."""
    b = GraphBuilder()
    items = b.op("TensorListFromTensor", [b.placeholder("float32", [4, 3], name="x"), np.int32(-1)])
    assert b.shape(_get(b, items)) == Shape.unknown()
    assert b.shape(_get(b, items, _shape(3))) == Shape([3])


def test_reads_merge_the_handle_with_their_element_shape_input():
    b = GraphBuilder()
    reserved = b.op("TensorListReserve", [_shape(-1, 2), np.int32(3)], element_dtype=F32)
    assert b.shape(_get(b, reserved)) == Shape([None, 2])
    assert b.shape(_get(b, reserved, _shape(5, -1))) == Shape([5, 2])
    assert b.shape(b.op("TensorListStack", [reserved, np.int32(-1)], element_dtype=F32, num_elements=3)) \
        == Shape([3, None, 2])
    assert b.shape(b.op("TensorListStack", [reserved, _shape(4, 2)], element_dtype=F32)) == Shape([None, 4, 2])
    gathered = b.op("TensorListGather", [reserved, np.int32([[0, 1, 2]]), np.int32(-1)], element_dtype=F32)
    assert b.shape(gathered) == Shape([1, 3, None, 2])
    value, lengths = b.op("TensorListConcatV2", [reserved, np.int32(-1), np.zeros([0], np.int64)], element_dtype=F32)
    assert b.shape(value) == Shape([None, 2]) and b.shape(lengths) == Shape([None])
    with pytest.raises(GraphBuildError, match="incompatible"):
        _get(b, reserved, _shape(5, 3))


def test_derived_lists_keep_the_handle_data():
    b = GraphBuilder()
    reserved = b.op("TensorListReserve", [_shape(2), np.int32(3)], element_dtype=F32)
    derived = [
        b.op("TensorListSetItem", [reserved, np.int32(0), np.ones(2, np.float32)]),
        b.op("TensorListPushBack", [reserved, np.ones(2, np.float32)]),
        b.op("TensorListPopBack", [reserved, np.int32(-1)], element_dtype=F32)[0],
        b.op("TensorListResize", [reserved, np.int32(5)]),
        b.op("TensorListScatterIntoExistingList", [reserved, np.ones((1, 2), np.float32), np.int32([4])]),
        b.op("Identity", [reserved]),
        b.op("ZerosLike", [reserved]),
        b.op("AddN", [[reserved, reserved]]),
    ]
    for ref in derived:
        assert b.shape(_get(b, ref)) == Shape([2]), ref.node.op
    popped = b.op("TensorListPopBack", [reserved, np.int32(-1)], element_dtype=F32)[1]
    assert b.shape(popped) == Shape([2])


def test_handle_data_goes_around_a_while_loop():
    b = GraphBuilder()
    outputs = b.op("TensorListReserve", [_shape(3), np.int32(5)], element_dtype=F32)

    def body(i, outputs):
        read = _get(b, outputs)
        return b.op("AddV2", [i, 1]), b.op("TensorListSetItem", [outputs, i, b.op("Neg", [read])])

    _, final = b.while_loop(lambda i, o: b.less(i, 5), body, [0, outputs])
    assert b.shape(_get(b, final)) == Shape([3])


def test_static_checks_fail_where_tensorflows_do():
    b = GraphBuilder()
    reserved = b.op("TensorListReserve", [_shape(2), np.int32(3)], element_dtype=F32)
    with pytest.raises(GraphBuildError, match="Expected list with element dtype int32 but got list with element "
                                              "dtype float32"):
        b.op("TensorListStack", [reserved, np.int32(-1)], element_dtype=dtypes.int32)
    with pytest.raises(GraphBuildError, match="incompatible"):
        b.op("TensorListSetItem", [reserved, np.int32(0), np.ones(3, np.float32)])
    with pytest.raises(GraphBuildError, match="rank at least 1"):
        b.op("TensorListFromTensor", [np.float32(1), np.int32(-1)])
    with pytest.raises(GraphBuildError, match="incompatible"):
        b.op("TensorListFromTensor", [np.ones((2, 3), np.float32), _shape(4)])
    with pytest.raises(GraphBuildError, match="at least vectors"):
        b.op("TensorListConcatV2", [b.op("EmptyTensorList", [_shape(), np.int32(-1)], element_dtype=F32),
                                    np.int32(-1), np.zeros([0], np.int64)], element_dtype=F32)
    with pytest.raises(GraphBuildError, match="only valid scalar|scalar 3"):
        b.op("TensorListReserve", [np.int32(3), np.int32(2)], element_dtype=F32)


def test_element_shape_has_the_rank_and_a_value_when_fully_known():
    b = GraphBuilder()
    known = b.op("TensorListElementShape", [b.op("TensorListReserve", [_shape(2, 3), np.int32(1)], element_dtype=F32)],
                 shape_type=dtypes.int64)
    partial = b.op("TensorListElementShape", [b.op("TensorListReserve", [_shape(-1, 3), np.int32(1)],
                                                   element_dtype=F32)], shape_type=dtypes.int32)
    unknown = b.op("TensorListElementShape", [b.op("TensorListReserve", [np.int32(-1), np.int32(1)],
                                                   element_dtype=F32)], shape_type=dtypes.int32)
    assert b.shape(known) == Shape([2]) and b.value(known).tolist() == [2, 3] and b.value(known).dtype == np.int64
    assert b.shape(partial) == Shape([2]) and b.value(partial) is None
    assert b.shape(unknown) == Shape.unknown()


def test_push_back_batch_and_concat_lists():
    b = GraphBuilder()
    handles = b.placeholder("variant", [None], name="handles")
    batch = b.op("TensorListPushBackBatch", [handles, np.ones((4, 2), np.float32)])
    assert b.shape(batch) == Shape([4])
    a = b.op("TensorListReserve", [_shape(-1, 2), np.int32(1)], element_dtype=F32)
    c = b.op("TensorListReserve", [_shape(3, -1), np.int32(1)], element_dtype=F32)
    joined = b.op("TensorListConcatLists", [a, c], element_dtype=F32)
    assert _handle(b, joined).element_shape == Shape([3, 2])
