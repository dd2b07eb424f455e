"""String <-> number kernels: StringToNumber, AsString, DecodeCSV, DecodeRaw (computed on the
host, see strings.py).

Number parsing follows TensorFlow's safe_strto* functions: surrounding ASCII whitespace is
allowed; integers are decimal with an optional sign and must fit the type; floats are decimal or
hexadecimal (`0x1p3`), `inf`/`infinity`/`nan` in any case, and overflow to ±inf.
"""
from __future__ import annotations

import re
import warnings

import ml_dtypes
import numpy as np

from ...shapes import Shape
from .gpu_host_memory import host_kernel

_WHITESPACE = b" \t\n\v\f\r"
_DECIMAL = re.compile(rb"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_SPECIAL = re.compile(rb"[+-]?(inf|infinity|nan)", re.I)
_NAN_PAYLOAD = re.compile(rb"[+-]?nan\([0-9A-Za-z_]*\)", re.I)
_HEX_FLOAT = re.compile(rb"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)([pP][+-]?\d+)?")
_INTEGER = re.compile(rb"[+-]?\d+")
_INT_RANGES = {np.dtype(t): (np.iinfo(t).min, np.iinfo(t).max) for t in (np.int32, np.int64, np.uint32, np.uint64)}


def _as_bytes(value) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


def parse_number(text: bytes, dtype: np.dtype):
    """The value of `text` as `dtype` (a Python number), or None when TensorFlow rejects it."""
    text = text.strip(_WHITESPACE)
    if dtype.kind == "f":
        if _DECIMAL.fullmatch(text) or _SPECIAL.fullmatch(text):
            value = float(text)
        elif _NAN_PAYLOAD.fullmatch(text):
            value = float("nan")
        elif _HEX_FLOAT.fullmatch(text):
            value = float.fromhex(text.decode())
        else:
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)   # overflow to inf, as strtof
            return dtype.type(value)
    if not _INTEGER.fullmatch(text):
        return None
    value = int(text)
    if dtype.kind == "u" and text.startswith(b"-"):
        return None
    low, high = _INT_RANGES[dtype]
    return value if low <= value <= high else None


@host_kernel("StringToNumber")
def string_to_number(ctx, string_tensor, *, out_type):
    dtype = np.dtype(out_type.numpy)
    flat = string_tensor.reshape(-1).tolist()
    out = np.empty(len(flat), dtype=dtype)
    for i, text in enumerate(flat):
        value = parse_number(_as_bytes(text), dtype)
        if value is None:
            ctx.fail(f"StringToNumberOp could not correctly convert string: {_as_bytes(text).decode('utf-8', 'replace')}")
        out[i] = value
    return out.reshape(string_tensor.shape)


# --- AsString -----------------------------------------------------------------------------------

def _number_format(ctx, kind: str, precision: int, scientific: bool, shortest: bool, width: int,
                   fill: str) -> str:
    """The printf format TensorFlow builds for one element ('%' flags width .precision conv)."""
    if len(fill) > 1:
        ctx.fail(f"Fill string must be one or fewer characters: {fill}")
    if scientific and shortest:
        ctx.fail("Cannot select both scientific and shortest notation")
    if kind != "f" and (scientific or shortest or precision > -1):
        what = "scientific" if scientific else "shortest" if shortest else "precision"
        ctx.fail(f"Cannot select {what} for non-float types" if what != "precision"
                 else "Cannot specify precision for non-float types")
    if fill and fill not in " +-0#":
        ctx.fail(f'Fill argument not supported: "{fill}"')
    spec = "%" + fill
    if width > -1:
        spec += str(width)
    if precision > -1:
        spec += f".{precision}"
    if kind == "f":
        return spec + ("g" if shortest else "e" if scientific else "f")
    return spec + ("s" if kind in "bS" else "d")


@host_kernel("AsString")
def as_string(ctx, input, *, T, precision, scientific, shortest, width, fill):
    dtype = np.dtype(T.numpy) if T.numpy is not None else None
    if dtype is None or T.name == "variant":
        ctx.fail("Type variant is not supported by AsString here")
    kind = "S" if dtype.kind == "O" else "b" if dtype.kind == "b" else \
        "f" if dtype.kind in "fc" or dtype in (ml_dtypes.bfloat16,) else "i"
    spec = _number_format(ctx, kind, precision, scientific, shortest, width, fill)
    flat = input.reshape(-1)
    if kind == "f" and dtype.kind != "c":
        flat = flat.astype(np.float64)   # half, bfloat16 and float print as doubles, as in C
    if dtype.kind == "c":
        texts = [f"({_format_float(spec, v.real)},{_format_float(spec, v.imag)})"
                 for v in flat.astype(np.complex128).tolist()]
    elif kind == "b":   # TensorFlow ignores width and fill for bools
        texts = ["true" if v else "false" for v in flat.tolist()]
    elif kind == "S":
        # printf pads strings by bytes, not characters
        texts = [(spec.encode() % _as_bytes(v)).decode("utf-8", "surrogateescape") for v in flat.tolist()]
    elif kind == "f":
        texts = [_format_float(spec, v) for v in flat.tolist()]
    else:
        texts = [spec % v for v in flat.tolist()]
    out = np.empty(len(texts), dtype=object)
    out[:] = [t.encode("utf-8", "surrogateescape") for t in texts]
    return out.reshape(input.shape)


