"""Kernels for sources, identities and checks. Inputs are shared, read-only arrays: a kernel never
writes into an input (forwarding one unchanged, as Identity does, is fine)."""
from __future__ import annotations

from .math_common import to_host
from .registry import CPU, kernel


@kernel("Const", "HostConst", devices=(CPU,))   # GPU: gpu_host_memory.py (strings stay on the host)
def const(ctx, *, value):
    # asarray is free on the CPU; on a GPU it uploads the constant (the plan caches it per device).
    return ctx.xp.asarray(value)


@kernel("Identity", "Snapshot", "StopGradient", "PreventGradient", "PlaceholderWithDefault")
def identity(ctx, x):
    return x


@kernel("IdentityN")
def identity_n(ctx, *xs):
    return tuple(xs)


@kernel("NoOp", "ControlTrigger")
def no_op(ctx, *inputs):
    return ()


@kernel("CheckNumerics")
def check_numerics(ctx, x, *, message):
    xp = ctx.xp
    if xp.isnan(x).any():
        ctx.fail(f"{message} : Tensor had NaN values")
    if xp.isinf(x).any():
        ctx.fail(f"{message} : Tensor had Inf values")
    return x


@kernel("Assert")
def assert_(ctx, condition, *data, summarize):
    if not bool(condition):
        shown = "; ".join(str(ctx.xp.asnumpy(d) if hasattr(ctx.xp, "asnumpy") else d).replace("\n", " ")[:200]
                          for d in data[:summarize])
        ctx.fail(f"assertion failed: [{shown}]")
    return ()


def summarize_value(value, limit: int) -> str:
    """TensorFlow's Tensor::SummarizeValue: at most `limit` elements (all when negative); a tensor
    of rank 2 or more as bracketed rows (PrintOneDim), '...' where elements were left out."""
    import numpy as np

    array = np.asarray(value)
    flat = array.reshape(-1)
    limit = flat.size if limit < 0 else min(limit, flat.size)

    def text(item) -> str:
        if isinstance(item, bytes):
            return item.decode("utf-8", "backslashreplace")
        if isinstance(item, np.bool_):
            return "1" if item else "0"
        if isinstance(item, np.floating) and item.dtype.itemsize <= 8:
            # TensorFlow's FloatToBuffer / DoubleToBuffer: %g with FLT_DIG (DBL_DIG) digits,
            # FLT_DIG + 3 (DBL_DIG + 2) when that does not read back as the same value.
            short, full = (6, 9) if item.dtype.itemsize <= 4 else (15, 17)
            shown = f"{float(item):.{short}g}"
            return shown if item.dtype.type(shown) == item else f"{float(item):.{full}g}"
        return str(item)

    if array.ndim <= 1:
        return " ".join(text(v) for v in flat[:limit]) + ("..." if flat.size > limit else "")
    out: list[str] = []
    index = 0

    def one_dim(dim: int) -> None:  # TensorFlow's PrintOneDim, step for step
        nonlocal index
        if index >= limit:
            return
        if dim == array.ndim - 1:
            for i in range(array.shape[dim]):
                if index >= limit:
                    out.append("...")  # dim > 0 here: rank >= 2
                    return
                out.append((" " if i else "") + text(flat[index]))
                index += 1
            return
        for _ in range(array.shape[dim]):
            opened = index < limit
            if opened:
                out.append("[")
            one_dim(dim + 1)
            if index < limit or opened:
                out.append("]")

    one_dim(0)
    return "".join(out) + ("..." if flat.size > limit else "")


class _PrintCount:
    """How many times one Print node has logged in a session (first_n)."""

    def __init__(self):
        import threading

        self.lock, self.count = threading.Lock(), 0

    def take(self, first_n: int) -> bool:
        with self.lock:
            if 0 <= first_n <= self.count:
                return False
            self.count += 1
            return True


@kernel("Print")
def print_(ctx, x, *data, message, first_n, summarize):
    import sys

    if first_n >= 0:
        counter = ctx.resources.session.lookup_or_create(("Print", ctx.node_name), _PrintCount)
        if not counter.take(first_n):
            return x
    host = [to_host(d) for d in data]    # the values are formatted on the host, as TensorFlow's kernel does
    sys.stderr.write(message + "".join(f"[{summarize_value(d, summarize)}]" for d in host) + "\n")
    sys.stderr.flush()
    return x


@kernel("Abort")
def abort(ctx, *, error_msg, exit_without_error):
    # TensorFlow's Abort ends the process; a runtime keeps the process and fails the step instead.
    if not exit_without_error:
        ctx.fail(f"Abort: {error_msg or 'abort op executed'}")
    return ()
