"""Kernels for sources, identities and checks. Inputs are shared, read-only arrays: a kernel never
writes into an input (forwarding one unchanged, as Identity does, is fine)."""
from __future__ import annotations

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


@kernel("Abort")
def abort(ctx, *, error_msg, exit_without_error):
    # TensorFlow's Abort ends the process; a runtime keeps the process and fails the step instead.
    if not exit_without_error:
        ctx.fail(f"Abort: {error_msg or 'abort op executed'}")
    return ()
