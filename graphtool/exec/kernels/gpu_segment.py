"""The GPU's UnsortedSegmentProd and SegmentProd: a scatter-multiply without `ufunc.at`.

cupy's `ufunc.at` covers add, subtract, maximum and minimum but not multiply, so the shared
segment kernels (segment.py) combines rows with this instead: sort the updates by target row,
multiply each run of equal rows together with a segmented scan (log2(n) whole-array steps, no
Python loop over rows), and multiply every run's product into its row once. Products are formed
in a different order than the CPU's sequential one, so floats may differ in the last bits.
"""
from __future__ import annotations

from .array_common import stable_argsort
from .segment import sorted_segment, unsorted_segment
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


kernel("UnsortedSegmentProd", devices=(GPU,))(unsorted_segment("mul", lambda dtype: 1, scatter_multiply))
kernel("SegmentProd", devices=(GPU,))(sorted_segment("mul", scatter_multiply))
