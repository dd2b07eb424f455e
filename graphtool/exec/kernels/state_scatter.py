"""Kernels that update variables at indices: ResourceScatter{Add, Sub, Mul, Div, Min, Max, Update},
ResourceScatterNd{Update, Add, Sub, Min, Max}, their ref-variable forms Scatter* and ScatterNd*
(which return the reference), and DestroyResourceOp.

As every variable update (state.py), these never write into the stored array: they scatter into a
copy and store it under the variable's lock, so a value read earlier in the step keeps what it was.
Duplicate indices accumulate (the last update wins for *Update, as on TensorFlow's CPU).
"""
from __future__ import annotations

import numpy as np

from .array_common import first_true, position_str, scatter_rows, shape_str
from .array_scatter import scatter_nd_into
from .gpu_segment import scatter_multiply
from .registry import CPU, GPU, kernel
# state.py's helpers for resource variables, shared within the family.
from .state import VarHandle
from .state import _missing_variable as missing_variable
from .state import _read_only as read_only
from .state import _ref_to as ref_to
from .state import _resource_variable as resource_variable
from .state import _variable_of_ref as variable_of_ref

_MODES = {"ScatterAdd": "add", "ScatterSub": "sub", "ScatterMul": "mul", "ScatterDiv": "div",
          "ScatterMin": "min", "ScatterMax": "max", "ScatterUpdate": "update"}
_MODES.update({f"Resource{op}": mode for op, mode in _MODES.items()})


def _update(ctx, resource, change):
    """Replace the variable's value by change(copy of the value), under its lock. `resource` is a
    resource handle, or (ref ops) the value a Ref(T) edge carries: then the reference is returned."""
    is_ref = not ctx.op.startswith("Resource")
    if is_ref:
        variable = variable_of_ref(ctx, resource)
    else:
        handle, variable = resource_variable(ctx, resource)
    with variable.lock:
        if variable.value is None:
            if is_ref:
                ctx.fail(f"Attempting to use uninitialized value {variable.name}")
            missing_variable(ctx, handle)
        variable.value = read_only(change(variable.value.copy()))
    return ref_to(ctx, variable) if is_ref else ()


def _divide_rows(xp, target, rows, updates) -> None:
    """target[rows[i]] /= updates[i] in order; integers truncate toward zero as in C++."""
    if target.dtype.kind not in "iu":
        xp.divide.at(target, rows, updates)
        return
    for i, row in enumerate(rows.tolist()):
        quotient = xp.abs(target[row]) // xp.abs(updates[i])
        target[row] = xp.sign(target[row]) * xp.sign(updates[i]) * quotient


def _divide_rows_gpu(xp, target, rows, updates) -> None:
    """The GPU's division (cupy's ufunc.at has no divide): each row is divided once by the
    product of its updates, which nested divisions equal (up to float rounding; exactly for
    integers, whose truncating divisions nest)."""
    divisors = xp.ones(target.shape, dtype=target.dtype)
    scatter_multiply(xp, divisors, rows[:, None], updates)
    if target.dtype.kind in "iu":
        target[...] = xp.sign(target) * xp.sign(divisors) * (xp.abs(target) // xp.abs(divisors))
    else:
        target /= divisors


def _resource_scatter(multiply, divide):
    """The kernel, with the row multiplication and division of its device."""
    def resource_scatter(ctx, resource, indices, updates, *, dtype, Tindices):
        return _scatter_rows(ctx, resource, indices, updates, multiply, divide)
    return resource_scatter


def _ref_scatter(multiply, divide):
    def ref_scatter(ctx, ref, indices, updates, *, T, Tindices, use_locking):
        return _scatter_rows(ctx, ref, indices, updates, multiply, divide)
    return ref_scatter


def _scatter_rows(ctx, resource, indices, updates, multiply, divide):
    xp, mode = ctx.xp, _MODES[ctx.op]

    def scatter(value):
        if value.ndim < 1:
            ctx.fail(f"params must be at least 1-D, got shape {shape_str(value.shape)}")
        if updates.dtype != value.dtype:
            ctx.fail(f"updates of dtype {updates.dtype} do not match the variable's {value.dtype}")
        element = value.shape[1:]
        if updates.ndim and updates.shape != indices.shape + element:
            ctx.fail(f"Must have updates.shape = indices.shape + params.shape[1:] or updates.shape = [], "
                     f"got updates.shape {shape_str(updates.shape)}, indices.shape "
                     f"{shape_str(indices.shape)}, params.shape {shape_str(value.shape)}")
        flat = indices.reshape(-1)
        bad = first_true(xp, (flat < 0) | (flat >= value.shape[0]))
        if bad is not None:
            ctx.fail(f"indices{position_str(indices.shape, bad)} = {int(flat[bad])} is not in "
                     f"[0, {value.shape[0]})")
        rows = xp.broadcast_to(updates, indices.shape + element).reshape((flat.size,) + element)
        if mode == "div":
            divide(xp, value, flat.astype(np.int64), rows)
        elif mode == "mul":
            multiply(xp, value, flat.astype(np.int64)[:, None], rows, "mul")
        else:
            scatter_rows(xp, value, flat.astype(np.int64)[:, None], rows, mode)
        return value

    return _update(ctx, resource, scatter)


_RESOURCE_OPS = tuple(op for op in _MODES if op.startswith("Resource"))
_REF_OPS = tuple(op for op in _MODES if not op.startswith("Resource"))
kernel(*_RESOURCE_OPS, devices=(CPU,))(_resource_scatter(scatter_rows, _divide_rows))
kernel(*_REF_OPS, devices=(CPU,))(_ref_scatter(scatter_rows, _divide_rows))
# cupy's ufunc.at has no multiply or divide: the GPU multiplies by sorting (gpu_segment.py).
kernel(*_RESOURCE_OPS, devices=(GPU,))(_resource_scatter(scatter_multiply, _divide_rows_gpu))
kernel(*_REF_OPS, devices=(GPU,))(_ref_scatter(scatter_multiply, _divide_rows_gpu))


@kernel("ResourceScatterNdUpdate", "ResourceScatterNdAdd", "ResourceScatterNdSub", "ResourceScatterNdMin",
        "ResourceScatterNdMax", "ScatterNdUpdate", "ScatterNdAdd", "ScatterNdSub", "ScatterNdMin", "ScatterNdMax")
def resource_scatter_nd(ctx, ref, indices, updates, *, T, Tindices, use_locking, bad_indices_policy):
    mode = ctx.op.rsplit("ScatterNd", 1)[1].lower()
    return _update(ctx, ref, lambda value: scatter_nd_into(ctx, value, indices, updates, mode,
                                                            bad_indices_policy))


@kernel("DestroyResourceOp")
def destroy_resource_op(ctx, resource, *, ignore_lookup_error):
    handle = resource[()]
    if not isinstance(handle, VarHandle):
        ctx.fail(f"DestroyResourceOp can delete variables only, not {type(handle).__name__}")
    deleted = ctx.resources.session.delete(("ResourceVariable", handle.container, handle.name))
    if (deleted is None or deleted.value is None) and not ignore_lookup_error:
        ctx.fail(f"Resource {handle.container}/{handle.name} does not exist.")
    return ()
