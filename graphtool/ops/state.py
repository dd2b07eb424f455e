"""Variables (ref-typed v1 and resource v2) and random-number ops.

Flags follow TensorFlow's OpDefs exactly. Note that TensorFlow does *not* mark Assign, AssignAdd,
AssignSub, CountUpTo or IsVariableInitialized stateful: their side effect is carried by the ref-typed input
(`Ref(T)`), so passes must treat a ref input as a side effect too (TensorFlow's optimizers do).

Resource variables: TensorFlow reads a variable's shape from the handle's shape data (set by
VarHandleOp from its dtype/shape attrs); our inference carries no handle data, so
ReadVariableOp's shape is unknown here, as in TensorFlow when that data is absent.
"""
from __future__ import annotations

from ..shapes import Shape, ShapeError, has_rank
from .inference import HandleData, InferenceContext, merge_all, no_outputs, scalar, unchanged, unknown_outputs
from .registry import register
from .tensor_array import vector_of_length

_SEEDS = ["seed: int = 0", "seed2: int = 0"]
_FLOAT_DTYPES = "{half, bfloat16, float, double}"
_INDEX_DTYPES = "{int32, int64}"
# TensorFlow's numbertype / realnumbertype, spelled out: the registry's TYPE_SETS also admit the
# float8/int4 family, which these OpDefs do not.
_NUMBER_DTYPES = ("{float, double, int32, uint8, int16, int8, complex64, int64, qint8, quint8, qint32,"
                  " bfloat16, qint16, quint16, uint16, complex128, half, uint32, uint64}")
_REAL_NUMBER_DTYPES = ("{float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half,"
                       " uint32, uint64}")


# --- ref variables ----------------------------------------------------------------------------

def _variable_shape(ctx: InferenceContext) -> Shape:
    return ctx.attr("shape")


def _legacy_variable_shape(ctx: InferenceContext) -> Shape:
    # Old graphs wrote an empty shape for "unknown", so TensorFlow reads a v1 Variable of rank 0
    # (or unknown rank) as unknown.
    declared = ctx.attr("shape")
    return declared if has_rank(declared) and declared.rank > 0 else Shape.unknown()


def _assign_shape(ctx: InferenceContext) -> Shape:
    """With validate_shape the variable keeps its shape, which the value must fit; without it the
    variable takes the value's shape."""
    return merge_all(ctx, (0, 1)) if ctx.attr("validate_shape") else ctx.shape(1)


_VARIABLE_ATTRS = ["shape: shape", "dtype: type", "container: string = ''",
                   "shared_name: string = ''"]

register("VariableV2", outputs=["ref: Ref(dtype)"], attrs=_VARIABLE_ATTRS,
         shape=_variable_shape, stateful=True)
register("Variable", outputs=["ref: Ref(dtype)"], attrs=_VARIABLE_ATTRS,
         shape=_legacy_variable_shape, stateful=True)
register("Assign", inputs=["ref: Ref(T)", "value: T"], outputs=["output_ref: Ref(T)"],
         attrs=["T: type", "validate_shape: bool = true", "use_locking: bool = true"],
         shape=_assign_shape)
for _name in ("AssignAdd", "AssignSub"):
    register(_name, inputs=["ref: Ref(T)", "value: T"], outputs=["output_ref: Ref(T)"],
             attrs=[f"T: {_NUMBER_DTYPES}", "use_locking: bool = false"],
             shape=lambda ctx: merge_all(ctx, (0, 1)))
register("IsVariableInitialized", inputs=["ref: Ref(dtype)"], outputs=["is_initialized: bool"],
         attrs=["dtype: type"], shape=scalar)


def _count_up_to_shape(ctx: InferenceContext) -> Shape:
    return ctx.with_rank(0, 0)


# The counter of TF1 input pipelines (limit_epochs): the value before the increment; OutOfRange at
# `limit`. Not stateful in TensorFlow's OpDef: the ref input carries the side effect, as Assign's.
register("CountUpTo", inputs=["ref: Ref(T)"], outputs=["output: T"], attrs=["limit: int", f"T: {_INDEX_DTYPES}"],
         shape=_count_up_to_shape)


# --- resource variables -----------------------------------------------------------------------

def _var_handle_shape(ctx: InferenceContext) -> Shape:
    ctx.output_handles[0] = HandleData(ctx.attr("shape"))
    return Shape.scalar()


def _read_variable_shape(ctx: InferenceContext) -> Shape:
    handle = ctx.handle(0)
    return handle.element_shape if handle is not None else Shape.unknown()


register("VarHandleOp", outputs=["resource: resource"],
         attrs=["container: string = ''", "shared_name: string = ''", "debug_name: string = ''",
                "dtype: type", "shape: shape", "allowed_devices: list(string) = []"],
         shape=_var_handle_shape, stateful=True)
register("ReadVariableOp", inputs=["resource: resource"], outputs=["value: dtype"],
         attrs=["dtype: type"], shape=_read_variable_shape, stateful=True)
