"""Writing TensorFlow tensor bundles (what bundle.py reads), as TensorFlow's BundleWriter does:

    writer = BundleWriter("ckpt/model.ckpt-100")
    writer.add("dense/kernel", array)
    writer.add_slice("emb", (10, 4), "10 4 0,5:-", part)      # a part of a partitioned variable
    writer.finish()       # PREFIX.data-00000-of-00001, then PREFIX.index

Tensors go to one data shard in the order added (little-endian elements; strings as TF stores
them: varint64 lengths, the masked CRC-32C of the lengths, the bytes). The index is a table of a
BundleHeaderProto under "" and one BundleEntryProto per key (dtype, shape, shard, offset, size,
masked CRC-32C). Both files are written under temporary names and renamed into place when
complete (the data shard first, the index last), so a crash never leaves a half-written bundle
that a reader would take for a checkpoint.

`merge_bundles(prefixes, dest)` is MergeV2Checkpoints: one index over the shards of several
single-shard bundles, their data files renamed to dest's shard names.
"""
from __future__ import annotations

import os
import struct
import uuid

import numpy as np

from .. import dtypes
from ..proto.tensor_bundle_pb2 import BundleEntryProto, BundleHeaderProto
from ..proto.tensor_slice_pb2 import TensorSliceProto
from .bundle import HEADER_KEY, BundleReader, data_filename, index_filename
from .crc import crc32c, mask
from .errors import CheckpointError
from .files import read_checkpoint_file
from .slices import parse_slice_spec, slice_key
from .table import read_table
from .table_writer import varint, write_table

# TensorFlow's kTensorBundleVersion / kTensorBundleMinConsumer.
PRODUCER_VERSION = 1
MIN_CONSUMER_VERSION = 0


def temp_name(path: str) -> str:
    """A unique name next to `path` for writing it (TF: `<path>.tempstate<random>`)."""
    return f"{path}.tempstate{uuid.uuid4().int & ((1 << 63) - 1)}"


def write_atomically(path: str, data: bytes) -> None:
    """Write `data` to `path` through a temporary file renamed into place."""
    tmp = temp_name(path)
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        _remove_quietly(tmp)
        raise CheckpointError(f"{path}: cannot write ({exc.strerror or exc})") from None


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def tensor_bytes(array: np.ndarray) -> tuple[bytes, int]:
    """(the bytes TF stores for `array`, their unmasked CRC-32C)."""
    if array.dtype == object or array.dtype.kind in "SU":
        return _string_bytes(array)
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    raw = np.ascontiguousarray(array).tobytes()
    return raw, crc32c(raw)


def _string_bytes(array: np.ndarray) -> tuple[bytes, int]:
    items = [_as_bytes(item) for item in array.reshape(-1)]
    if not items:
        return b"", 0
    lengths = b"".join(varint(len(item)) for item in items)
    crc = 0
    for item in items:
        crc = crc32c(struct.pack("<I" if len(item) <= 0xFFFFFFFF else "<Q", len(item)), crc)
    lengths_crc = struct.pack("<I", mask(crc))
    body = b"".join(items)
    crc = crc32c(body, crc32c(lengths_crc, crc))
    return lengths + lengths_crc + body, crc


def _as_bytes(item) -> bytes:
    if isinstance(item, bytes):
        return item
    if isinstance(item, str):
        return item.encode("utf-8")
    if isinstance(item, (bytearray, memoryview, np.bytes_)):
        return bytes(item)
    raise CheckpointError(f"a string tensor holds a {type(item).__name__}, not bytes")


def dtype_of(array: np.ndarray) -> dtypes.DType:
    if array.dtype == object or array.dtype.kind in "SU":
        return dtypes.string
    try:
        return dtypes.from_numpy(array.dtype)
    except Exception:
        raise CheckpointError(f"cannot store a tensor of numpy dtype {array.dtype} in a checkpoint") from None


