"""String ops: splitting, joining, case, regexes, conversion to and from numbers, hashing, CSV
and raw-byte decoding.

Shapes follow TensorFlow's shape functions (string_ops.cc, parsing_ops.cc); values are computed
by graphtool/exec/kernels/strings*.py. None of these ops is differentiable (strings carry no
gradient; StringToNumber and DecodeRaw start from strings).
"""
from __future__ import annotations

from ..shapes import Shape, ShapeError, broadcast_shapes, has_rank
from .inference import InferenceContext, unchanged
from .registry import register

_UNIT = "unit: {'BYTE', 'UTF8_CHAR'} = 'BYTE'"


def _scalar_inputs(ctx: InferenceContext, *indices: int) -> None:
    for i in indices:
        ctx.with_rank(i, 0)


def _split_shapes(ctx: InferenceContext) -> list[Shape]:
    ctx.with_rank(0, 1)
    ctx.with_rank(1, 0)
    return [Shape([None, 2]), Shape([None]), Shape([2])]


def _regex_replace_shape(ctx: InferenceContext) -> Shape:
    _scalar_inputs(ctx, 1, 2)
    return ctx.shape(0)


def _join_shape(ctx: InferenceContext) -> Shape:
    """Scalars broadcast; every non-scalar input must have the same shape (TensorFlow's rule,
    not general broadcasting)."""
    result = None
    for i in range(ctx.num_inputs):
        shape = ctx.shape(i)
        if has_rank(shape) and shape.rank == 0:
            continue
        try:
            result = shape if result is None else result.merge(shape)
        except ShapeError:
            ctx.fail(f"non-scalar inputs must have the same shape, got {result} and {shape}")
    if result is None:
        # All scalars, or only unknown ranks.
        unknown = any(not has_rank(ctx.shape(i)) for i in range(ctx.num_inputs))
        return Shape.unknown() if unknown else Shape.scalar()
    return result


def _substr_shape(ctx: InferenceContext) -> Shape:
    try:
        ctx.shape(1).merge(ctx.shape(2))
    except ShapeError:
        ctx.fail(f"pos and len must have the same shape, got {ctx.shape(1)} and {ctx.shape(2)}")
    try:
        return broadcast_shapes(ctx.shape(0), ctx.shape(1))
    except ShapeError:
        ctx.fail(f"input {ctx.shape(0)} and pos {ctx.shape(1)} are not broadcast-compatible")


def _decode_raw_shape(ctx: InferenceContext) -> Shape:
    shape = ctx.shape(0)
    return shape.concatenate([None]) if has_rank(shape) else Shape.unknown()


def _decode_csv_shapes(ctx: InferenceContext) -> list[Shape]:
    for i in range(1, ctx.num_inputs):
        shape = ctx.shape(i)
        if has_rank(shape) and shape.rank > 1:
            ctx.fail(f"record_defaults[{i - 1}] must be a scalar or a vector, has shape {shape}")
        if has_rank(shape) and shape.rank == 1 and shape[0] is not None and shape[0] > 1:
            ctx.fail(f"record_defaults[{i - 1}] must have at most one element, has shape {shape}")
    return [ctx.shape(0)] * (ctx.num_inputs - 1)


register("StringSplitV2", inputs=["input: string", "sep: string"],
         outputs=["indices: int64", "values: string", "shape: int64"], attrs=["maxsplit: int = -1"],
         shape=_split_shapes)
register("StringSplit", inputs=["input: string", "delimiter: string"],
         outputs=["indices: int64", "values: string", "shape: int64"], attrs=["skip_empty: bool = true"],
         shape=_split_shapes)
