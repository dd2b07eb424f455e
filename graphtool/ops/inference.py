"""What a shape function sees (InferenceContext) and the helpers most shape functions share.

A shape function takes an InferenceContext and returns one Shape per output (a single Shape is
accepted for single-output ops). It raises ShapeError (via ctx.fail) when inputs cannot fit.
A value function returns the (partial) value of output 0 as a numpy array: numeric when fully
known, dtype=object with None entries when only partly known; or None when nothing is known.
Ops with several outputs (ShapeN, Split, BroadcastGradientArgs) return PerOutput([...]) with one
such value per output.

Values are small by design (shape vectors, axes, sizes): a value function that creates an array
from sizes (Fill, Range, Tile, BroadcastTo, Concat, ...) first asks `may_build(count)` with the
element count it computed from shapes and input values, so that a few bytes of graph claiming a
huge tensor cost nothing; the engine also skips value functions whose output shapes are too big.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn, overload

import numpy as np

from ..dtypes import DType
from ..shapes import MAX_RANK, Shape, ShapeError, broadcast_shapes, has_rank

if TYPE_CHECKING:
    from ..shapes import RankedShape


# Values bigger than this are not carried through inference (they only matter for their shapes).
MAX_VALUE_ELEMENTS = 4096


def may_build(*counts: int | None) -> bool:
    """Whether a value of `counts` elements in all (products of known dims; None = unknown) may be
    materialised during inference. Call it before creating the array, never after."""
    known = [c for c in counts if c is not None and c >= 0]
    return len(known) == len(counts) and sum(known) <= MAX_VALUE_ELEMENTS


def element_product(dims) -> int | None:
    """The element count of integer `dims` (None if one is unknown or negative); once past
    MAX_VALUE_ELEMENTS it stops multiplying and returns a count that is merely too big, so that
    thousands of huge dims never make a huge integer."""
    dims = list(dims)
    if any(d is None or int(d) < 0 for d in dims):
        return None
    if any(int(d) == 0 for d in dims):
        return 0
    total = 1
    for dim in dims:
        total *= int(dim)
        if total > MAX_VALUE_ELEMENTS:
            break
    return total


class PerOutput(list):
    """A value function's result for a multi-output op: one (partial) value per output."""


class HandleData:
    """What a resource handle (TensorArray, stack, variable) or a TensorList variant knows of the
    tensors it holds.

    One object is shared by every tensor that forwards the same handle (Enter, Identity, Switch,
    ...), so element shapes learned from writes are seen by later reads, as TensorFlow's graph
    construction sees them. A TensorList's handle data also has its element dtype (TensorFlow's
    ShapeAndType); list ops make a new object per output instead of refining a shared one."""

    __slots__ = ("element_shape", "dtype")

    def __init__(self, element_shape: Shape | None = None, dtype: DType | None = None):
        self.element_shape = Shape.of(element_shape) if element_shape is not None else Shape.unknown()
        self.dtype = dtype

    def learn(self, shape: Shape) -> None:
        """Refine the element shape with a written element's shape (relaxing on disagreement)."""
        try:
            self.element_shape = self.element_shape.merge(shape)
        except ShapeError:
            self.element_shape = relax(self.element_shape, shape)


