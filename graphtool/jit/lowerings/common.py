"""What the lowering families share: a registration decorator that keeps TensorFlow's output
dtypes exactly and declines the dtypes XLA cannot match, and small helpers on static values.

    @lowering("Relu", half=False)
    def relu(ctx, x):
        return ctx.jnp.maximum(x, ctx.jnp.zeros((), x.dtype))

Every result is cast to the output dtype the op's signature gives, so a Python scalar or a
weakly typed constant inside a lowering cannot change a dtype. A node is declined (it stays in
the interpreter, with the reason reported) when one of its inputs or outputs is not a numeric,
bool or complex tensor, and, unless `half=True`, when one is float16/bfloat16: the interpreter
rounds half precision after every operation as TensorFlow's kernels do, while XLA may keep a
fused chain of operations in float32, so only ops that move or select values (exact in any
precision) take half precision.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .registry import lowers

_HALF = {np.dtype(np.float16)}
try:   # bfloat16 comes with ml_dtypes (a numpy and a jax dependency)
    import ml_dtypes
    _HALF.add(np.dtype(ml_dtypes.bfloat16))
except ImportError:  # pragma: no cover
    pass


def node_dtypes(node) -> list:
    """numpy dtypes of the node's inputs and outputs (None for types without one)."""
    spec = node.spec
    return [d.base.numpy for d in (*spec.input_dtypes(node), *spec.output_dtypes(node))]


def dtype_problem(node, half: bool, complex_ok: bool) -> str | None:
    for dtype in node_dtypes(node):
        if dtype is None or dtype == object or dtype.kind not in "biufcV":
            return f"{node.op}: {dtype if dtype is not None else 'a non-numeric'} tensors stay in the interpreter"
        if dtype in _HALF and not half:
            return (f"{node.op} on {dtype}: TensorFlow rounds half precision after every operation, "
                    f"XLA may not")
        if dtype.kind == "V" and dtype not in _HALF:
            return f"{node.op}: {dtype} tensors stay in the interpreter"
        if dtype.kind == "c" and not complex_ok:
            return f"{node.op} on {dtype}: no complex lowering"
    return None


def lowering(*ops: str, static_inputs: tuple[int, ...] = (), supports: Callable | None = None,
             profitable: Callable | None = None, half: bool = False, complex_ok: bool = False,
             traced_ok: tuple[int, ...] = ()):
    """Register fn(ctx, *inputs) as the lowering of `ops`, with results cast to the output dtypes
    and the dtype checks above composed with `supports` (node -> reason or None)."""
    def check(node):
        return dtype_problem(node, half, complex_ok) or (supports(node) if supports else None)

    def register(fn):
        def run(ctx, *inputs):
            result = fn(ctx, *inputs)
            if isinstance(result, (tuple, list)):
                return tuple(typed(ctx, value, i) for i, value in enumerate(result))
            return typed(ctx, result, 0)
        run.__name__ = run.__qualname__ = fn.__name__
        run.__doc__ = fn.__doc__
        lowers(*ops, static_inputs=static_inputs, supports=check, profitable=profitable, traced_ok=traced_ok)(run)
        return fn
    return register


def typed(ctx, value, index: int):
    want = np.dtype(ctx.out_dtype(index))
    value = ctx.jnp.asarray(value)
    return value if value.dtype == want else value.astype(want)


def static_ints(value) -> list[int]:
    """A static input (numpy) as a flat list of Python ints."""
    return [int(v) for v in np.asarray(value).reshape(-1).tolist()]


def static_int(value) -> int:
    return int(np.asarray(value).reshape(()))


def const(ctx, value, like):
    """A constant of `like`'s dtype (no weak-typed Python scalar promotion)."""
    return ctx.jnp.asarray(value, dtype=like.dtype)


def is_integer(dtype) -> bool:
    return np.dtype(dtype).kind in "iu"


def is_float(dtype) -> bool:
    return np.dtype(dtype).kind == "f" or np.dtype(dtype) in _HALF


def attr_is(name: str, *allowed):
    """A `supports` check: the node's attr `name` must be one of `allowed`."""
    def check(node):
        value = node.attr(name, None)
        if value not in allowed:
            return f"{node.op} with {name}={value!r} has no lowering"
        return None
    return check


def traced_kernel(ctx, *inputs):
    """The node's interpreter kernel run with jax.numpy as its array module: for kernels written
    against `xp` that take their metadata (sizes, offsets) from static inputs on the host and
    never write into arrays, tracing them gives the interpreter's semantics by construction."""
    from ...exec.kernels import CPU, KernelContext, bind
    from ...exec.kernels import lookup as kernel_lookup

    node = ctx.node
    kernel_ctx = KernelContext(ctx.jnp, node.name, node.op, node.spec.output_dtypes(node), CPU)
    return bind(kernel_lookup(node.op, CPU), node)(kernel_ctx, *inputs)


def all_of(*checks):
    def check(node):
        for one in checks:
            reason = one(node)
            if reason:
                return reason
        return None
    return check