def _shape_proto(proto, shape) -> None:
    proto.SetInParent()                        # TF writes `shape {}` for a scalar
    for size in shape:
        proto.dim.add().size = int(size)


class BundleWriter:
    """Collects tensors for one bundle shard; nothing appears under `prefix` before finish()."""

    def __init__(self, prefix: str | os.PathLike, shard: int = 0, num_shards: int = 1):
        self.prefix = os.fspath(prefix)
        self.shard, self.num_shards = shard, num_shards
        self.data = bytearray()
        self.entries: dict[bytes, BundleEntryProto] = {}
        # Partitioned tensors: full key -> its entry (dtype, full shape, the parts' TensorSliceProtos).
        self.full_entries: dict[bytes, BundleEntryProto] = {}
        self.finished = False

    def _key(self, key: str) -> bytes:
        if not key:
            raise CheckpointError(f"{self.prefix}: a tensor cannot be saved under the empty name")
        return key.encode("utf-8", "surrogateescape")

    def _store(self, key: bytes, array: np.ndarray, shown: str) -> None:
        if key in self.entries or key in self.full_entries:
            raise CheckpointError(f"{self.prefix}: tensor '{shown}' saved twice")
        dtype = dtype_of(array)
        raw, crc = tensor_bytes(array)
        entry = BundleEntryProto(dtype=dtype.enum, shard_id=self.shard, offset=len(self.data), size=len(raw),
                                 crc32c=mask(crc))
        _shape_proto(entry.shape, array.shape)
        self.data += raw
        self.entries[key] = entry

    def add(self, key: str, value) -> None:
        """Store the whole tensor `value` under `key`."""
        self._store(self._key(key), np.asarray(value), key)

    def add_slice(self, key: str, full_shape, spec: str, value) -> None:
        """Store `value` as the part `spec` ("d0 d1 ... start,len:-..." as SaveV2's
        shape_and_slices) of the tensor `key` of shape `full_shape`."""
        name = self._key(key)
        array = np.asarray(value)
        shape, extents = parse_slice_spec(spec, f"{self.prefix}: tensor '{key}'")
        if tuple(full_shape) != shape:
            raise CheckpointError(f"{self.prefix}: tensor '{key}': slice spec '{spec}' is for shape {list(shape)}, "
                                  f"not {list(full_shape)}")
        if tuple(length for _, length in extents) != array.shape:
            raise CheckpointError(f"{self.prefix}: tensor '{key}': a slice {[list(e) for e in extents]} needs a "
                                  f"value of shape {[l for _, l in extents]}, got {list(array.shape)}")
        part = TensorSliceProto()
        for (start, length), text in zip(extents, spec.split()[-1].split(":")):
            extent = part.extent.add()
            if text == "-":
                continue                                  # a whole dimension: no start, no length
            extent.start = start
            extent.length = length
        full = self.full_entries.get(name)
        dtype = dtype_of(array)
        if full is None:
            if name in self.entries:
                raise CheckpointError(f"{self.prefix}: tensor '{key}' saved whole and in parts")
            full = BundleEntryProto(dtype=dtype.enum)
            _shape_proto(full.shape, shape)
            self.full_entries[name] = full
        elif full.dtype != dtype.enum or tuple(d.size for d in full.shape.dim) != shape:
            raise CheckpointError(f"{self.prefix}: parts of tensor '{key}' disagree on dtype or shape")
        full.slices.append(part)
        self._store(slice_key(key, part), array, f"{key}[{spec}]")

    def finish(self) -> None:
        """Write the data shard, then the index (both atomically)."""
        if self.finished:
            raise CheckpointError(f"{self.prefix}: bundle already written")
        self.finished = True
        _make_directory(os.path.dirname(self.prefix))
        write_atomically(data_filename(self.prefix, self.shard, self.num_shards), bytes(self.data))
        write_atomically(index_filename(self.prefix), index_bytes(
            {**self.entries, **self.full_entries}, self.num_shards))


