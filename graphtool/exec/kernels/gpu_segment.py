"""The GPU's segment kernels: the shared ones (segment.py), computing on the host for bfloat16
data (cupy has no bfloat16), and for the products a scatter-multiply without `ufunc.at`.

cupy's `ufunc.at` covers add, subtract, maximum and minimum but not multiply, so
UnsortedSegmentProd and SegmentProd combine rows with this instead: sort the updates by target row,
multiply each run of equal rows together with a segmented scan (log2(n) whole-array steps, no
Python loop over rows), and multiply every run's product into its row once. Products are formed
in a different order than the CPU's sequential one, so floats may differ in the last bits.
"""
from __future__ import annotations

from .array_common import highest, lowest, stable_argsort
from .gpu_host_memory import host_dtypes_on_host
from .segment import (sorted_segment, sparse_segment, sparse_segment_grad, sparse_segment_grad_v2,
                      unsorted_segment)
from .registry import GPU, kernel


def scatter_multiply(xp, target, rows, updates, mode: str = "mul") -> None:
    """target[rows[i]] *= updates[i] for every i (rows: [n, depth] indices into target's leading
    dims; repeated rows multiply together)."""
    if mode != "mul":
        raise ValueError(f"scatter_multiply only multiplies, not {mode!r}")
    if rows.shape[0] == 0:
        return
    depth = rows.shape[1]
    keys = xp.ravel_multi_index(tuple(rows[:, k] for k in range(depth)), target.shape[:depth])
    order = stable_argsort(xp, keys)
    keys, products = keys[order], segmented_products(xp, keys[order], updates[order])
    last_of_run = xp.ones(keys.shape, dtype=bool)
    last_of_run[:-1] = keys[1:] != keys[:-1]
    flat = target.reshape(-1, *target.shape[depth:])
    run_keys = keys[last_of_run]
    flat[run_keys] = flat[run_keys] * products[last_of_run]


def segmented_products(xp, keys, values):
    """Inclusive running products of `values` within runs of equal sorted `keys` (Hillis-Steele:
    after the step of width w each entry holds the product of up to 2w entries ending at it)."""
    width = 1
    while width < keys.shape[0]:
        same_run = (keys[width:] == keys[:-width]).reshape(-1, *([1] * (values.ndim - 1)))
        tail = xp.where(same_run, values[width:] * values[:-width], values[width:])
        values = xp.concatenate([values[:width], tail])
        width *= 2
    return values


# Every segment kernel computes on the host for bfloat16 data (cupy has no bfloat16).
kernel("UnsortedSegmentProd", devices=(GPU,))(host_dtypes_on_host(unsorted_segment("mul", lambda dtype: 1, scatter_multiply)))
kernel("SegmentProd", devices=(GPU,))(host_dtypes_on_host(sorted_segment("mul", scatter_multiply)))
for _op, _fn in (("UnsortedSegmentSum", unsorted_segment("add", lambda dtype: 0)),
                 ("UnsortedSegmentMax", unsorted_segment("max", lowest)),
                 ("UnsortedSegmentMin", unsorted_segment("min", highest)),
                 ("SegmentSum", sorted_segment("add")), ("SegmentMean", sorted_segment("mean")),
                 ("SegmentMax", sorted_segment("max")), ("SegmentMin", sorted_segment("min"))):
    kernel(_op, devices=(GPU,))(host_dtypes_on_host(_fn))
for _mode, _name in (("sum", "Sum"), ("mean", "Mean"), ("sqrtn", "SqrtN")):
    kernel(f"SparseSegment{_name}", f"SparseSegment{_name}WithNumSegments", devices=(GPU,))(
        host_dtypes_on_host(sparse_segment(_mode)))
    kernel(f"SparseSegment{_name}Grad", devices=(GPU,))(host_dtypes_on_host(sparse_segment_grad(_mode)))
    kernel(f"SparseSegment{_name}GradV2", devices=(GPU,))(host_dtypes_on_host(sparse_segment_grad_v2(_mode)))
