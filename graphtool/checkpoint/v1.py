"""TensorFlow's V1 checkpoint format: what the legacy Save and SaveSlices ops write (one file) and
Restore, RestoreSlice and RestoreV2's fallback read (every file matching a pattern).

A V1 checkpoint file is a sorted string table (table.py) of SavedTensorSlices protos:

- under "" the metadata: every tensor's name, full shape, dtype and the slices saved of it
  (a whole tensor is one slice of empty extents), in name order, and versions (producer 1);
- under each slice's key (slices.slice_key: the same ordered code a bundle's partitioned
  tensors use) a SavedSlice: name, slice, and the values in a TensorProto's typed fields
  (float_val, int_val, half_val bits, scomplex_val pairs, string_val, ...; no dtype or shape).

TensorFlow saves the tensors sorted by name and refuses dtypes without a typed field (uint32,
uint64: "Tensor slice serialization not implemented for dtype N"; bfloat16 "not yet supported").
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

import numpy as np

from .. import dtypes
from ..proto.saved_tensor_slice_pb2 import SavedSliceMeta, SavedTensorSlices
from ..proto.tensor_pb2 import TensorProto
from ..proto.tensor_slice_pb2 import TensorSliceProto
from ..tensor import _VALUE_FIELD, _set_typed_values, _typed_values
from .errors import CheckpointError
from .slices import copy_overlap, parse_slice_spec, part_overlap, proto_extents, slice_key
from .table import read_table
from .table_writer import write_table
from .files import read_checkpoint_file
from .writer import dtype_of, write_atomically

CHECKPOINT_VERSION = 1           # TF_CHECKPOINT_VERSION
_META_KEY = b""
# The dtypes TensorFlow's TensorSliceWriter stores (saved_tensor_slice_util.h).
SAVABLE = {dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint8, dtypes.int16, dtypes.int8, dtypes.int64,
           dtypes.complex64, dtypes.complex128, dtypes.bool_, dtypes.float16, dtypes.string, dtypes.uint16,
           dtypes.from_name("qint8"), dtypes.from_name("quint8"), dtypes.from_name("qint32")}


def _slice_proto(extents: list[tuple[int, int]] | None, texts: list[str] | None, rank: int) -> TensorSliceProto:
    """A TensorSliceProto: every extent present, a whole dimension ('-' or a whole tensor) empty."""
    proto = TensorSliceProto()
    proto.SetInParent()
    for d in range(rank):
        extent = proto.extent.add()
        if extents is not None and texts is not None and texts[d] != "-":
            extent.start, extent.length = extents[d]
    return proto


def _values_proto(array: np.ndarray, dtype: dtypes.DType) -> TensorProto:
    proto = TensorProto()
    flat = array.reshape(-1)
    if dtype is dtypes.string:
        proto.string_val.extend(bytes(v) if not isinstance(v, str) else v.encode() for v in flat)
    elif flat.size:
        _set_typed_values(proto, dtype, flat)
    return proto


class V1Writer:
    """Collect whole tensors (`add`) and slices (`add_slice`); `finish()` writes the file."""

    def __init__(self, filename: str | os.PathLike):
        self.filename = os.fspath(filename)
        self.items: list[tuple[str, tuple[int, ...], str, np.ndarray]] = []

    def add(self, name: str, value) -> None:
        array = np.asarray(value)
        self.items.append((name, array.shape, "", array))

    def add_slice(self, name: str, full_shape, spec: str, value) -> None:
        self.items.append((name, tuple(full_shape), spec, np.asarray(value)))

    def finish(self) -> None:
        metas: dict[str, SavedSliceMeta] = {}
        records: list[tuple[bytes, bytes]] = []
        # Sorted by name (stable: slices of one name keep their order), as TF's SaveTensors does.
        for name, full_shape, spec, array in sorted(self.items, key=lambda item: item[0]):
            where = f"{self.filename}: tensor '{name}'"
            if not name:
                raise CheckpointError(f"{self.filename}: a tensor cannot be saved under the empty name")
            dtype = dtype_of(array)
            if dtype is dtypes.bfloat16:
                raise CheckpointError(f"{where}: Saving data type bfloat16 not yet supported")
            if dtype not in SAVABLE:
                raise CheckpointError(f"{where}: Tensor slice serialization not implemented for dtype {dtype.enum} "
                                      f"({dtype.name})")
            if spec:
                shape, extents = parse_slice_spec(spec, where)
                if shape != tuple(full_shape):
                    raise CheckpointError(f"{where}: slice spec '{spec}' is for shape {list(shape)}, "
                                          f"not {list(full_shape)}")
                part = _slice_proto(extents, spec.split()[-1].split(":"), len(shape))
                want = tuple(length for _, length in extents)
            else:
                shape, part, want = tuple(array.shape), _slice_proto(None, None, array.ndim), tuple(array.shape)
            if array.shape != want:
                raise CheckpointError(f"{where}: the slice needs a value of shape {list(want)}, "
                                      f"got {list(array.shape)}")
            meta = metas.get(name)
            if meta is None:
                entry = SavedSliceMeta(name=name, type=dtype.enum)
                entry.shape.SetInParent()
                for size in shape:
                    entry.shape.dim.add().size = size
                metas[name] = meta = entry
            elif meta.type != dtype.enum or tuple(d.size for d in meta.shape.dim) != shape:
                raise CheckpointError(f"{where}: saved twice with different dtypes or shapes")
            new = proto_extents(part, shape)
            for old in meta.slice:
                if all(max(s, os_) < min(s + l, os_ + ol) or (l == 0 and ol == 0)
                       for (s, l), (os_, ol) in zip(new, proto_extents(old, shape))):
                    raise CheckpointError(f"{where}: slice {[list(e) for e in new]} overlaps one saved before")
            meta.slice.add().CopyFrom(part)
            record = SavedTensorSlices()
            record.data.name = name
            record.data.slice.CopyFrom(part)
            record.data.data.CopyFrom(_values_proto(array, dtype))
            records.append((slice_key(name, part), record.SerializeToString(deterministic=True)))
        header = SavedTensorSlices()
        header.meta.SetInParent()
        for name in sorted(metas):
            header.meta.tensor.add().CopyFrom(metas[name])
        header.meta.versions.producer = CHECKPOINT_VERSION
        table = write_table([(_META_KEY, header.SerializeToString(deterministic=True))] + sorted(records))
        directory = os.path.dirname(self.filename)
        if directory and not os.path.isdir(directory):
            raise CheckpointError(f"{self.filename}: no such directory {directory}")
        write_atomically(self.filename, table)


@dataclass
class _Stored:
    dtype: dtypes.DType
    shape: tuple[int, ...]
    parts: list[tuple[TensorSliceProto, str, bytes]] = field(default_factory=list)   # slice, file, key


class V1Reader:
    """The tensors of every V1 checkpoint file matching `pattern` (a glob, as TF's Env matches)."""

    def __init__(self, pattern: str | os.PathLike):
        self.pattern = os.fspath(pattern)
        files = sorted(path for path in glob.glob(self.pattern) if os.path.isfile(path))
        if not files:
            raise CheckpointError(f"Unsuccessful TensorSliceReader constructor: Failed to find any matching files "
                                  f"for {self.pattern}")
        self.tensors: dict[str, _Stored] = {}
        self.records: dict[tuple[str, bytes], bytes] = {}
        for path in files:
            self._load(path)

    def _load(self, path: str) -> None:
        entries = read_table(read_checkpoint_file(path), path)
        if not entries or entries[0][0] != _META_KEY:
            raise CheckpointError(f"{path}: no metadata entry (not a V1 checkpoint)")
        header = _parse(entries[0][1], path, "the metadata")
        for meta in header.meta.tensor:
            try:
                dtype = dtypes.from_enum(meta.type)
            except Exception:
                raise CheckpointError(f"{path}: tensor '{meta.name}' has unknown dtype enum {meta.type}") from None
            shape = tuple(d.size for d in meta.shape.dim)
            stored = self.tensors.setdefault(meta.name, _Stored(dtype, shape))
            if stored.dtype is not dtype or stored.shape != shape:
                raise CheckpointError(f"{path}: tensor '{meta.name}' differs in dtype or shape from another file "
                                      f"matching {self.pattern}")
            for part in meta.slice:
                stored.parts.append((part, path, slice_key(meta.name, part)))
        for key, value in entries[1:]:
            self.records[(path, key)] = value

    def __contains__(self, name: str) -> bool:
        return name in self.tensors

    def dtype(self, name: str) -> dtypes.DType:
        return self._stored(name).dtype

    def shape(self, name: str) -> tuple[int, ...]:
        return self._stored(name).shape

    def _stored(self, name: str) -> _Stored:
        try:
            return self.tensors[name]
        except KeyError:
            raise CheckpointError(f'Tensor name "{name}" not found in checkpoint files {self.pattern}') from None

    def read(self, name: str, spec: str = "") -> np.ndarray:
        """The whole tensor, or the slice `spec` asks for ("d0 d1 ... start,len:-...")."""
        stored = self._stored(name)
        if spec:
            shape, wanted = parse_slice_spec(spec, f"tensor '{name}'")
            if shape != stored.shape:
                raise CheckpointError(f"Shape in shape_and_slice spec does not match the shape in the save file: "
                                      f"{_dims(shape)}, save file shape: {_dims(stored.shape)}")
        else:
            wanted = [(0, d) for d in stored.shape]
        out = np.empty([length for _, length in wanted], dtype=stored.dtype.numpy)
        covered = np.zeros(out.shape, dtype=bool)
        for part, path, key in stored.parts:
            extents = proto_extents(part, stored.shape)
            overlap = part_overlap(extents, wanted, out.size)
            if overlap is None:
                continue
            value = self._values(name, path, key, stored.dtype, tuple(length for _, length in extents))
            copy_overlap(out, covered, value, extents, wanted, overlap)
        if not covered.all():
            raise CheckpointError(f"Error copying slice data: the saved slices of tensor '{name}' do not cover "
                                  f"{[list(w) for w in wanted]} (checkpoint files {self.pattern})")
        return out

    def _values(self, name: str, path: str, key: bytes, dtype: dtypes.DType, shape: tuple[int, ...]) -> np.ndarray:
        raw = self.records.get((path, key))
        if raw is None:
            raise CheckpointError(f"{path}: a slice of tensor '{name}' is listed but not stored")
        record = _parse(raw, path, f"a slice of tensor '{name}'")
        proto = record.data.data
        count = int(np.prod(shape, dtype=np.int64))
        if dtype is dtypes.string:
            values = np.empty(count, dtype=object)
            if len(proto.string_val) != count:
                raise CheckpointError(f"{path}: a slice of tensor '{name}' holds {len(proto.string_val)} values, "
                                      f"its shape {list(shape)} needs {count}")
            values[:] = list(proto.string_val)
            return values.reshape(shape)
        field_name = _VALUE_FIELD[dtype]
        stored = len(getattr(proto, field_name)) // (2 if field_name in ("scomplex_val", "dcomplex_val") else 1)
        if stored != count:
            raise CheckpointError(f"{path}: a slice of tensor '{name}' holds {stored} values, its shape "
                                  f"{list(shape)} needs {count}")
        flat = _typed_values(proto, dtype, f"{path}: tensor '{name}'") if count else np.empty(0, dtype.numpy)
        return np.asarray(flat, dtype=dtype.numpy).reshape(shape)


def _dims(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _parse(data: bytes, source: str, what: str) -> SavedTensorSlices:
    message = SavedTensorSlices()
    try:
        message.ParseFromString(data)
    except Exception:
        raise CheckpointError(f"{source}: cannot parse {what} (corrupt V1 checkpoint)") from None
    return message


def is_v1_checkpoint(pattern: str) -> bool:
    """Whether some file matching `pattern` exists (RestoreV2 falls back to V1 when no .index)."""
    return any(os.path.isfile(p) for p in glob.glob(pattern))


__all__ = ["V1Reader", "V1Writer", "is_v1_checkpoint", "read_checkpoint_file"]
