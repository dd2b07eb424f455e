"""Element types: TensorFlow's DataType enum values, their names, and their numpy equivalents.

A DType is interned (one object per enum value), so `is` and `==` both work and DTypes can be dict
keys. Reference types (enum + 100, written by TensorFlow for VariableV2 and friends) are DTypes too;
`base` strips the reference.
"""
from __future__ import annotations

import numpy as np
import ml_dtypes

from .errors import InvalidGraphError, UsageError

_REF_OFFSET = 100


class DType:
    __slots__ = ("enum", "name", "numpy", "_kind")
    _by_enum: dict[int, "DType"] = {}
    _by_name: dict[str, "DType"] = {}

    def __init__(self, enum: int, name: str, numpy_dtype, kind: str):
        self.enum = enum
        self.name = name
        self.numpy = np.dtype(numpy_dtype) if numpy_dtype is not None else None
        self._kind = kind  # "float", "int", "uint", "complex", "bool", "string", "quant", "other"

    def __repr__(self) -> str:
        return f"dftool.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __reduce__(self):
        return (from_enum, (self.enum,))

    @property
    def is_ref(self) -> bool:
        return self.enum > _REF_OFFSET

    @property
    def base(self) -> "DType":
        return from_enum(self.enum - _REF_OFFSET) if self.is_ref else self

    @property
    def ref(self) -> "DType":
        return self if self.is_ref else from_enum(self.enum + _REF_OFFSET)

    @property
    def is_floating(self) -> bool:
        return self.base._kind == "float"

    @property
    def is_integer(self) -> bool:
        return self.base._kind in ("int", "uint")

    @property
    def is_unsigned(self) -> bool:
        return self.base._kind == "uint"

    @property
    def is_complex(self) -> bool:
        return self.base._kind == "complex"

    @property
    def is_bool(self) -> bool:
        return self.base._kind == "bool"

    @property
    def is_numeric(self) -> bool:
        return self.base._kind in ("float", "int", "uint", "complex", "quant")

    @property
    def numpy_dtype(self) -> np.dtype:
        """`numpy` where the type is known to have one (every type but resource, variant and the
        like, whose `numpy` is None)."""
        if self.numpy is None:
            raise TypeError(f"{self.name} has no numpy dtype")
        return self.numpy

    @property
    def itemsize(self) -> int:
        """Bytes per element (strings and handles count as pointers)."""
        return self.base.numpy.itemsize if self.base.numpy is not None else 8