def _make_directory(directory: str) -> None:
    """Create the directory of a checkpoint and its parents, as TF's writer does."""
    if directory:
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as exc:
            raise CheckpointError(f"{directory}: cannot create the checkpoint directory "
                                  f"({exc.strerror or exc})") from None


def index_bytes(entries: dict[bytes, BundleEntryProto], num_shards: int) -> bytes:
    header = BundleHeaderProto(num_shards=num_shards, endianness=BundleHeaderProto.LITTLE)
    header.version.producer = PRODUCER_VERSION
    header.version.min_consumer = MIN_CONSUMER_VERSION
    records = [(HEADER_KEY, header.SerializeToString(deterministic=True))]
    records += [(key, entries[key].SerializeToString(deterministic=True)) for key in sorted(entries)]
    return write_table(records)


def write_bundle(prefix: str | os.PathLike, tensors: dict[str, object]) -> None:
    """Write every tensor of `tensors` (name -> array) as the bundle `prefix`."""
    writer = BundleWriter(prefix)
    for key, value in tensors.items():
        writer.add(key, value)
    writer.finish()


def merge_bundles(prefixes: list[str], dest: str, delete_old_dirs: bool = True,
                  allow_missing_files: bool = False) -> None:
    """MergeV2Checkpoints: the bundles `prefixes` (each one shard, as SaveV2 writes them) become the
    bundle `dest` of len(prefixes) shards; their index files are removed, and their directories
    too when `delete_old_dirs` and they are then empty."""
    readers: list[tuple[str, BundleReader]] = []
    for prefix in prefixes:
        if allow_missing_files and not os.path.exists(index_filename(prefix)):
            continue
        readers.append((prefix, BundleReader(prefix)))
    if not readers:
        raise CheckpointError(f"{dest}: no checkpoint to merge (none of {', '.join(prefixes)} exists)")
    total = sum(reader.num_shards for _, reader in readers)
    entries: dict[bytes, BundleEntryProto] = {}
    renames: list[tuple[str, str]] = []
    shard_base = 0
    for prefix, reader in readers:
        # The raw protos, to renumber their shards.
        records = read_table(read_checkpoint_file(reader.index_path), reader.index_path)
        for raw_key, value in records[1:]:
            entry = BundleEntryProto()
            entry.ParseFromString(value)
            if raw_key in entries:
                existing = entries[raw_key]
                if not entry.slices or not existing.slices:
                    raise CheckpointError(f"{reader.index_path}: tensor '{raw_key.decode('utf-8', 'replace')}' is "
                                          f"also in another checkpoint being merged into {dest}")
                existing.slices.extend(entry.slices)     # parts of one partitioned variable
                continue
            if not entry.slices:
                entry.shard_id += shard_base
            entries[raw_key] = entry
        for shard in range(reader.num_shards):
            renames.append((data_filename(prefix, shard, reader.num_shards),
                            data_filename(dest, shard_base + shard, total)))
        shard_base += reader.num_shards
    _make_directory(os.path.dirname(dest))
    for source, target in renames:
        if os.path.abspath(source) != os.path.abspath(target):
            try:
                os.replace(source, target)
            except OSError as exc:
                raise CheckpointError(f"{source}: cannot move to {target} ({exc.strerror or exc})") from None
    write_atomically(index_filename(dest), index_bytes(entries, total))
    for prefix, _ in readers:
        if os.path.abspath(index_filename(prefix)) != os.path.abspath(index_filename(dest)):
            _remove_quietly(index_filename(prefix))
        if delete_old_dirs:
            directory = os.path.dirname(os.path.abspath(prefix))
            if directory != os.path.dirname(os.path.abspath(dest)):
                try:
                    os.rmdir(directory)
                except OSError:
                    pass


__all__ = ["BundleWriter", "merge_bundles", "tensor_bytes", "write_atomically", "write_bundle"]
