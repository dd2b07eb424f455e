"""Kernels of the checkpoint ops (ops/io.py) over TensorFlow tensor bundles (graphtool.checkpoint).

SaveV2 writes one bundle shard `PREFIX.data-00000-of-00001` + `PREFIX.index` (atomically: a save
that fails leaves no checkpoint); a tensor with a non-empty shape_and_slices entry is stored as
that part of a partitioned tensor. RestoreV2 reads each tensor (or the slice asked for), checks
its dtype against the `dtypes` attr, and fails with TensorFlow's "Key ... not found in
checkpoint" when a name is missing. A sharded tf.train.Saver saves each device's variables to
`ShardedFilename(tmp, i, n)` and joins them with MergeV2Checkpoints.

The legacy ops use TensorFlow's V1 format (checkpoint/v1.py: one table of slices per file): Save
and SaveSlices write one file, Restore and RestoreSlice read the files matching a pattern, and
RestoreV2 reads a V1 checkpoint when the prefix has no `.index` (as TF's RestoreV2 falls back).

The ops run from host memory (strings), as in TensorFlow: on a GPU their device inputs are
copied to the host.
"""
from __future__ import annotations

import os

import numpy as np

from ...checkpoint import BundleReader, CheckpointError, index_filename
from ...checkpoint.v1 import V1Reader, V1Writer, is_v1_checkpoint
from ...checkpoint.writer import BundleWriter, merge_bundles
from .gpu_host_memory import host_kernel
from .registry import KernelError
from .strings import as_bytes


def _text(value) -> str:
    return as_bytes(value).decode("utf-8", "surrogateescape")


def _scalar_string(ctx, tensor, what: str) -> str:
    array = np.asarray(tensor, dtype=object)
    if array.ndim != 0:
        ctx.fail(f"Input {what} should be a single string tensor (scalar), got shape {list(array.shape)}")
    return _text(array[()])


def _string_list(ctx, tensor, what: str, count: int) -> list[str]:
    array = np.asarray(tensor, dtype=object)
    if array.ndim != 1 or array.shape[0] != count:
        ctx.fail(f"Input {what} should have {count} elements (one per tensor), got shape {list(array.shape)}")
    return [_text(item) for item in array.tolist()]


def _value(ctx, tensor, name: str) -> np.ndarray:
    """A tensor to save as a host numpy array (a ref input may be an uninitialized variable's
    marker: turning it into an array raises TF's "Attempting to use uninitialized value")."""
    if hasattr(tensor, "get") and not isinstance(tensor, np.ndarray):
        tensor = tensor.get()
    array = np.asarray(tensor)
    if array.dtype == object and array.size and not all(isinstance(v, (bytes, str)) for v in array.reshape(-1)):
        ctx.fail(f"tensor '{name}' holds values that cannot be saved (a resource or variant)")
    return array


@host_kernel("SaveV2")
def save_v2(ctx, prefix, tensor_names, shape_and_slices, *tensors, dtypes):
    path = _scalar_string(ctx, prefix, "prefix")
    names = _string_list(ctx, tensor_names, "tensor_names", len(tensors))
    specs = _string_list(ctx, shape_and_slices, "shape_and_slices", len(tensors))
    writer = BundleWriter(path)
    try:
        for name, spec, tensor in zip(names, specs, tensors):
            value = _value(ctx, tensor, name)
            if spec:
                full_shape = tuple(int(d) for d in spec.split()[:-1])
                writer.add_slice(name, full_shape, spec, value)
            else:
                writer.add(name, value)
        writer.finish()
    except CheckpointError as exc:
        ctx.fail(str(exc))
    return ()


def _open(ctx, path: str) -> BundleReader:
    if not os.path.exists(index_filename(path)):
        ctx.fail(f"Unsuccessful TensorSliceReader constructor: Failed to find any matching files for {path} "
                 f"(no {index_filename(path)})")
    try:
        return BundleReader(path)
    except CheckpointError as exc:
        raise KernelError(str(exc)) from None


@host_kernel("RestoreV2")
def restore_v2(ctx, prefix, tensor_names, shape_and_slices, *, dtypes):
    path = _scalar_string(ctx, prefix, "prefix")
    names = _string_list(ctx, tensor_names, "tensor_names", len(dtypes))
    specs = _string_list(ctx, shape_and_slices, "shape_and_slices", len(dtypes))
    if not os.path.exists(index_filename(path)) and is_v1_checkpoint(path):
        reader_v1 = _open_v1(ctx, path)
        return tuple(_restore_v1(ctx, reader_v1, name, spec, dtype) for name, spec, dtype in zip(names, specs, dtypes))
    reader = _open(ctx, path)
    outputs = []
    for name, spec, dtype in zip(names, specs, dtypes):
        if name not in reader:
            ctx.fail(f"Key {name} not found in checkpoint {path}")
        stored = reader.entry(name).dtype
        if stored is not dtype:
            ctx.fail(f"tensor_name = {name}; expected dtype {dtype.name} does not equal original dtype "
                     f"{stored.name} (checkpoint {path})")
        try:
            value = reader.read_slice(name, spec)
        except CheckpointError as exc:
            ctx.fail(str(exc))
        outputs.append(value)
    return tuple(outputs)


