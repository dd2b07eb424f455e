"""dtype mapping and TensorProto <-> ndarray for every encoding TensorFlow writes."""
import ml_dtypes
import numpy as np
import pytest

from graphtool import dtypes
from graphtool.errors import InvalidGraphError
from graphtool.proto import TensorProto
from graphtool.shapes import Shape
from graphtool.tensor import from_ndarray, to_ndarray

ROUND_TRIP_DTYPES = [np.float16, np.float32, np.float64, ml_dtypes.bfloat16, np.int8, np.int16, np.int32,
                     np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_, np.complex64, np.complex128]


@pytest.mark.parametrize("np_dtype", ROUND_TRIP_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("compact", [True, False])
def test_round_trip_every_dtype(np_dtype, compact):
    rng = np.random.default_rng(0)
    values = (rng.standard_normal((3, 4)) * 50).astype(np_dtype)
    for array in (values, np.full((2, 5), values.flat[1], dtype=np_dtype), values[:0], values.flat[0:1].reshape(())):
        back = to_ndarray(from_ndarray(array, compact=compact))
        assert back.dtype == array.dtype and back.shape == array.shape
        np.testing.assert_array_equal(back, array)


def test_dtype_names_and_refs():
    assert dtypes.from_name("DT_FLOAT") is dtypes.float32
    assert dtypes.from_name("half") is dtypes.float16
    assert dtypes.as_dtype(101) is dtypes.float32.ref and dtypes.float32.ref.base is dtypes.float32
    assert dtypes.from_numpy(ml_dtypes.bfloat16) is dtypes.bfloat16
    assert dtypes.from_numpy(np.dtype(object)) is dtypes.string


def test_strings_are_object_arrays():
    array = np.array([[b"a", b"bc"], [b"", b"\xff"]], dtype=object)
    proto = from_ndarray(array, dtypes.string)
    assert list(proto.string_val) == [b"a", b"bc", b"", b"\xff"]
    np.testing.assert_array_equal(to_ndarray(proto), array)


def test_single_value_is_broadcast_to_the_shape():
    proto = TensorProto(dtype=dtypes.float32.enum, float_val=[7.0])
    proto.tensor_shape.CopyFrom(Shape([3, 4]).to_proto())
    np.testing.assert_array_equal(to_ndarray(proto), np.full((3, 4), 7.0, np.float32))


def test_fewer_values_fill_with_the_last():
    proto = TensorProto(dtype=dtypes.int32.enum, int_val=[1, 2])
    proto.tensor_shape.CopyFrom(Shape([4]).to_proto())
    np.testing.assert_array_equal(to_ndarray(proto), [1, 2, 2, 2])


def test_no_values_means_zeros():
    proto = TensorProto(dtype=dtypes.float64.enum)
    proto.tensor_shape.CopyFrom(Shape([2]).to_proto())
    np.testing.assert_array_equal(to_ndarray(proto), [0.0, 0.0])


def test_half_val_holds_bit_patterns():
    proto = TensorProto(dtype=dtypes.float16.enum, half_val=[0x3C00, 0xC000])  # 1.0, -2.0
    proto.tensor_shape.CopyFrom(Shape([2]).to_proto())
    np.testing.assert_array_equal(to_ndarray(proto), np.array([1.0, -2.0], np.float16))
    proto.dtype = dtypes.bfloat16.enum
    proto.ClearField("half_val")
    proto.half_val.extend([0x3F80])  # bfloat16 1.0
    assert to_ndarray(proto).dtype == ml_dtypes.bfloat16


def test_complex_pairs():
    proto = TensorProto(dtype=dtypes.complex64.enum, scomplex_val=[1.0, 2.0, 3.0, -4.0])
    proto.tensor_shape.CopyFrom(Shape([2]).to_proto())
    np.testing.assert_array_equal(to_ndarray(proto), np.array([1 + 2j, 3 - 4j], np.complex64))


def test_nan_and_signed_zero_survive_compact_encoding():
    array = np.array([np.nan, np.nan], np.float32)
    assert np.isnan(to_ndarray(from_ndarray(array))).all()
    zeros = np.array([0.0, -0.0], np.float32)
    assert np.signbit(to_ndarray(from_ndarray(zeros))).tolist() == [False, True]


@pytest.mark.parametrize("mutate, message", [
    (lambda p: setattr(p, "tensor_content", b"\x00" * 5), "tensor_content has 5 bytes"),
    (lambda p: p.float_val.extend([1.0] * 9), "9 values"),
    (lambda p: setattr(p, "dtype", 0), "no dtype"),
])
def test_malformed_tensors_are_invalid_input(mutate, message):
    proto = TensorProto(dtype=dtypes.float32.enum)
    proto.tensor_shape.CopyFrom(Shape([2, 2]).to_proto())
    mutate(proto)
    with pytest.raises(InvalidGraphError, match=message):
        to_ndarray(proto, "node 'c'")


def test_a_huge_filled_constant_is_refused_without_allocating():
    proto = TensorProto(dtype=dtypes.float32.enum, float_val=[1.0])
    proto.tensor_shape.CopyFrom(Shape([100000, 100000]).to_proto())
    with pytest.raises(InvalidGraphError, match=r"would take 37.3 GiB, above the tensor size limit"):
        to_ndarray(proto, "node 'c'")
