"""What a checkpoint holds, for `dftool inspect CKPT`: its tensors' names, dtypes and shapes.

A checkpoint is named by its prefix (`ckpt/model.ckpt-100`), its `.index` file or one of its
`.data-NNNNN-of-MMMMM` shards; a V1 checkpoint (legacy Save ops, Saver(write_version=V1)) by its
one file. A partitioned tensor is listed once, with its full shape and the number of parts (the
parts' own binary keys are not listed).
"""
from __future__ import annotations

import glob
import os
import re
import struct

from ..proto.saved_tensor_slice_pb2 import SavedTensorSlices
from .bundle import BundleReader, index_filename
from .errors import CheckpointError
from .slices import slice_key
from .table import FOOTER_SIZE, MAGIC, read_table
from .files import read_checkpoint_file
from .v1 import V1Reader

_DATA_SUFFIX = re.compile(r"\.data-\d{5}-of-\d{5}$")


def checkpoint_prefix(path: str) -> str | None:
    """The bundle prefix `path` names, or None when it names no checkpoint (then it is a graph)."""
    if path == "-":
        return None
    if path.endswith(".index") and os.path.isfile(path):
        return path[:-len(".index")]
    match = _DATA_SUFFIX.search(path)
    if match and os.path.isfile(path) and os.path.isfile(index_filename(path[:match.start()])):
        return path[:match.start()]
    if not os.path.exists(path) and os.path.isfile(index_filename(path)):
        return path
    if is_v1_file(path):
        return path
    return None


def is_v1_file(path: str) -> bool:
    """Whether `path` is a V1 checkpoint file: a table whose first entry is a SavedTensorSlices
    metadata record."""
    try:
        if not os.path.isfile(path) or os.path.getsize(path) < FOOTER_SIZE:
            return False
        with open(path, "rb") as handle:
            handle.seek(-8, os.SEEK_END)
            if handle.read(8) != struct.pack("<Q", MAGIC):
                return False
        entries = read_table(read_checkpoint_file(path), path)
    except (OSError, CheckpointError):
        return False
    if not entries or entries[0][0] != b"":
        return False
    header = SavedTensorSlices()
    try:
        header.ParseFromString(entries[0][1])
    except Exception:
        return False
    return header.HasField("meta")


def inspect_checkpoint(prefix: str) -> dict:
    """The report body: the checkpoint, its files and every tensor (sorted by name)."""
    if not os.path.exists(index_filename(prefix)) and is_v1_file(prefix):
        return _inspect_v1(prefix)
    reader = BundleReader(prefix)
    parts = {slice_key(e.key, p).decode("utf-8", errors="surrogateescape")
             for e in reader.entries.values() for p in e.slices}
    tensors = []
    for key, entry in reader.entries.items():
        if key in parts:
            continue
        stored = [reader.entries[slice_key(key, p).decode("utf-8", errors="surrogateescape")]
                  for p in entry.slices if slice_key(key, p).decode("utf-8", errors="surrogateescape")
                  in reader.entries]
        tensors.append({
            "name": key,
            "dtype": entry.dtype.name,
            "shape": list(entry.shape),
            "bytes": sum(e.size for e in stored) if entry.slices else entry.size,
            "parts": len(entry.slices),
        })
    data_files = [f"{prefix}.data-{shard:05d}-of-{reader.num_shards:05d}" for shard in range(reader.num_shards)]
    return {
        "checkpoint": prefix,
        "format": "V2",
        "index_file": reader.index_path,
        "data_files": data_files,
        "tensor_count": len(tensors),
        "total_bytes": sum(t["bytes"] for t in tensors),
        "tensors": tensors,
    }


def _inspect_v1(path: str) -> dict:
    reader = V1Reader(glob.escape(path))
    tensors = []
    for name in sorted(reader.tensors):
        stored = reader.tensors[name]
        whole = len(stored.parts) == 1 and all(not e.HasField("length") for e in stored.parts[0][0].extent)
        tensors.append({
            "name": name,
            "dtype": stored.dtype.name,
            "shape": list(stored.shape),
            "bytes": sum(len(reader.records.get((file, key), b"")) for _, file, key in stored.parts),
            "parts": 0 if whole else len(stored.parts),
        })
    return {
        "checkpoint": path,
        "format": "V1",
        "index_file": path,
        "data_files": [],
        "tensor_count": len(tensors),
        "total_bytes": sum(t["bytes"] for t in tensors),
        "tensors": tensors,
    }


__all__ = ["checkpoint_prefix", "inspect_checkpoint", "is_v1_file"]