@host_kernel("MergeV2Checkpoints")
def merge_v2_checkpoints(ctx, checkpoint_prefixes, destination_prefix, *, delete_old_dirs, allow_missing_files):
    sources = np.asarray(checkpoint_prefixes, dtype=object)
    if sources.ndim > 1:
        ctx.fail(f"Input checkpoint_prefixes should be a scalar or a vector, got shape {list(sources.shape)}")
    dest = _scalar_string(ctx, destination_prefix, "destination_prefix")
    try:
        merge_bundles([_text(p) for p in sources.reshape(-1).tolist()], dest, delete_old_dirs=delete_old_dirs,
                      allow_missing_files=allow_missing_files)
    except CheckpointError as exc:
        ctx.fail(str(exc))
    return ()


def _int_scalar(ctx, tensor, what: str) -> int:
    array = np.asarray(tensor)
    if array.ndim != 0:
        ctx.fail(f"{what} must be a scalar, got shape {list(array.shape)}")
    return int(array)


def _string_scalar(value: str) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = value.encode("utf-8", "surrogateescape")
    return out


@host_kernel("ShardedFilename")
def sharded_filename(ctx, basename, shard, num_shards):
    base = _scalar_string(ctx, basename, "basename")
    return _string_scalar(f"{base}-{_int_scalar(ctx, shard, 'shard'):05d}-of-"
                          f"{_int_scalar(ctx, num_shards, 'num_shards'):05d}")


@host_kernel("ShardedFilespec")
def sharded_filespec(ctx, basename, num_shards):
    base = _scalar_string(ctx, basename, "basename")
    return _string_scalar(f"{base}-?????-of-{_int_scalar(ctx, num_shards, 'num_shards'):05d}")


# --- the legacy V1 format ---------------------------------------------------------------------

def _write_v1(ctx, filename, tensor_names, specs_tensor, tensors) -> tuple:
    path = _scalar_string(ctx, filename, "filename")
    names = _string_list(ctx, tensor_names, "tensor_names", len(tensors))
    specs = _string_list(ctx, specs_tensor, "shapes_and_slices", len(tensors)) if specs_tensor is not None \
        else [""] * len(tensors)
    writer = V1Writer(path)
    try:
        for name, spec, tensor in zip(names, specs, tensors):
            value = _value(ctx, tensor, name)
            if spec:
                writer.add_slice(name, tuple(int(d) for d in spec.split()[:-1]), spec, value)
            else:
                writer.add(name, value)
        writer.finish()
    except CheckpointError as exc:
        raise KernelError(str(exc)) from None
    return ()


@host_kernel("Save")
def save(ctx, filename, tensor_names, *data, T):
    return _write_v1(ctx, filename, tensor_names, None, data)


@host_kernel("SaveSlices")
def save_slices(ctx, filename, tensor_names, shapes_and_slices, *data, T):
    return _write_v1(ctx, filename, tensor_names, shapes_and_slices, data)


def _open_v1(ctx, pattern: str) -> V1Reader:
    try:
        return V1Reader(pattern)
    except CheckpointError as exc:
        raise KernelError(str(exc)) from None


def _restore_v1(ctx, reader: V1Reader, name: str, spec: str, dt) -> np.ndarray:
    if name not in reader:
        ctx.fail(f'Tensor name "{name}" not found in checkpoint files {reader.pattern}')
    stored = reader.dtype(name)
    if stored is not dt:
        ctx.fail(f"Expected to restore a tensor of type {dt.name}, got a tensor of type {stored.name} instead: "
                 f"tensor_name = {name}")
    try:
        return reader.read(name, spec)
    except CheckpointError as exc:
        raise KernelError(str(exc)) from None


# preferred_shard only tells TF which matching file to open first; every file is read here, so
# it changes nothing in what is restored.
@host_kernel("Restore")
def restore(ctx, file_pattern, tensor_name, *, dt, preferred_shard):
    pattern = _scalar_string(ctx, file_pattern, "file_pattern")
    return _restore_v1(ctx, _open_v1(ctx, pattern), _scalar_string(ctx, tensor_name, "tensor_name"), "", dt)


@host_kernel("RestoreSlice")
def restore_slice(ctx, file_pattern, tensor_name, shape_and_slice, *, dt, preferred_shard):
    pattern = _scalar_string(ctx, file_pattern, "file_pattern")
    return _restore_v1(ctx, _open_v1(ctx, pattern), _scalar_string(ctx, tensor_name, "tensor_name"),
                       _scalar_string(ctx, shape_and_slice, "shape_and_slice"), dt)
