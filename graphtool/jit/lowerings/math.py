"""Lowerings of the math family: elementwise arithmetic, unary functions, matrix products.

They keep TensorFlow's dtypes exactly (jax runs with x64 enabled, see graphtool/jit/__init__.py).
"""
from __future__ import annotations

from .registry import lowers


@lowers("Add", "AddV2")
def add(ctx, x, y):
    return ctx.jnp.add(x, y)


@lowers("Sub")
def sub(ctx, x, y):
    return ctx.jnp.subtract(x, y)


@lowers("Mul")
def mul(ctx, x, y):
    return ctx.jnp.multiply(x, y)


@lowers("Tanh")
def tanh(ctx, x):
    return ctx.jnp.tanh(x)


@lowers("MatMul")
def matmul(ctx, a, b):
    if ctx.attr("transpose_a", False):
        a = a.T
    if ctx.attr("transpose_b", False):
        b = b.T
    return ctx.jnp.matmul(a, b)