def _reduce_join_shape(ctx: InferenceContext) -> Shape:
    shape, axes = ctx.shape(0), ctx.int_list(1)
    if not has_rank(shape) or axes is None:
        return Shape.unknown()
    rank = shape.rank
    for axis in axes:
        if not -rank <= axis < rank:
            ctx.fail(f"Invalid reduction dimension {axis} for input with {rank} dimension(s)")
    reduced = {axis % rank for axis in axes}
    if ctx.attr("keep_dims"):
        return Shape([1 if i in reduced else d for i, d in enumerate(shape.dims)])
    return Shape([d for i, d in enumerate(shape.dims) if i not in reduced])


register("ReduceJoin", inputs=["inputs: string", "reduction_indices: int32"], outputs=["output: string"],
         attrs=["keep_dims: bool = false", "separator: string = ''"], shape=_reduce_join_shape)
register("StringToNumber", inputs=["string_tensor: string"], outputs=["output: out_type"],
         attrs=["out_type: {float, double, int32, int64, uint32, uint64} = DT_FLOAT"], shape=unchanged)
register("StringJoin", inputs=["inputs: N * string"], outputs=["output: string"],
         attrs=["N: int >= 0", "separator: string = ''"], shape=_join_shape)
register("Substr", inputs=["input: string", "pos: T", "len: T"], outputs=["output: string"],
         attrs=["T: {int32, int64}", _UNIT], shape=_substr_shape)
register("RegexReplace", inputs=["input: string", "pattern: string", "rewrite: string"],
         outputs=["output: string"], attrs=["replace_global: bool = true"], shape=_regex_replace_shape)
register("StaticRegexReplace", inputs=["input: string"], outputs=["output: string"],
         attrs=["pattern: string", "rewrite: string", "replace_global: bool = true"], shape=unchanged)
register("RegexFullMatch", inputs=["input: string", "pattern: string"], outputs=["output: bool"],
         shape=lambda ctx: (ctx.with_rank(1, 0), ctx.shape(0))[1])
register("StaticRegexFullMatch", inputs=["input: string"], outputs=["output: bool"],
         attrs=["pattern: string"], shape=unchanged)
for _name in ("StringLower", "StringUpper"):
    register(_name, inputs=["input: string"], outputs=["output: string"], attrs=["encoding: string = ''"],
             shape=unchanged)
register("StringStrip", inputs=["input: string"], outputs=["output: string"], shape=unchanged)
register("StringLength", inputs=["input: string"], outputs=["output: int32"], attrs=[_UNIT], shape=unchanged)
register("AsString", inputs=["input: T"], outputs=["output: string"],
         attrs=["T: {float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, uint32, uint64,"
                " complex64, complex128, bool, variant, string}",
                "precision: int = -1", "scientific: bool = false", "shortest: bool = false",
                "width: int = -1", "fill: string = ''"], shape=unchanged)
register("StringToHashBucketFast", inputs=["input: string"], outputs=["output: int64"],
         attrs=["num_buckets: int >= 1"], shape=unchanged)
register("StringToHashBucketStrong", inputs=["input: string"], outputs=["output: int64"],
         attrs=["num_buckets: int >= 1", "key: list(int)"], shape=unchanged)
register("DecodeRaw", inputs=["bytes: string"], outputs=["output: out_type"],
         attrs=["out_type: {half, float, double, int32, uint16, uint8, int16, int8, int64, complex64,"
                " complex128, bool, bfloat16}", "little_endian: bool = true"], shape=_decode_raw_shape)
register("DecodeBase64", inputs=["input: string"], outputs=["output: string"], shape=unchanged)
register("EncodeBase64", inputs=["input: string"], outputs=["output: string"], attrs=["pad: bool = false"],
         shape=unchanged)
register("DecodeCSV", inputs=["records: string", "record_defaults: OUT_TYPE"], outputs=["output: OUT_TYPE"],
         attrs=["OUT_TYPE: list({float, double, int32, int64, string}) >= 1", "field_delim: string = ','",
                "use_quote_delim: bool = true", "na_value: string = ''", "select_cols: list(int) = []"],
         shape=_decode_csv_shapes)