def _format_float(spec: str, value: float) -> str:
    """printf of one double. C writes a NaN with the sign bit set as "-nan", Python as "nan":
    format -inf instead (same width and flags) and rename it."""
    if value != value and np.signbit(value):
        return (spec % float("-inf")).replace("inf", "nan")
    return spec % value


# --- DecodeRaw ----------------------------------------------------------------------------------

@host_kernel("DecodeRaw")
def decode_raw(ctx, bytes, *, out_type, little_endian):
    dtype = np.dtype(out_type.numpy).newbyteorder("<" if little_endian else ">")
    flat = [_as_bytes(v) for v in bytes.reshape(-1).tolist()]
    size = len(flat[0]) if flat else 0
    if size % dtype.itemsize:
        ctx.fail(f"Input to DecodeRaw has length {size} that is not a multiple of {dtype.itemsize}, "
                 f"the size of {out_type.name}")
    for i, text in enumerate(flat):
        if len(text) != size:
            ctx.fail(f"DecodeRaw requires input strings to all be the same size, but element {i} has size "
                     f"{len(text)} != {size}")
    count = size // dtype.itemsize
    values = np.frombuffer(b"".join(flat), dtype=dtype).astype(dtype.newbyteorder("="))
    return values.reshape(*bytes.shape, count)


# --- DecodeCSV ----------------------------------------------------------------------------------

def _csv_fields(ctx, record: bytes, delim: bytes, use_quote: bool, index: int) -> list[bytes]:
    """The fields of one record: quoted fields may hold the delimiter and "" for a quote."""
    fields: list[bytes] = []
    at, size = 0, len(record)
    if not record:
        return fields   # an empty line has no fields at all (TensorFlow's count is 0)
    while True:
        if use_quote and record[at:at + 1] == b'"':
            value, at = bytearray(), at + 1
            while True:
                if at >= size:
                    ctx.fail(f"Quoted field has to end with quote followed by delim or end, "
                             f"record {index}: {record.decode('utf-8', 'replace')}")
                if record[at:at + 1] == b'"':
                    if record[at + 1:at + 2] == b'"':
                        value += b'"'
                        at += 2
                        continue
                    at += 1
                    break
                value += record[at:at + 1]
                at += 1
            if at < size and record[at:at + 1] != delim:
                ctx.fail(f"Quote inside a string has to be escaped by another quote, "
                         f"record {index}: {record.decode('utf-8', 'replace')}")
            fields.append(bytes(value))
        else:
            end = record.find(delim, at)
            end = size if end < 0 else end
            field = record[at:end]
            if use_quote and b'"' in field:
                ctx.fail(f"Unquoted fields cannot have quotes inside, record {index}: "
                         f"{record.decode('utf-8', 'replace')}")
            fields.append(field)
            at = end
        if at >= size:
            return fields
        at += 1   # the delimiter
        if at == size:
            fields.append(b"")
            return fields


@host_kernel("DecodeCSV")
def decode_csv(ctx, records, *record_defaults, OUT_TYPE, field_delim, use_quote_delim, na_value, select_cols):
    delim, na = _as_bytes(field_delim), _as_bytes(na_value)
    if len(delim) != 1:
        ctx.fail("field_delim should be only 1 char")
    if select_cols and any(b <= a for a, b in zip(select_cols, select_cols[1:])):
        ctx.fail("select_cols is not strictly increasing.")
    if select_cols and select_cols[0] < 0:
        ctx.fail("select_cols contains negative values.")
    if select_cols and len(select_cols) != len(record_defaults):
        ctx.fail("Length of select_cols and record_defaults do not match.")
    for i, default in enumerate(record_defaults):
        if default.ndim > 1 or default.size > 1:
            ctx.fail(f"Each record default should be at most rank 1 with at most one element, "
                     f"default {i} has shape {Shape(default.shape)}")
    wanted = select_cols or list(range(len(record_defaults)))
    flat = records.reshape(-1).tolist()
    columns = [[] for _ in record_defaults]
    for r, record in enumerate(flat):
        fields = _csv_fields(ctx, _as_bytes(record), delim, use_quote_delim, r)
        if (select_cols and len(fields) <= wanted[-1]) or (not select_cols and len(fields) != len(record_defaults)):
            ctx.fail(f"Expect {len(record_defaults)} fields but have {len(fields)} in record {r}")
        for c, column in enumerate(wanted):
            columns[c].append(_csv_value(ctx, fields[column], record_defaults[c], OUT_TYPE[c], na, c, r))
    outputs = []
    for c, values in enumerate(columns):
        out = np.empty(len(values), dtype=OUT_TYPE[c].numpy)
        out[:] = values
        outputs.append(out.reshape(records.shape))
    return tuple(outputs)


_CSV_TYPE_NAMES = {"float32": "float", "float64": "double"}   # TensorFlow's wording


def _csv_value(ctx, field: bytes, default, dtype, na: bytes, column: int, record: int):
    if not field or field == na:
        if default.size == 0:
            ctx.fail(f"Field {column} is required but missing in record {record}!")
        value = default.reshape(-1)[0]
        return _as_bytes(value) if dtype.name == "string" else value
    if dtype.name == "string":
        return field
    value = parse_number(field, np.dtype(dtype.numpy))
    if value is None:
        ctx.fail(f"Field {column} in record {record} is not a valid {_CSV_TYPE_NAMES.get(dtype.name, dtype.name)}: "
                 f"{field.decode('utf-8', 'replace')}")
    return value
