"""Updates of variables at indices (the "state" family): ResourceScatter{Add, Sub, Mul, Div, Min,
Max, Update} (rows of a variable, as embedding training writes them),
ResourceScatterNd{Update, Add, Sub, Min, Max} and DestroyResourceOp (no outputs, stateful), and
their ref-variable forms Scatter{...} and ScatterNd{...}, which return the reference and, like
Assign, are not marked stateful: the Ref(T) input carries the side effect.
"""
from __future__ import annotations

from functools import partial

from ..shapes import Shape, ShapeError, has_rank
from . import registry
from .inference import InferenceContext, no_outputs

register = partial(registry.register, family="state")

_NUMBER_DTYPES = ("{float, double, int32, uint8, int16, int8, complex64, int64, qint8, quint8, qint32,"
                  " bfloat16, qint16, quint16, uint16, complex128, half, uint32, uint64}")


def _scatter_shape(ctx: InferenceContext) -> list[Shape]:
    """updates must be a scalar or indices.shape + variable.shape[1:] (TensorFlow's
    ResourceScatterUpdateShape, with the variable's shape from the handle when known)."""
    handle = ctx.handle(0)
    variable = handle.element_shape if handle is not None else Shape.unknown()
    indices, updates = ctx.shape(1), ctx.shape(2)
    if has_rank(variable) and has_rank(indices) and has_rank(updates) and updates.rank != 0:
        expected = indices.concatenate(Shape(variable.dims[1:]))
        try:
            updates.merge(expected)
        except ShapeError:
            ctx.fail(f"updates {updates} must be a scalar or have shape {expected} "
                     f"(indices.shape + variable.shape[1:])")
    return no_outputs(ctx)


for _name in ("ResourceScatterAdd", "ResourceScatterSub", "ResourceScatterMul", "ResourceScatterDiv",
              "ResourceScatterMin", "ResourceScatterMax", "ResourceScatterUpdate"):
    _dtype = "dtype: type" if _name == "ResourceScatterUpdate" else f"dtype: {_NUMBER_DTYPES}"
    register(_name, inputs=["resource: resource", "indices: Tindices", "updates: dtype"],
             attrs=[_dtype, "Tindices: {int32, int64}"], shape=_scatter_shape, stateful=True)

for _name in ("ResourceScatterNdUpdate", "ResourceScatterNdAdd", "ResourceScatterNdSub",
              "ResourceScatterNdMin", "ResourceScatterNdMax"):
    register(_name, inputs=["ref: resource", "indices: Tindices", "updates: T"],
             attrs=["T: type", "Tindices: {int32, int64}", "use_locking: bool = true",
                    "bad_indices_policy: string = ''"], shape=no_outputs, stateful=True)

register("DestroyResourceOp", inputs=["resource: resource"], attrs=["ignore_lookup_error: bool = true"],
         shape=no_outputs, stateful=True)


def _ref_scatter_shape(ctx: InferenceContext) -> Shape:
    return ctx.shape(0)


_SMALL_REAL = "{half, bfloat16, float, double, int32, int64}"
for _name, _types, _locking in (("ScatterAdd", _NUMBER_DTYPES, "false"), ("ScatterSub", _NUMBER_DTYPES, "false"),
                                ("ScatterMul", _NUMBER_DTYPES, "false"), ("ScatterDiv", _NUMBER_DTYPES, "false"),
                                ("ScatterMin", _SMALL_REAL, "false"), ("ScatterMax", _SMALL_REAL, "false"),
                                ("ScatterUpdate", "type", "true")):
    register(_name, inputs=["ref: Ref(T)", "indices: Tindices", "updates: T"], outputs=["output_ref: Ref(T)"],
             attrs=[f"T: {_types}", "Tindices: {int32, int64}", f"use_locking: bool = {_locking}"],
             shape=_ref_scatter_shape)
for _name, _types, _locking in (("ScatterNdAdd", _NUMBER_DTYPES, "false"), ("ScatterNdSub", _NUMBER_DTYPES, "false"),
                                ("ScatterNdMin", _NUMBER_DTYPES, "false"), ("ScatterNdMax", _NUMBER_DTYPES, "false"),
                                ("ScatterNdUpdate", "type", "true")):
    register(_name, inputs=["ref: Ref(T)", "indices: Tindices", "updates: T"], outputs=["output_ref: Ref(T)"],
             attrs=[f"T: {_types}", "Tindices: {int32, int64}", f"use_locking: bool = {_locking}",
                    "bad_indices_policy: string = ''"], shape=_ref_scatter_shape)