register("AssignVariableOp", inputs=["resource: resource", "value: dtype"],
         attrs=["dtype: type", "validate_shape: bool = false"], shape=no_outputs, stateful=True)
for _name in ("AssignAddVariableOp", "AssignSubVariableOp"):
    register(_name, inputs=["resource: resource", "value: dtype"], attrs=["dtype: type"],
             shape=no_outputs, stateful=True)


def _resource_count_up_to_shape(ctx: InferenceContext) -> Shape:
    """Scalar; the variable's declared shape (from the handle data, when known) must be too."""
    handle = ctx.handle(0)
    if handle is not None:
        try:
            handle.element_shape.with_rank(0)
        except ShapeError:
            ctx.fail(f"the counter variable must be a scalar, has shape {handle.element_shape}")
    return Shape.scalar()


register("ResourceCountUpTo", inputs=["resource: resource"], outputs=["output: T"],
         attrs=["limit: int", f"T: {_INDEX_DTYPES}"], shape=_resource_count_up_to_shape, stateful=True)
register("VarIsInitializedOp", inputs=["resource: resource"], outputs=["is_initialized: bool"],
         shape=scalar, stateful=True)


def _resource_gather_shape(ctx: InferenceContext) -> Shape:
    """indices.shape + params.shape[batch_dims + 1:], params' shape from the handle data."""
    handle = ctx.handle(0)
    params = handle.element_shape if handle is not None else Shape.unknown()
    indices = ctx.shape(1)
    if not has_rank(params) or not has_rank(indices):
        return Shape.unknown()
    return indices.concatenate(Shape(params.dims[ctx.attr("batch_dims") + 1:]))


# tf.gather on a resource variable (embedding lookups): rows of the variable's current value.
register("ResourceGather", inputs=["resource: resource", "indices: Tindices"], outputs=["output: dtype"],
         attrs=["batch_dims: int = 0", "validate_indices: bool = true", "dtype: type",
                f"Tindices: {_INDEX_DTYPES}"], shape=_resource_gather_shape, stateful=True)


# --- random numbers ---------------------------------------------------------------------------

def _random_shape(ctx: InferenceContext) -> Shape:
    """The output shape is the value of the 1-D `shape` input (TensorFlow's RandomShape: unlike
    Reshape, a scalar shape tensor is an error, not "unknown rank")."""
    ctx.with_rank(0, 1)
    return ctx.shape_from_tensor(0)


def _random_int_shape(ctx: InferenceContext) -> Shape:
    ctx.with_rank(1, 0)
    ctx.with_rank(2, 0)
    return _random_shape(ctx)


def _stateless_random_shape(ctx: InferenceContext) -> Shape:
    vector_of_length(ctx, 1, 2, "seed")
    return _random_shape(ctx)


def _multinomial_shape(ctx: InferenceContext) -> Shape:
    """[batch, num_samples] from logits [batch, classes] and a scalar num_samples."""
    batch = ctx.with_rank(0, 2)[0]
    ctx.with_rank(1, 0)
    samples = ctx.int_list(1)
    if samples is not None and samples[0] < 0:
        ctx.fail(f"num_samples must be non-negative, got {samples[0]}")
    return Shape([batch, None if samples is None else samples[0]])


for _name in ("RandomUniform", "RandomStandardNormal", "TruncatedNormal"):
    register(_name, inputs=["shape: T"], outputs=["output: dtype"],
             attrs=[*_SEEDS, f"dtype: {_FLOAT_DTYPES}", f"T: {_INDEX_DTYPES}"],
             shape=_random_shape, stateful=True)
register("RandomUniformInt", inputs=["shape: T", "minval: Tout", "maxval: Tout"],
         outputs=["output: Tout"],
         attrs=[*_SEEDS, f"Tout: {_INDEX_DTYPES}", f"T: {_INDEX_DTYPES}"],
         shape=_random_int_shape, stateful=True)
# Shuffles along the first dimension (the value's shape is kept).
register("RandomShuffle", inputs=["value: T"], outputs=["output: T"], attrs=[*_SEEDS, "T: type"],
         shape=unchanged, stateful=True)
register("Multinomial", inputs=["logits: T", "num_samples: int32"], outputs=["output: output_dtype"],
         attrs=[*_SEEDS, f"T: {_REAL_NUMBER_DTYPES}", f"output_dtype: {_INDEX_DTYPES} = DT_INT64"],
         shape=_multinomial_shape, stateful=True)
# Stateless variants: the same seed gives the same numbers, so they are ordinary pure ops.
for _name in ("StatelessRandomUniform", "StatelessRandomNormal"):
    register(_name, inputs=["shape: T", "seed: Tseed"], outputs=["output: dtype"],
             attrs=[f"dtype: {_FLOAT_DTYPES} = DT_FLOAT", f"T: {_INDEX_DTYPES} = DT_INT32",
                    f"Tseed: {_INDEX_DTYPES} = DT_INT64"],
             shape=_stateless_random_shape)
from . import state_scatter  # noqa: E402,F401  (the rest of the family)