# (enum, canonical name, numpy dtype, kind); names follow tf.as_dtype(...).name.
_TABLE = [
    (1, "float32", np.float32, "float"),
    (2, "float64", np.float64, "float"),
    (3, "int32", np.int32, "int"),
    (4, "uint8", np.uint8, "uint"),
    (5, "int16", np.int16, "int"),
    (6, "int8", np.int8, "int"),
    (7, "string", object, "string"),
    (8, "complex64", np.complex64, "complex"),
    (9, "int64", np.int64, "int"),
    (10, "bool", np.bool_, "bool"),
    (11, "qint8", np.int8, "quant"),
    (12, "quint8", np.uint8, "quant"),
    (13, "qint32", np.int32, "quant"),
    (14, "bfloat16", ml_dtypes.bfloat16, "float"),
    (15, "qint16", np.int16, "quant"),
    (16, "quint16", np.uint16, "quant"),
    (17, "uint16", np.uint16, "uint"),
    (18, "complex128", np.complex128, "complex"),
    (19, "float16", np.float16, "float"),
    (20, "resource", object, "other"),
    (21, "variant", object, "other"),
    (22, "uint32", np.uint32, "uint"),
    (23, "uint64", np.uint64, "uint"),
    (24, "float8_e5m2", ml_dtypes.float8_e5m2, "float"),
    (25, "float8_e4m3fn", ml_dtypes.float8_e4m3fn, "float"),
    (26, "float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz, "float"),
    (27, "float8_e4m3b11fnuz", ml_dtypes.float8_e4m3b11fnuz, "float"),
    (28, "float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz, "float"),
    (29, "int4", ml_dtypes.int4, "int"),
    (30, "uint4", ml_dtypes.uint4, "uint"),
    (31, "int2", getattr(ml_dtypes, "int2", None), "int"),
    (32, "uint2", getattr(ml_dtypes, "uint2", None), "uint"),
    (33, "float4_e2m1fn", getattr(ml_dtypes, "float4_e2m1fn", None), "float"),
]

INVALID = DType(0, "invalid", None, "other")
DType._by_enum[0] = INVALID
for _enum, _name, _np, _kind in _TABLE:
    _dtype = DType(_enum, _name, _np, _kind)
    _ref = DType(_enum + _REF_OFFSET, _name + "_ref", _np, _kind)
    DType._by_enum[_enum] = _dtype
    DType._by_enum[_enum + _REF_OFFSET] = _ref
    DType._by_name[_name] = _dtype
    DType._by_name[_name + "_ref"] = _ref

# Aliases accepted when parsing a name (TensorFlow's spellings and the proto enum names).
_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "complex": "complex64",
            "str": "string", "bytes": "string"}

float16, float32, float64, bfloat16 = (DType._by_name[n] for n in ("float16", "float32", "float64", "bfloat16"))
int8, int16, int32, int64 = (DType._by_name[n] for n in ("int8", "int16", "int32", "int64"))
uint8, uint16, uint32, uint64 = (DType._by_name[n] for n in ("uint8", "uint16", "uint32", "uint64"))
complex64, complex128 = DType._by_name["complex64"], DType._by_name["complex128"]
bool_, string = DType._by_name["bool"], DType._by_name["string"]
resource, variant = DType._by_name["resource"], DType._by_name["variant"]

ALL_NUMERIC = tuple(d for d in DType._by_name.values() if not d.is_ref and d.is_numeric)
FLOATING = (float16, bfloat16, float32, float64)
INTEGER = (int8, int16, int32, int64, uint8, uint16, uint32, uint64)
COMPLEX = (complex64, complex128)


def from_enum(value: int) -> DType:
    try:
        return DType._by_enum[int(value)]
    except KeyError:
        # Enum values come from files; names (from_name) come from users.
        raise InvalidGraphError(f"unknown DataType enum value {value}") from None


def from_name(name: str) -> DType:
    """Parse 'float32', 'float', 'DT_FLOAT', 'tf.float32' and the like."""
    key = name.strip().lower()
    key = key.removeprefix("tf.").removeprefix("dt_")
    key = _ALIASES.get(key, key)
    if key in DType._by_name:
        return DType._by_name[key]
    for enum_name, dtype in _PROTO_NAMES.items():
        if enum_name.lower() == name.strip().lower():
            return dtype
    raise UsageError(f"unknown dtype {name!r}")


def from_numpy(np_dtype) -> DType:
    """The DType for a numpy dtype (object arrays are strings)."""
    np_dtype = np.dtype(np_dtype)
    if np_dtype.kind in "OSU":
        return string
    for dtype in DType._by_name.values():
        if not dtype.is_ref and dtype._kind != "quant" and dtype.numpy == np_dtype:
            return dtype
    raise UsageError(f"numpy dtype {np_dtype} has no DataType")


def as_dtype(value) -> DType:
    """Coerce a DType, enum int, name, or numpy dtype to a DType."""
    if isinstance(value, DType):
        return value
    if isinstance(value, (int, np.integer)):
        return from_enum(int(value))
    if isinstance(value, str):
        return from_name(value)
    return from_numpy(value)


def _proto_names() -> dict[str, DType]:
    from .proto import types_pb2

    return {v.name: DType._by_enum[v.number] for v in types_pb2.DataType.DESCRIPTOR.values
            if v.number in DType._by_enum}


_PROTO_NAMES = _proto_names()
