"""Kernels for the ops that lowering functional control flow adds (ToBool)."""
from __future__ import annotations

from .registry import kernel


@kernel("ToBool")
def to_bool(ctx, x):
    xp = ctx.xp
    if x.ndim == 0:
        value = x.item() if hasattr(x, "item") else x
        return xp.asarray(len(value) > 0 if isinstance(value, (bytes, str)) else bool(value))
    return xp.asarray(x.size > 0)
