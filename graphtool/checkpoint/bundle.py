"""Reading TensorFlow tensor bundles: `PREFIX.index` plus `PREFIX.data-SSSSS-of-NNNNN` shards.

The index is a sorted string table (table.py). Its first entry, under the empty key, is a
BundleHeaderProto (num_shards, endianness, format version); every other key names a tensor and
holds a BundleEntryProto: dtype, shape, which data shard, the byte range in it, and the masked
CRC-32C of those bytes. A tensor's bytes are its raw little-endian elements, except strings:

    [varint64 length of each element] [fixed32 masked crc of the lengths] [the element bytes]

where the checksum covers each length as a uint32 (a uint64 when it does not fit), the stored
length checksum itself and the bytes. Partitioned variables are stored as slices (slices.py):
`read` assembles the whole tensor, `read_slice` the part a restore asks for.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import dtypes
from ..proto.tensor_bundle_pb2 import BundleEntryProto, BundleHeaderProto
from ..proto.tensor_slice_pb2 import TensorSliceProto
from .crc import crc32c, unmask
from .errors import CheckpointError
from .slices import copy_overlap, parse_slice_spec, part_overlap, proto_extents, slice_key
from .table import read_table, read_varint

HEADER_KEY = b""
# The newest bundle format version this reader understands (TensorFlow writes producer 1).
FORMAT_VERSION = 1


def index_filename(prefix: str | os.PathLike) -> str:
    return f"{os.fspath(prefix)}.index"


def data_filename(prefix: str | os.PathLike, shard: int, num_shards: int) -> str:
    return f"{os.fspath(prefix)}.data-{shard:05d}-of-{num_shards:05d}"


@dataclass(frozen=True)
class BundleEntry:
    """What the index says about one tensor."""

    key: str
    dtype: dtypes.DType
    shape: tuple[int, ...]
    shard_id: int
    offset: int
    size: int
    crc32c: int                       # as stored (masked)
    slices: tuple[TensorSliceProto, ...] = ()


class BundleReader:
    """Open a bundle by prefix (`.../variables/variables`) and read its tensors as numpy arrays.

        reader = BundleReader("model/variables/variables")
        reader.keys()                 # tensor names, sorted
        reader.read("dense/kernel/.ATTRIBUTES/VARIABLE_VALUE")

    Every problem raises CheckpointError (exit 3) naming the file: a missing or truncated index,
    bad magic, a checksum mismatch in the index or in a tensor's bytes, a missing data shard.
    """

    def __init__(self, prefix: str | os.PathLike):
        self.prefix = os.fspath(prefix)
        self.index_path = index_filename(prefix)
        from ..graph_io import read_bounded  # here: graph_io imports this package (formats -> crc)

        try:
            with open(self.index_path, "rb") as handle:  # bounded: it may be a link to /dev/zero
                data = read_bounded(handle, self.index_path)
        except FileNotFoundError:
            raise CheckpointError(f"{self.index_path}: no such file (the bundle's index)") from None
        except OSError as exc:
            raise CheckpointError(f"{self.index_path}: cannot read ({exc.strerror or exc})") from None
        records = read_table(data, self.index_path)
        if not records or records[0][0] != HEADER_KEY:
            raise CheckpointError(f"{self.index_path}: no bundle header entry (not a tensor bundle index)")
        self.header = _parse(BundleHeaderProto, records[0][1], self.index_path, "the header")
        if self.header.num_shards < 1:
            raise CheckpointError(f"{self.index_path}: header says {self.header.num_shards} data shards")
        if self.header.version.min_consumer > FORMAT_VERSION:
            raise CheckpointError(f"{self.index_path}: bundle format version {self.header.version.producer} "
                                  f"needs a reader of version {self.header.version.min_consumer}; "
                                  f"this one reads version {FORMAT_VERSION}")
        self.big_endian = self.header.endianness == BundleHeaderProto.BIG
        self.entries: dict[str, BundleEntry] = {}
        for raw_key, value in records[1:]:
            # Slice keys are binary (slices.py); surrogateescape keeps them distinct and reversible.
            key = raw_key.decode("utf-8", errors="surrogateescape")
            self.entries[key] = self._entry(key, _parse(BundleEntryProto, value, self.index_path, f"entry '{key}'"))

    @property
    def num_shards(self) -> int:
        return self.header.num_shards

    def keys(self) -> list[str]:
        return list(self.entries)

    def __contains__(self, key: str) -> bool:
        return key in self.entries

    def entry(self, key: str) -> BundleEntry:
        try:
            return self.entries[key]
        except KeyError:
            raise CheckpointError(f"{self.index_path}: no tensor '{key}' in the bundle") from None

    def read(self, key: str) -> np.ndarray:
        """The tensor stored under `key`, its checksum verified (a partitioned one assembled)."""
        entry = self.entry(key)
        if entry.slices:
            return self._assemble(entry, [(0, d) for d in entry.shape])
        return self._read_entry(entry)

    def read_slice(self, key: str, spec: str = "") -> np.ndarray:
        """Part of a tensor, as RestoreV2's shape_and_slices asks for it ('' for all of it;
        else "d0 d1 ... start,length:...", '-' for a whole dimension)."""
        if not spec:
            return self.read(key)
        entry = self.entry(key)
        shape, extents = parse_slice_spec(spec, f"{self.index_path}: tensor '{key}'")
        if shape != entry.shape:
            raise CheckpointError(f"{self.index_path}: tensor '{key}' has shape {list(entry.shape)}, the restore "
                                  f"asks for a slice of shape {list(shape)}")
        if entry.slices:
            return self._assemble(entry, extents)
        whole = self._read_entry(entry)
        return whole[tuple(slice(start, start + length) for start, length in extents)]

    def _read_entry(self, entry: BundleEntry) -> np.ndarray:
        key = entry.key
        path = data_filename(self.prefix, entry.shard_id, self.num_shards)
        raw = self._read_bytes(path, entry)
        count = int(np.prod(entry.shape, dtype=np.int64))
        if entry.dtype is dtypes.string:
            return self._decode_strings(raw, count, entry, path).reshape(entry.shape)
        actual = crc32c(raw)
        if actual != unmask(entry.crc32c):
            raise CheckpointError(f"{path}: checksum mismatch for tensor '{key}' (stored "
                                  f"{unmask(entry.crc32c):#010x}, computed {actual:#010x}): the file is corrupt")
        numpy_dtype = entry.dtype.numpy_dtype
        storage = numpy_dtype.newbyteorder(">" if self.big_endian else "<") if numpy_dtype.itemsize > 1 else numpy_dtype
        return np.frombuffer(raw, dtype=storage).astype(numpy_dtype).reshape(entry.shape)

    def _assemble(self, entry: BundleEntry, wanted: list[tuple[int, int]]) -> np.ndarray:
        """The region `wanted` ((start, length) per dim) of a partitioned tensor, copied from the
        stored parts it overlaps; every element must be covered by some part."""
        out = np.empty([length for _, length in wanted], dtype=entry.dtype.numpy)
        covered = np.zeros(out.shape, dtype=bool)
        for part in entry.slices:
            extents = proto_extents(part, entry.shape)
            overlap = part_overlap(extents, wanted, out.size)
            if overlap is None:
                continue
            part_key = slice_key(entry.key, part).decode("utf-8", errors="surrogateescape")
            if part_key not in self.entries:
                raise CheckpointError(f"{self.index_path}: part {[list(e) for e in extents]} of tensor "
                                      f"'{entry.key}' is listed but not stored")
            copy_overlap(out, covered, self._read_entry(self.entries[part_key]), extents, wanted, overlap)
        if not covered.all():
            raise CheckpointError(f"{self.index_path}: the stored parts of tensor '{entry.key}' do not cover "
                                  f"the slice {[list(w) for w in wanted]}")
        return out

    def read_all(self) -> dict[str, np.ndarray]:
        """Every tensor by key (partitioned ones assembled; their parts' own keys left out)."""
        parts = {slice_key(e.key, p).decode("utf-8", errors="surrogateescape")
                 for e in self.entries.values() for p in e.slices}
        return {key: self.read(key) for key in self.entries if key not in parts}

    # --- internals ------------------------------------------------------------------------------
    def _entry(self, key: str, proto: BundleEntryProto) -> BundleEntry:
        where = f"{self.index_path}: tensor '{key}'"
        try:
            dtype = dtypes.from_enum(proto.dtype)
        except Exception:
            raise CheckpointError(f"{where} has unknown dtype enum {proto.dtype}") from None
        if proto.shape.unknown_rank or any(d.size < 0 for d in proto.shape.dim):
            raise CheckpointError(f"{where} has an invalid shape")
        shape = tuple(d.size for d in proto.shape.dim)
        if not proto.slices:
            if dtype.numpy is None or dtype is dtypes.variant or dtype is dtypes.resource:
                raise CheckpointError(f"{where} has dtype {dtype}, which cannot be read")
            if not 0 <= proto.shard_id < self.num_shards:
                raise CheckpointError(f"{where} is in data shard {proto.shard_id}, but the bundle has "
                                      f"{self.num_shards}")
            if dtype is not dtypes.string:
                want = int(np.prod(shape, dtype=np.int64)) * dtype.numpy.itemsize
                if proto.size != want:
                    raise CheckpointError(f"{where} has {proto.size} bytes, shape {list(shape)} of {dtype} "
                                          f"needs {want}")
        return BundleEntry(key, dtype, shape, proto.shard_id, proto.offset, proto.size, proto.crc32c,
                           tuple(proto.slices))

    def _read_bytes(self, path: str, entry: BundleEntry) -> bytes:
        try:
            with open(path, "rb") as handle:
                handle.seek(entry.offset)
                raw = handle.read(entry.size)
        except FileNotFoundError:
            raise CheckpointError(f"{path}: no such file (data shard {entry.shard_id + 1} of "
                                  f"{self.num_shards} of bundle {self.prefix})") from None
        except OSError as exc:
            raise CheckpointError(f"{path}: cannot read ({exc.strerror or exc})") from None
        if len(raw) != entry.size:
            raise CheckpointError(f"{path}: truncated: tensor '{entry.key}' needs bytes "
                                  f"{entry.offset}..{entry.offset + entry.size}, the file has "
                                  f"{entry.offset + len(raw) if raw else os.path.getsize(path)}")
        return raw

    def _decode_strings(self, raw: bytes, count: int, entry: BundleEntry, path: str) -> np.ndarray:
        where = f"tensor '{entry.key}'"
        out = np.empty(count, dtype=object)
        if entry.size == 0:
            out[:] = b""
            return out
        lengths, pos, crc = [], 0, 0
        order = ">" if self.big_endian else "<"
        for _ in range(count):
            length, pos = read_varint(raw, pos, len(raw), f"string lengths of {where}", path)
            lengths.append(length)
            # The checksum covers the lengths as the writing machine held them in memory.
            crc = crc32c(struct.pack(order + ("I" if length <= 0xFFFFFFFF else "Q"), length), crc)
        if pos + 4 > len(raw):
            raise CheckpointError(f"{path}: corrupt {where} (string lengths run past its bytes)")
        stored_lengths_crc = raw[pos:pos + 4]
        if unmask(struct.unpack(order + "I", stored_lengths_crc)[0]) != crc:
            raise CheckpointError(f"{path}: checksum mismatch in the string lengths of {where}: the file is corrupt")
        crc = crc32c(stored_lengths_crc, crc)
        pos += 4
        if pos + sum(lengths) != len(raw):
            raise CheckpointError(f"{path}: corrupt {where} (string bytes do not add up to its size)")
        for i, length in enumerate(lengths):
            out[i] = raw[pos:pos + length]
            pos += length
        crc = crc32c(raw[pos - sum(lengths):pos], crc)
        if crc != unmask(entry.crc32c):
            raise CheckpointError(f"{path}: checksum mismatch for tensor '{entry.key}': the file is corrupt")
        return out


def _parse(message_type, data: bytes, source: str, what: str):
    message = message_type()
    try:
        message.ParseFromString(data)
    except Exception:
        raise CheckpointError(f"{source}: cannot parse {what} (corrupt index)") from None
    return message


__all__ = ["BundleEntry", "BundleReader", "CheckpointError", "data_filename", "index_filename"]
