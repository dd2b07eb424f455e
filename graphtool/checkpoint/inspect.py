"""What a checkpoint holds, for `dftool inspect CKPT`: its tensors' names, dtypes and shapes.

A checkpoint is named by its prefix (`ckpt/model.ckpt-100`), its `.index` file or one of its
`.data-NNNNN-of-MMMMM` shards. A partitioned tensor is listed once, with its full shape and the
number of parts (the parts' own binary keys are not listed).
"""
from __future__ import annotations

import os
import re

from .bundle import BundleReader, index_filename
from .slices import slice_key

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
    return None


def inspect_checkpoint(prefix: str) -> dict:
    """The report body: the checkpoint, its files and every tensor (sorted by name)."""
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
        "index_file": reader.index_path,
        "data_files": data_files,
        "tensor_count": len(tensors),
        "total_bytes": sum(t["bytes"] for t in tensors),
        "tensors": tensors,
    }


__all__ = ["checkpoint_prefix", "inspect_checkpoint"]