class InferenceContext:
    __slots__ = ("node", "_shapes", "_dtypes", "_values", "_available", "output_dtypes", "_handles",
                 "output_handles")

    def __init__(self, node, shapes, dtypes_, values, available, output_dtypes, handles=None):
        self.node = node
        self._shapes: list[Shape] = shapes
        self._dtypes: list[DType] = dtypes_
        self._values: list[np.ndarray | None] = values
        self._available: list[bool] = available
        self.output_dtypes: list[DType] = output_dtypes
        self._handles: list[HandleData | None] = handles or [None] * len(shapes)
        # Output index -> HandleData, set by shape functions of ops that create handles.
        self.output_handles: dict[int, HandleData] = {}

    def handle(self, i: int) -> HandleData | None:
        """The HandleData travelling with resource input i, if any."""
        return self._handles[i]

    # --- node ---------------------------------------------------------------------------------
    @property
    def op(self) -> str:
        return self.node.op

    def attr(self, name: str, default=None):
        try:
            return self.node.attr(name)
        except KeyError:
            if default is not None:
                return default
            raise

    @property
    def num_inputs(self) -> int:
        return len(self._shapes)

    @property
    def num_outputs(self) -> int:
        return len(self.output_dtypes)

    # --- inputs -------------------------------------------------------------------------------
    def shape(self, i: int) -> Shape:
        return self._shapes[i]

    def shapes(self) -> list[Shape]:
        return list(self._shapes)

    def dtype(self, i: int) -> DType:
        return self._dtypes[i]

    def available(self, i: int) -> bool:
        """False for a loop back edge whose value has not been inferred yet."""
        return self._available[i]

    def value(self, i: int) -> np.ndarray | None:
        """The input's value if it is fully known statically."""
        value = self._values[i]
        if value is None or value.dtype == object and self._dtypes[i].name != "string":
            return None
        return value

    def partial_value(self, i: int) -> np.ndarray | None:
        """The input's value with None where unknown (object array), or None if nothing is known."""
        value = self._values[i]
        if value is None:
            return None
        return value if value.dtype == object else value.astype(object)

    def int_list(self, i: int) -> list[int] | None:
        """A fully known integer input as a list (e.g. an axis list), else None."""
        value = self.value(i)
        return None if value is None else [int(v) for v in np.ravel(value)]

    def shape_from_tensor(self, i: int) -> Shape:
        """Interpret input i (a 1-D int tensor such as Reshape's shape) as a Shape, using whatever
        is statically known of its value; -1 entries are unknown dims."""
        partial = self.partial_value(i)
        if partial is not None:
            if partial.ndim == 0:
                # Only a scalar -1 is a valid shape tensor of rank 0: it means "unknown rank".
                if partial.item() is None or int(partial.item()) == -1:
                    return Shape.unknown()
                self.fail(f"input {i} is a scalar {partial.item()}, not a shape vector")
            return Shape([None if v is None or int(v) < 0 else int(v) for v in partial.ravel()])
        shape = self.shape(i)
        if has_rank(shape) and shape.rank == 1 and shape[0] is not None:
            if shape[0] > MAX_RANK:
                # A shape vector of 10**12 elements (a broadcast Sub of a huge constant) is no shape;
                # building its unknown dims would take terabytes.
                self.fail(f"input {i} has {shape[0]} elements, more than the {MAX_RANK} dimensions a shape may have")
            return Shape.unknown_of_rank(shape[0])
        if has_rank(shape) and shape.rank == 0:
            # A scalar -1 means "unknown rank" in TensorFlow's convention.
            return Shape.unknown()
        return Shape.unknown()

    # --- errors -------------------------------------------------------------------------------
    def fail(self, message: str) -> NoReturn:
        raise ShapeError(message)

    def with_rank(self, i: int, rank: int) -> RankedShape:
        try:
            return self.shape(i).with_rank(rank)
        except ShapeError:
            self.fail(f"input {i} must have rank {rank}, has shape {self.shape(i)}")

    def with_rank_at_least(self, i: int, rank: int) -> Shape:
        try:
            return self.shape(i).with_rank_at_least(rank)
        except ShapeError:
            self.fail(f"input {i} must have rank at least {rank}, has shape {self.shape(i)}")


# --- shared shape functions -----------------------------------------------------------------

def unchanged(ctx: InferenceContext) -> Shape:
    """Output 0 has the shape of input 0."""
    return ctx.shape(0)


def scalar(ctx: InferenceContext) -> Shape:
    return Shape.scalar()


def no_outputs(ctx: InferenceContext) -> list[Shape]:
    return []


def unknown_outputs(ctx: InferenceContext) -> list[Shape]:
    return [Shape.unknown()] * ctx.num_outputs


def broadcast_binary(ctx: InferenceContext) -> Shape:
    """numpy-style broadcasting of inputs 0 and 1."""
    try:
        return broadcast_shapes(ctx.shape(0), ctx.shape(1))
    except ShapeError:
        ctx.fail(f"shapes {ctx.shape(0)} and {ctx.shape(1)} are not broadcast-compatible")


def merge_all(ctx: InferenceContext, indices=None) -> Shape:
    """The most specific shape compatible with all the given inputs (default: all)."""
    indices = range(ctx.num_inputs) if indices is None else indices
    result = Shape.unknown()
    for i in indices:
        try:
            result = result.merge(ctx.shape(i))
        except ShapeError:
            ctx.fail(f"input shapes must be compatible, got {result} and {ctx.shape(i)}")
    return result


def relax(a: Shape, b: Shape) -> Shape:
    """The most specific shape that both a and b are instances of (dims that differ -> unknown)."""
    if not has_rank(a) or not has_rank(b) or a.rank != b.rank:
        return Shape.unknown()
    return Shape([x if x == y else None for x, y in zip(a.dims, b.dims)])


@overload
def normalize_axis(ctx: InferenceContext, axis: int, rank: int, what: str = ...) -> int: ...
@overload
def normalize_axis(ctx: InferenceContext, axis: int, rank: int | None, what: str = ...) -> int | None: ...
def normalize_axis(ctx: InferenceContext, axis: int, rank: int | None, what: str = "axis") -> int | None:
    """A non-negative axis, or None when the rank is unknown."""
    if rank is None:
        return None
    if not -rank <= axis < rank:
        ctx.fail(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank
