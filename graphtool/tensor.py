"""TensorProto <-> numpy conversion for every encoding TensorFlow writes.

TensorFlow stores a tensor either as `tensor_content` (raw little-endian bytes) or in the typed
repeated field for its dtype. A typed field may hold fewer values than the shape has elements: the
last value then fills the rest (one value stands for a whole constant-filled tensor).
"""
from __future__ import annotations

import numpy as np

from . import dtypes
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
# A compactly stored tensor (one value filling its shape) may claim any size; refuse to expand one
# bigger than this, so a crafted file gives a clean error rather than exhausting memory.
MAX_EXPANDED_BYTES = 1 << 32


def check_header(proto: TensorProto, where: str = "tensor") -> None:
    """Validate dtype and shape (and the byte count of tensor_content) without decoding values."""
    dtype = dtypes.from_enum(proto.dtype).base
    if dtype is dtypes.INVALID:
        raise InvalidGraphError(f"{where}: tensor has no dtype")
    if proto.tensor_shape.unknown_rank:
        raise InvalidGraphError(f"{where}: tensor has unknown rank")
    shape = [d.size for d in proto.tensor_shape.dim]
    if any(d < 0 for d in shape):
        raise InvalidGraphError(f"{where}: tensor shape {shape} has a negative dim")
    count = 1
    for d in shape:
        count *= d
    if dtype.numpy is not None and count * dtype.itemsize > MAX_EXPANDED_BYTES:
        raise InvalidGraphError(f"{where}: tensor of shape {shape} ({dtype}) would take "
                                f"{count * dtype.itemsize:,} bytes")
    if proto.tensor_content and dtype.numpy is not None and dtype is not dtypes.string:
        if len(proto.tensor_content) != count * dtype.numpy.itemsize:
            raise InvalidGraphError(f"{where}: tensor_content has {len(proto.tensor_content)} bytes, "
                                    f"shape {shape} of {dtype} needs {count * dtype.numpy.itemsize}")


def _storage(dtype: DType) -> np.dtype:
    """The little-endian numpy dtype a tensor of `dtype` is stored as."""
    return dtype.numpy.newbyteorder("<") if dtype.numpy.byteorder not in "|" else dtype.numpy


def to_ndarray(proto: TensorProto, where: str = "tensor") -> np.ndarray:
    """Decode a TensorProto. `where` names the node/attr in error messages."""
    dtype = dtypes.from_enum(proto.dtype).base
    if dtype is dtypes.INVALID:
        raise InvalidGraphError(f"{where}: tensor has no dtype")
    if proto.tensor_shape.unknown_rank:
        raise InvalidGraphError(f"{where}: tensor has unknown rank")
    shape = tuple(d.size for d in proto.tensor_shape.dim)
    if any(d < 0 for d in shape):
        raise InvalidGraphError(f"{where}: tensor shape {list(shape)} has a negative dim")
    check_header(proto, where)
    count = int(np.prod(shape, dtype=np.int64))
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
