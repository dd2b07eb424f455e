"""TensorProto <-> numpy conversion for every encoding TensorFlow writes.

TensorFlow stores a tensor either as `tensor_content` (raw little-endian bytes) or in the typed
repeated field for its dtype. A typed field may hold fewer values than the shape has elements: the
last value then fills the rest (one value stands for a whole constant-filled tensor).

Such a "filled" tensor can claim gigabytes in a few bytes of graph, so its size is always read from
the header first (`header`, `decoded_nbytes`): code that only needs dtype and shape never decodes,
and `to_ndarray` refuses to expand one beyond `limits.current().max_tensor_bytes`. A tensor stored in
full (tensor_content, or a value per element) decodes to about its stored size, which the input-size
bound already limits.
"""
from __future__ import annotations

import numpy as np

from . import dtypes, limits
from .dtypes import DType
from .errors import InvalidGraphError
from .proto.tensor_pb2 import TensorProto
from .shapes import Shape

# dtype -> name of the typed repeated field that holds its values.
_VALUE_FIELD = {
    dtypes.float32: "float_val",
    dtypes.float64: "double_val",
    dtypes.int32: "int_val", dtypes.int16: "int_val", dtypes.int8: "int_val",
    dtypes.uint8: "int_val", dtypes.uint16: "int_val",
    dtypes.from_name("qint8"): "int_val", dtypes.from_name("quint8"): "int_val",
    dtypes.from_name("qint16"): "int_val", dtypes.from_name("quint16"): "int_val",
    dtypes.from_name("qint32"): "int_val",
    dtypes.from_name("int4"): "int_val", dtypes.from_name("uint4"): "int_val",
    dtypes.int64: "int64_val",
    dtypes.uint32: "uint32_val",
    dtypes.uint64: "uint64_val",
    dtypes.bool_: "bool_val",
    dtypes.string: "string_val",
    dtypes.complex64: "scomplex_val",
    dtypes.complex128: "dcomplex_val",
    dtypes.float16: "half_val",
    dtypes.bfloat16: "half_val",
    dtypes.resource: "resource_handle_val",
    dtypes.variant: "variant_val",
}
_FLOAT8 = {d for d in dtypes.DType._by_name.values() if d.name.startswith("float8_")}
# TensorFlow's TensorShape keeps the element count in an int64; a claim beyond that is not a shape.
_MAX_ELEMENTS = (1 << 63) - 1
# Bytes per element of a decoded string/variant tensor (one object reference each, at least).
_OBJECT_ITEMSIZE = 8


def header(proto: TensorProto, where: str = "tensor") -> tuple[DType, tuple[int, ...], int]:
    """(dtype, shape, element count) from the header alone, validated; never decodes values."""
    dtype = dtypes.from_enum(proto.dtype).base
    if dtype is dtypes.INVALID:
        raise InvalidGraphError(f"{where}: tensor has no dtype")
    if proto.tensor_shape.unknown_rank:
        raise InvalidGraphError(f"{where}: tensor has unknown rank")
    shape = tuple(d.size for d in proto.tensor_shape.dim)
    if any(d < 0 for d in shape):
        raise InvalidGraphError(f"{where}: tensor shape {list(shape)} has a negative dim")
    count = 1
    for d in shape:
        count *= d
    if count > _MAX_ELEMENTS:
        raise InvalidGraphError(f"{where}: tensor shape {list(shape)} has more than 2^63 elements")
    nonzero = 1
    for d in shape:
        nonzero *= max(d, 1)
    if nonzero > _MAX_ELEMENTS:
        # Empty, but no array can have that shape: numpy (like any strided array) multiplies the
        # dims into a 64-bit index even when one of them is 0.
        raise InvalidGraphError(f"{where}: tensor shape {list(shape)} cannot be represented: its nonzero "
                                f"dims multiply past 2^63")
    return dtype, shape, count


def _stored_count(proto: TensorProto, dtype: DType) -> int:
    """How many values the typed field holds (complex ones are stored as (real, imag) pairs)."""
    if dtype in _FLOAT8:
        return len(proto.float8_val)
    field = _VALUE_FIELD.get(dtype)
    if field is None:
        return 0
    stored = len(getattr(proto, field))
    return stored // 2 if field in ("scomplex_val", "dcomplex_val") else stored


def _itemsize(dtype: DType) -> int:
    if dtype is dtypes.string or dtype.numpy is None or dtype._kind == "other":
        return _OBJECT_ITEMSIZE
    return dtype.numpy.itemsize


def decoded_nbytes(proto: TensorProto, where: str = "tensor") -> int:
    """Bytes the decoded array takes (object references for strings), from the header."""
    dtype, _, count = header(proto, where)
    return count * _itemsize(dtype)


def expanded_nbytes(proto: TensorProto, where: str = "tensor") -> int:
    """Bytes decoding would create beyond what the proto stores: 0 for a tensor stored in full
    (tensor_content, or one value per element), else its decoded size (a filled tensor)."""
    dtype, _, count = header(proto, where)
    if count == 0 or proto.tensor_content or _stored_count(proto, dtype) >= count:
        return 0
    return count * _itemsize(dtype)


def check_header(proto: TensorProto, where: str = "tensor") -> None:
    """Validate dtype and shape (and the byte count of tensor_content, the number of typed values)
    without decoding values. A filled tensor of any claimed size passes: TensorFlow accepts one,
    and only code that decodes it (running the graph) is bounded by max_tensor_bytes."""
    dtype, shape, count = header(proto, where)
    if proto.tensor_content and dtype.numpy is not None and dtype is not dtypes.string:
        if len(proto.tensor_content) != count * dtype.numpy.itemsize:
            raise InvalidGraphError(f"{where}: tensor_content has {len(proto.tensor_content)} bytes, "
                                    f"shape {list(shape)} of {dtype} needs {count * dtype.numpy.itemsize}")
    elif _stored_count(proto, dtype) > count:
        raise InvalidGraphError(f"{where}: {_stored_count(proto, dtype)} values for shape {list(shape)}")


def check_decodable(proto: TensorProto, where: str = "tensor") -> None:
    """InvalidGraphError unless decoding `proto` stays within max_tensor_bytes (a filled tensor's
    claimed size; one stored in full is bounded by the input size already)."""
    expanded = expanded_nbytes(proto, where)
    bound = limits.current().max_tensor_bytes
    if expanded > bound:
        dtype, shape, _ = header(proto, where)
        raise InvalidGraphError(
            f"{where}: a {dtype} tensor of shape {list(shape)} filled from {_stored_count(proto, dtype)} "
            f"stored value(s) would take {limits.describe_bytes(expanded)}, above the tensor size limit "
            f"of {limits.describe_bytes(bound)}",
            hint="raise it with --max-tensor-bytes or DFTOOL_MAX_TENSOR_BYTES if the graph is trusted")


def _storage(dtype: DType) -> np.dtype:
    """The little-endian numpy dtype a tensor of `dtype` is stored as."""
    numpy_dtype = dtype.numpy_dtype
    return numpy_dtype.newbyteorder("<") if numpy_dtype.byteorder not in "|" else numpy_dtype


def to_ndarray(proto: TensorProto, where: str = "tensor") -> np.ndarray:
    """Decode a TensorProto. `where` names the node/attr in error messages. A filled tensor is
    expanded only within limits.current().max_tensor_bytes (InvalidGraphError beyond)."""
    dtype, shape, count = header(proto, where)
    check_header(proto, where)
    check_decodable(proto, where)
    if dtype.numpy is None:
        raise InvalidGraphError(f"{where}: dtype {dtype} is not supported")

    if proto.tensor_content:
        if dtype is dtypes.string or dtype._kind == "other":
            raise InvalidGraphError(f"{where}: {dtype} tensor cannot use tensor_content")
        storage = _storage(dtype)
        if len(proto.tensor_content) != count * storage.itemsize:
            raise InvalidGraphError(
                f"{where}: tensor_content has {len(proto.tensor_content)} bytes, "
                f"shape {list(shape)} of {dtype} needs {count * storage.itemsize}")
        flat = np.frombuffer(proto.tensor_content, dtype=storage).astype(dtype.numpy, copy=True)
        return flat.reshape(shape)

    values = _typed_values(proto, dtype, where)
    if len(values) > count:
        raise InvalidGraphError(f"{where}: {len(values)} values for shape {list(shape)}")
    if dtype is dtypes.string or dtype._kind == "other":
        out = np.empty(count, dtype=object)
        if len(values):
            out[: len(values)] = list(values)
            out[len(values):] = values[-1]
        else:
            out[:] = b"" if dtype is dtypes.string else None
        return out.reshape(shape)
    out = np.zeros(count, dtype=dtype.numpy)
    if len(values):
        out[: len(values)] = values
        out[len(values):] = values[-1]
    return out.reshape(shape)


