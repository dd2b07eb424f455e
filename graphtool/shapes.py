"""Static tensor shapes with unknown dimensions and unknown rank.

`Shape(None)` has unknown rank; a dim of `None` is unknown. Shapes are immutable and hashable.
"""
from __future__ import annotations

from collections.abc import Sized
from typing import TYPE_CHECKING, Iterable, Iterator, cast

from .proto.tensor_shape_pb2 import TensorShapeProto

if TYPE_CHECKING:
    from typing_extensions import TypeIs   # typing.TypeIs from Python 3.13


class ShapeError(ValueError):
    """Two shapes cannot be reconciled, or a shape does not fit an op's requirement."""


# TensorFlow's TensorShape::MaxDimensions(): no tensor has more dims. Checked before a shape is
# built, so that a shape vector of a billion entries (a Placeholder [1 << 30] used as Reshape's
# shape) is an error rather than a billion-entry tuple.
MAX_RANK = 254


class Shape:
    __slots__ = ("dims",)

    def __init__(self, dims: Iterable[int | None] | None):
        if dims is None:
            self.dims = None
        else:
            if isinstance(dims, Sized) and len(dims) > MAX_RANK:
                raise ShapeError(f"a shape of rank {len(dims)} is above TensorFlow's maximum rank {MAX_RANK}")
            self.dims = tuple(None if d is None or int(d) < 0 else int(d) for d in dims)
            if len(self.dims) > MAX_RANK:
                raise ShapeError(f"a shape of rank {len(self.dims)} is above TensorFlow's maximum rank {MAX_RANK}")

    # --- construction -------------------------------------------------------------------------
    @classmethod
    def unknown(cls) -> "Shape":
        return _UNKNOWN

    @classmethod
    def scalar(cls) -> "Shape":
        return _SCALAR

    @classmethod
    def unknown_of_rank(cls, rank: int) -> RankedShape:
        if rank > MAX_RANK:
            raise ShapeError(f"a shape of rank {rank} is above TensorFlow's maximum rank {MAX_RANK}")
        return cast("RankedShape", cls([None] * rank))   # built from a list: its rank is known

    @classmethod
    def of(cls, value) -> "Shape":
        """Coerce a Shape, a tuple/list of dims, or None (unknown)."""
        return value if isinstance(value, Shape) else cls(value)

    # --- queries ------------------------------------------------------------------------------
    @property
    def rank(self) -> int | None:
        return None if self.dims is None else len(self.dims)

    @property
    def known_rank(self) -> bool:
        return self.dims is not None

    @property
    def fully_defined(self) -> bool:
        return self.dims is not None and all(d is not None for d in self.dims)

    def num_elements(self) -> int | None:
        if self.dims is None:
            return None
        n = 1
        for d in self.dims:
            if d is None:
                return None
            n *= d
        return n

    def as_list(self) -> list[int | None]:
        if self.dims is None:
            raise ShapeError("shape of unknown rank has no dims")
        return list(self.dims)

    def __len__(self) -> int:
        if self.dims is None:
            raise ShapeError("shape of unknown rank has no length")
        return len(self.dims)

    def __iter__(self) -> Iterator[int | None]:
        if self.dims is None:
            raise ShapeError("shape of unknown rank is not iterable")
        return iter(self.dims)

    def __getitem__(self, index):
        if self.dims is None:
            return Shape.unknown() if isinstance(index, slice) else None
        if isinstance(index, slice):
            return Shape(self.dims[index])
        return self.dims[index]

    def __eq__(self, other) -> bool:
        if isinstance(other, Shape):
            return self.dims == other.dims
        if other is None or isinstance(other, (tuple, list)):
            return self.dims == (None if other is None else tuple(other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.dims)

    def __repr__(self) -> str:
        return f"Shape({self})"

    def __str__(self) -> str:
        if self.dims is None:
            return "<unknown>"
        return "[" + ",".join("?" if d is None else str(d) for d in self.dims) + "]"

    # --- combination --------------------------------------------------------------------------
    def is_compatible_with(self, other: "Shape | Iterable[int | None]") -> bool:
        other = Shape.of(other)
        if self.dims is None or other.dims is None:
            return True
        if len(self.dims) != len(other.dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self.dims, other.dims))

    def merge(self, other: "Shape") -> "Shape":
        """The most specific shape compatible with both; ShapeError if there is none."""
        other = Shape.of(other)
        if self.dims is None:
            return other
        if other.dims is None:
            return self
        if len(self.dims) != len(other.dims):
            raise ShapeError(f"shapes {self} and {other} have different ranks")
        merged = []
        for a, b in zip(self.dims, other.dims):
            if a is not None and b is not None and a != b:
                raise ShapeError(f"shapes {self} and {other} are incompatible")
            merged.append(a if a is not None else b)
        return Shape(merged)

    def with_rank(self, rank: int) -> RankedShape:
        if not has_rank(self):
            return Shape.unknown_of_rank(rank)
        if len(self.dims) != rank:
            raise ShapeError(f"shape {self} must have rank {rank}")
        return self

    def with_rank_at_least(self, rank: int) -> "Shape":
        if self.dims is not None and len(self.dims) < rank:
            raise ShapeError(f"shape {self} must have rank at least {rank}")
        return self

    def concatenate(self, other: "Shape | Iterable[int | None]") -> "Shape":
        other = Shape.of(other)
        if self.dims is None or other.dims is None:
            return Shape.unknown()
        return Shape(self.dims + other.dims)

    # --- protobuf -----------------------------------------------------------------------------
    def to_proto(self) -> TensorShapeProto:
        proto = TensorShapeProto()
        if self.dims is None:
            proto.unknown_rank = True
        else:
            for d in self.dims:
                proto.dim.add(size=-1 if d is None else d)
        return proto

    @classmethod
    def from_proto(cls, proto: TensorShapeProto) -> "Shape":
        if proto.unknown_rank:
            return _UNKNOWN
        return cls([d.size for d in proto.dim])


_UNKNOWN = Shape(None)
_SCALAR = Shape(())


def broadcast_shapes(a: Shape | Iterable[int | None], b: Shape | Iterable[int | None]) -> Shape:
    """numpy/TensorFlow broadcasting of two static shapes (unknown dims stay unknown unless forced)."""
    a, b = Shape.of(a), Shape.of(b)
    if a.dims is None or b.dims is None:
        return Shape.unknown()
    rank = max(len(a.dims), len(b.dims))
    pa = (1,) * (rank - len(a.dims)) + a.dims
    pb = (1,) * (rank - len(b.dims)) + b.dims
    out: list[int | None] = []
    for x, y in zip(pa, pb):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None and y is None:
            out.append(None)
        elif x is None or y is None:
            # An unknown dim against a known one > 1: the unknown must be 1 or equal to it. Against
            # 0 the unknown could be 1 (giving 0) or 0, but TensorFlow leaves it unknown.
            known = x if y is None else y
            out.append(known if known is not None and known > 1 else None)
        elif x == y:
            out.append(x)
        else:
            raise ShapeError(f"shapes {a} and {b} cannot be broadcast")
    return Shape(out)


if TYPE_CHECKING:
    class RankedShape(Shape):
        """What `has_rank` narrows a Shape to for the type checker: dims and rank are known."""

        dims: tuple[int | None, ...]

        @property
        def rank(self) -> int: ...


def has_rank(shape: Shape) -> TypeIs[RankedShape]:
    """`shape.known_rank`, in a form that tells the type checker that `dims` and `rank` are set.

        if not has_rank(data):
            return Shape.unknown()
        last = data.dims[data.rank - 1]
    """
    return shape.dims is not None
