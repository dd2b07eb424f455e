"""Lowering registry: how each op becomes JAX (and so XLA) operations inside a compiled cluster.

One lowering per op, grouped by family like the kernels, registered with a decorator:

    @lowers("Relu")
    def relu(ctx, x):
        return ctx.jnp.maximum(x, ctx.zero(x))

A lowering receives a LowerContext and its inputs positionally; it returns one array for a
single-output op or a tuple with one array per output. Inputs are traced JAX arrays, except the
ones named in `static_inputs` (shapes, axes, permutations, paddings...): those arrive as concrete
numpy arrays, because XLA needs them when it compiles. The clustering pass only puts a node in a
cluster when its static inputs can be known at compile time.

A lowering may decline a particular node (a dtype XLA lacks, an attr it does not handle) with
`supports=`: a function of the node returning None, or the reason the node stays in the
interpreter (`dftool run -v --jit` and `profile` report it).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import numpy as np

if TYPE_CHECKING:
    from ...ir import Node

_LOWERINGS: dict[str, "LoweringDef"] = {}


@dataclass(frozen=True)
class LoweringDef:
    op: str
    fn: Callable
    # Input positions that must be concrete (numpy) when the cluster is compiled; negative
    # positions count from the end (ConcatV2's axis is its last input).
    static_inputs: tuple[int, ...] = ()
    # node -> None when this lowering handles the node, else the reason it does not.
    supports: Callable | None = None
    # Chosen by measurement (see the family module): False keeps the op in the interpreter
    # because its interpreter kernel is faster than what XLA makes of it.
    profitable: Callable | None = None
    # Static inputs the lowering also takes traced (a dynamic path, e.g. StridedSlice's x[i] with
    # i a loop counter): they arrive as numpy when known at compile time, else as traced values.
    traced_ok: tuple[int, ...] = ()


@dataclass
class LowerContext:
    """What a lowering may ask about the node it lowers."""

    node: Node
    output_dtypes: list = field(default_factory=list)   # numpy dtypes, one per output
    jnp: object = None            # jax.numpy
    lax: object = None            # jax.lax

    def attr(self, name: str, default=None):
        return self.node.attr(name, default)

    @property
    def name(self) -> str:
        return self.node.name

    def out_dtype(self, index: int = 0):
        return self.output_dtypes[index]


def lowers(*ops: str, static_inputs: tuple[int, ...] = (), supports: Callable | None = None,
           profitable: Callable | None = None, traced_ok: tuple[int, ...] = ()):
    """Register the decorated function as the lowering of each op in `ops`."""
    def register(fn):
        for op in ops:
            if op in _LOWERINGS:
                raise ValueError(f"lowering for {op} registered twice")
            _LOWERINGS[op] = LoweringDef(op, fn, tuple(static_inputs), supports, profitable, tuple(traced_ok))
        return fn
    return register


def lookup(op: str) -> LoweringDef | None:
    return _LOWERINGS.get(op)


def all_lowerings() -> dict[str, LoweringDef]:
    return dict(_LOWERINGS)


def static_slots(lowering: "LoweringDef | None", num_inputs: int) -> tuple[int, ...]:
    """The input slots of a node that must be known when compiling (negative positions in
    `static_inputs` count from the end, for ops with a variable number of inputs)."""
    if lowering is None:
        return ()
    slots = []
    for slot in lowering.static_inputs:
        index = slot + num_inputs if slot < 0 else slot
        if 0 <= index < num_inputs:
            slots.append(index)
    return tuple(slots)


def why_not(node) -> str | None:
    """None when the node can be lowered, else the reason it stays in the interpreter."""
    lowering = lookup(node.op)
    if lowering is None:
        return f"no lowering for {node.op}"
    if lowering.supports is not None:
        reason = lowering.supports(node)
        if reason:
            return reason
    if lowering.profitable is not None and not lowering.profitable(node):
        return f"{node.op}: the interpreter's kernel is faster here"
    return None


def is_static(value) -> bool:
    """Whether a lowering's input is a compile-time (numpy) value rather than a traced one."""
    return isinstance(value, (np.ndarray, np.generic))


def as_numpy(value) -> np.ndarray:
    """A static input as a numpy array."""
    return np.asarray(value)
