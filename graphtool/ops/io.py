"""Checkpoint ops (TensorFlow's io_ops): SaveV2/RestoreV2 over tensor bundles, the sharded-save
helpers (ShardedFilename, ShardedFilespec, MergeV2Checkpoints) and the legacy Save, SaveSlices,
Restore and RestoreSlice. Signatures and flags follow TensorFlow's OpDefs; the kernels are in
exec/kernels/checkpoint_io.py.
"""
from __future__ import annotations

from ..shapes import Shape, has_rank
from .inference import InferenceContext
from .registry import register


def _vector_inputs(ctx: InferenceContext, *inputs: int) -> None:
    for i in inputs:
        ctx.with_rank(i, 1)


def _slice_shape(spec: str) -> Shape:
    """The shape a shape-and-slice string restores: the full shape, or each slice's lengths."""
    if not spec:
        return Shape.unknown()
    *dims, slices = spec.split()
    full = [int(d) for d in dims]
    parts = slices.split(":")
    if len(parts) != len(full):
        raise ValueError(spec)
    out = []
    for dim, part in zip(full, parts):
        out.append(dim if part == "-" else int(part.split(",")[1]))
    return Shape(out)


def _save_v2_shape(ctx: InferenceContext) -> list[Shape]:
    ctx.with_rank(0, 0)
    _vector_inputs(ctx, 1, 2)
    return []


def _restore_v2_shape(ctx: InferenceContext) -> list[Shape]:
    ctx.with_rank(0, 0)
    _vector_inputs(ctx, 1, 2)
    specs = ctx.value(2)
    count = ctx.num_outputs
    if specs is None or specs.shape != (count,):
        return [Shape.unknown()] * count
    out = []
    for spec in specs.reshape(-1):
        text = spec.decode("utf-8", "replace") if isinstance(spec, bytes) else str(spec)
        try:
            out.append(_slice_shape(text))
        except ValueError:
            ctx.fail(f"malformed shape_and_slices entry '{text}'")
    return out


def _restore_slice_shape(ctx: InferenceContext) -> Shape:
    ctx.with_rank(0, 0)
    ctx.with_rank(1, 0)
    ctx.with_rank(2, 0)
    spec = ctx.value(2)
    if spec is None:
        return Shape.unknown()
    text = spec[()].decode("utf-8", "replace") if isinstance(spec[()], bytes) else str(spec[()])
    try:
        return _slice_shape(text)
    except ValueError:
        ctx.fail(f"malformed shape_and_slice '{text}'")


def _sharded_shape(ctx: InferenceContext) -> Shape:
    for i in range(ctx.num_inputs):
        ctx.with_rank(i, 0)
    return Shape.scalar()


def _merge_shape(ctx: InferenceContext) -> list[Shape]:
    shape = ctx.shape(0)
    if has_rank(shape) and shape.rank > 1:
        ctx.fail(f"checkpoint_prefixes must be a scalar or vector, got rank {shape.rank}")
    ctx.with_rank(1, 0)
    return []


def _legacy_save_shape(ctx: InferenceContext) -> list[Shape]:
    ctx.with_rank(0, 0)
    _vector_inputs(ctx, *range(1, ctx.num_inputs - len(ctx.attr("T"))))
    return []


def _legacy_restore_shape(ctx: InferenceContext) -> Shape:
    ctx.with_rank(0, 0)
    ctx.with_rank(1, 0)
    return Shape.unknown()


register("SaveV2", inputs=["prefix: string", "tensor_names: string", "shape_and_slices: string",
                           "tensors: dtypes"],
         attrs=["dtypes: list(type) >= 1"], shape=_save_v2_shape, stateful=True)
register("RestoreV2", inputs=["prefix: string", "tensor_names: string", "shape_and_slices: string"],
         outputs=["tensors: dtypes"], attrs=["dtypes: list(type) >= 1"], shape=_restore_v2_shape,
         stateful=True)
register("MergeV2Checkpoints", inputs=["checkpoint_prefixes: string", "destination_prefix: string"],
         attrs=["delete_old_dirs: bool = true", "allow_missing_files: bool = false"],
         shape=_merge_shape, stateful=True)
register("ShardedFilename", inputs=["basename: string", "shard: int32", "num_shards: int32"],
         outputs=["filename: string"], shape=_sharded_shape)
register("ShardedFilespec", inputs=["basename: string", "num_shards: int32"], outputs=["filename: string"],
         shape=_sharded_shape)

# Legacy (V1) ops.
register("Save", inputs=["filename: string", "tensor_names: string", "data: T"],
         attrs=["T: list(type) >= 1"], shape=_legacy_save_shape, stateful=True)
register("SaveSlices", inputs=["filename: string", "tensor_names: string", "shapes_and_slices: string",
                               "data: T"],
         attrs=["T: list(type) >= 1"], shape=_legacy_save_shape, stateful=True)
register("Restore", inputs=["file_pattern: string", "tensor_name: string"], outputs=["tensor: dt"],
         attrs=["dt: type", "preferred_shard: int = -1"], shape=_legacy_restore_shape, stateful=True)
register("RestoreSlice", inputs=["file_pattern: string", "tensor_name: string", "shape_and_slice: string"],
         outputs=["tensor: dt"], attrs=["dt: type", "preferred_shard: int = -1"],
         shape=_restore_slice_shape, stateful=True)
