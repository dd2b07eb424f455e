"""What the array family's kernels share: reading the small host-side inputs (axes, shapes, sizes,
counts), TensorFlow's formatting of shapes and index positions in error messages, index checks
with TensorFlow's wording, and scatter-style updates.

Axis, shape and size inputs live in host memory in TensorFlow; here they may be device arrays, so
they are read once with `.tolist()` (a single copy back on a GPU) and handled as Python ints.
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np


# --- reading small inputs -------------------------------------------------------------------------

def host_ints(tensor) -> list[int]:
    """The values of a small integer input (axes, a shape, sizes) as Python ints, flattened."""
    return [int(v) for v in tensor.reshape(-1).tolist()]


def host_int(ctx, tensor, name: str, allow_vector: bool = False) -> int:
    """A scalar integer input. Some ops also take the 1-element vector of old graphs."""
    if tensor.ndim != 0 and not (allow_vector and tensor.shape == (1,)):
        ctx.fail(f"{name} must be a scalar, not shape {shape_str(tensor.shape)}")
    return int(tensor.reshape(-1).tolist()[0])


def host_value(tensor):
    """A single-element input as a numpy scalar of its own dtype (for arithmetic in that dtype)."""
    host = tensor.get() if hasattr(tensor, "get") else tensor  # cupy arrays copy back with get()
    return np.asarray(host).reshape(-1)[0]


def vector_of(ctx, tensor, name: str) -> list[int]:
    """A 1-D integer input such as a shape or perm."""
    if tensor.ndim != 1:
        ctx.fail(f"{name} must be a vector, not shape {shape_str(tensor.shape)}")
    return host_ints(tensor)


def output_shape(ctx, tensor, name: str = "shape") -> tuple[int, ...]:
    """A shape input (Fill's dims, ScatterNd's shape, ...): a vector of non-negative sizes."""
    dims = vector_of(ctx, tensor, name)
    for dim in dims:
        if dim < 0:
            ctx.fail(f"Dimension {dim} must be >= 0")
    return tuple(dims)


def wrap_axis(axis: int, rank: int) -> int | None:
    """`axis` made non-negative, or None when it is outside [-rank, rank)."""
    if not -rank <= axis < rank:
        return None
    return axis + rank if axis < 0 else axis


def element_count(shape) -> int:
    return math.prod(shape)


# --- formatting as TensorFlow does ----------------------------------------------------------------

def shape_str(shape) -> str:
    """TensorShape::DebugString: [2,3,4]."""
    return "[" + ",".join(str(d) for d in shape) + "]"


def position_str(shape, flat_index: int) -> str:
    """Where element `flat_index` of a tensor of `shape` sits, as TensorFlow prints it after a name:
    "[1,0]", or "" for a scalar."""
    if len(shape) == 0:
        return ""
    return shape_str(int(i) for i in np.unravel_index(flat_index, shape))


# --- index checks ---------------------------------------------------------------------------------

def first_true(xp, mask) -> int | None:
    """The flat position of the first True in `mask`, or None."""
    if mask.size == 0 or not bool(mask.any()):
        return None
    return int(xp.argmax(mask.reshape(-1)))


def check_indices_below(ctx, indices, limit: int) -> None:
    """Every index in [0, limit), else TensorFlow's Gather error naming the first bad one."""
    xp = ctx.xp
    bad = first_true(xp, (indices < 0) | (indices >= limit))
    if bad is not None:
        value = int(indices.reshape(-1)[bad])
        ctx.fail(f"indices{position_str(indices.shape, bad)} = {value} is not in [0, {limit})")


def index_rows(indices):
    """An index tensor [..., depth] as rows [n, depth] (spelled out: depth may be 0)."""
    return indices.reshape(element_count(indices.shape[:-1]), indices.shape[-1])


def bad_index_rows(xp, rows, limits):
    """For index rows [n, depth] into dims `limits`: a bool [n] marking rows that fall outside."""
    bounds = xp.asarray(limits, dtype=rows.dtype)
    return ((rows < 0) | (rows >= bounds)).any(axis=1)


def describe_index_row(indices, row: int) -> str:
    """'indices[1] = [2, 3]' for row `row` of an index tensor whose last dim is the depth."""
    values = ", ".join(str(v) for v in host_ints(index_rows(indices)[row]))
    return f"indices{position_str(indices.shape[:-1], row)} = [{values}]"


# --- scatter updates ------------------------------------------------------------------------------