def _typed_values(proto: TensorProto, dtype: DType, where: str):
    if dtype in _FLOAT8:
        return np.frombuffer(proto.float8_val, dtype=np.uint8).view(dtype.numpy)
    field = _VALUE_FIELD.get(dtype)
    if field is None:
        raise InvalidGraphError(f"{where}: dtype {dtype} is not supported")
    raw = getattr(proto, field)
    if field == "half_val":
        return np.asarray(list(raw), dtype=np.int64).astype(np.uint16).view(dtype.numpy)
    if field in ("scomplex_val", "dcomplex_val"):
        pairs = np.asarray(list(raw), dtype=np.float64)
        if len(pairs) % 2:
            raise InvalidGraphError(f"{where}: complex values must come in (real, imag) pairs")
        return (pairs[0::2] + 1j * pairs[1::2]).astype(dtype.numpy)
    if field in ("string_val", "resource_handle_val", "variant_val"):
        return list(raw)
    return np.asarray(list(raw)).astype(dtype.numpy)


def from_ndarray(value, dtype: DType | None = None, *, compact: bool = True) -> TensorProto:
    """Encode an array. With `compact`, a tensor whose elements are all equal is written as one
    typed value (as TensorFlow does for filled constants); otherwise numeric data goes to
    tensor_content and strings to string_val."""
    dtype = dtypes.as_dtype(dtype) if dtype is not None else None
    if dtype is not None and dtype.base is dtypes.string:
        array = np.asarray(value, dtype=object)
    else:
        array = np.asarray(value, dtype=dtype.numpy if dtype is not None else None)
    if dtype is None:
        if array.dtype.kind in "US":
            array = array.astype(object)
        dtype = dtypes.from_numpy(array.dtype)
    dtype = dtype.base
    proto = TensorProto(dtype=dtype.enum)
    proto.tensor_shape.CopyFrom(Shape(array.shape).to_proto())
    if dtype is dtypes.string:
        proto.string_val.extend(v.encode() if isinstance(v, str) else bytes(v) for v in array.reshape(-1))
        return proto
    flat = array.reshape(-1)
    if compact and flat.size > 0 and _all_equal(flat) and dtype in _VALUE_FIELD:
        _set_typed_values(proto, dtype, flat[:1])
        return proto
    proto.tensor_content = np.ascontiguousarray(flat).astype(_storage(dtype)).tobytes()
    return proto


def _all_equal(flat: np.ndarray) -> bool:
    flat = np.ascontiguousarray(flat)  # a broadcast (stride-0) array cannot be viewed as bytes
    first = flat[0]
    if flat.dtype.kind in "fc":
        # Bitwise comparison so NaN payloads and -0.0 survive the round trip.
        return bool(np.all(flat.view(np.uint8).reshape(flat.size, -1) == flat[:1].view(np.uint8)))
    return bool(np.all(flat == first))


def _set_typed_values(proto: TensorProto, dtype: DType, flat: np.ndarray) -> None:
    field = _VALUE_FIELD[dtype]
    target = getattr(proto, field)
    if field == "half_val":
        target.extend(int(v) for v in flat.view(np.uint16))
    elif field in ("scomplex_val", "dcomplex_val"):
        for v in flat:
            target.extend([float(v.real), float(v.imag)])
    elif field == "bool_val":
        target.extend(bool(v) for v in flat)
    elif field in ("float_val", "double_val"):
        target.extend(float(v) for v in flat)
    else:
        target.extend(int(v) for v in flat)