# How each scatter mode combines an update with what is there (numpy and cupy ufunc names).
SCATTER_UFUNCS = {"add": "add", "sub": "subtract", "min": "minimum", "max": "maximum",
                  "mul": "multiply"}


def scatter_rows(xp, target, rows, updates, mode: str) -> None:
    """Combine `updates` [n, *target.shape[depth:]] into `target` (an array the kernel owns) at the
    index rows [n, depth >= 1]. Duplicate rows accumulate (add, min, ...); for "update" one of
    them wins (the last on the CPU), as in TensorFlow where the winner is unspecified."""
    position = tuple(rows[:, k] for k in range(rows.shape[1]))
    if mode == "update":
        target[position] = updates
    else:
        accumulate_at(xp, mode, target, position, updates)


def accumulate_at(xp, mode: str, target, position, updates) -> None:
    """target[position] (op)= updates, repeated positions accumulating: `ufunc.at` for a mode of
    SCATTER_UFUNCS. numpy's takes every dtype; cupy's is built on CUDA atomics and refuses most
    (add: 32/64-bit ints and floats, float16; maximum/minimum: no 8/16-bit types; subtract: 32-bit
    ints; multiply: none), with lists that vary by version. On cupy the call is tried as it is,
    then in a type it accepts with the same result: narrow integers widened (sums wrap the same
    way modulo 2**bits), int64 sums as uint64 (the same bits), complex sums per part, float16
    max/min as float32, subtraction as addition of the negation; what is left runs on the host."""
    ufunc = getattr(xp, SCATTER_UFUNCS[mode])
    if getattr(xp, "__name__", "") != "cupy":
        ufunc.at(target, position, updates)
        return
    updates = xp.asarray(updates).astype(target.dtype, copy=False)
    try:
        ufunc.at(target, position, updates)
        return
    except (TypeError, NotImplementedError):
        pass
    dtype = np.dtype(target.dtype)
    if mode == "sub" and dtype.kind in "iufc":
        accumulate_at(xp, "add", target, position, -updates)
        return
    if mode == "add" and dtype.kind == "c":
        real, imag = target.real.copy(), target.imag.copy()
        accumulate_at(xp, "add", real, position, updates.real)
        accumulate_at(xp, "add", imag, position, updates.imag)
        target[...] = real + 1j * imag
        return
    wider = _ACCUMULATE_AS.get((mode, dtype.str[1:]))
    if wider is not None and wider.itemsize == dtype.itemsize:   # the same bits, another type
        ufunc.at(target.view(wider), position, updates.view(wider))
        return
    if wider is not None:
        wide = target.astype(wider)
        ufunc.at(wide, position, updates.astype(wider))
        target[...] = wide.astype(dtype)
        return
    host = xp.asnumpy(target)
    getattr(np, SCATTER_UFUNCS[mode]).at(host, tuple(xp.asnumpy(p) if not isinstance(p, slice) else p
                                                     for p in position), xp.asnumpy(updates))
    target[...] = xp.asarray(host)


# (mode, dtype) -> the type cupy's ufunc.at runs it in, giving the same values (see accumulate_at).
# Same-size entries reinterpret the bits (a view) instead of converting.
_ACCUMULATE_AS: dict[tuple[str, str], np.dtype] = {
    **{("add", code): np.dtype(np.int32) for code in ("i1", "i2")},
    **{("add", code): np.dtype(np.uint32) for code in ("u1", "u2")},
    ("add", "i8"): np.dtype(np.uint64),
    **{(mode, code): np.dtype(np.int32) for mode in ("max", "min") for code in ("i1", "i2", "u1", "u2")},
    **{(mode, "f2"): np.dtype(np.float32) for mode in ("max", "min")},
}


# --- dtype limits ---------------------------------------------------------------------------------

def lowest(dtype):
    """numeric_limits<T>::lowest(): the identity TensorFlow gives empty max-reductions."""
    return _limits(dtype).min


def highest(dtype):
    return _limits(dtype).max


def _limits(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return np.iinfo(dtype)
    return ml_dtypes.finfo(dtype)  # numpy floats and ml_dtypes' bfloat16 alike


def stable_argsort(xp, values, axis: int = -1):
    """argsort keeping equal values in index order (cupy's sort is stable and takes no `kind`)."""
    if xp.__name__ == "numpy":
        return xp.argsort(values, axis=axis, kind="stable")
    return xp.argsort(values, axis=axis)
