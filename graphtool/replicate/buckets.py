"""Fusion buckets, as Horovod's tensor fusion: gradients of one dtype, in the order the updates
come, are packed into buckets of at most `fuse_bytes` bytes; each bucket is one all-reduce of the
flattened, concatenated tensors. A tensor larger than the limit, or of an unknown shape, is
reduced alone; `fuse_bytes` 0 turns fusion off."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..dtypes import DType
from ..ir import TensorRef


@dataclass
class Reduced:
    """One tensor to average: its dtype, static shape (None when unknown) and size in bytes."""
    key: TensorRef
    dtype: DType
    shape: tuple[int, ...] | None

    @property
    def elements(self) -> int | None:
        if self.shape is None:
            return None
        count = 1
        for dim in self.shape:
            count *= dim
        return count

    @property
    def nbytes(self) -> int | None:
        elements = self.elements
        return None if elements is None else elements * self.dtype.numpy_dtype.itemsize


@dataclass
class Bucket:
    dtype: DType
    members: list[Reduced] = field(default_factory=list)

    @property
    def fused(self) -> bool:
        return len(self.members) > 1

    @property
    def nbytes(self) -> int | None:
        sizes = [member.nbytes for member in self.members]
        return None if any(size is None for size in sizes) else sum(size for size in sizes if size is not None)


def plan_buckets(tensors: list[Reduced], fuse_bytes: int) -> list[Bucket]:
    """Greedy per dtype: a tensor joins its dtype's open bucket while the bucket stays within
    `fuse_bytes`, else it opens a new one. Buckets come in the order of their first tensor."""
    buckets: list[Bucket] = []
    open_bucket: dict[DType, Bucket] = {}
    for tensor in tensors:
        size = tensor.nbytes
        if size is None or fuse_bytes <= 0 or size > fuse_bytes:
            buckets.append(Bucket(tensor.dtype, [tensor]))
            continue
        current = open_bucket.get(tensor.dtype)
        if current is not None and (current.nbytes or 0) + size <= fuse_bytes:
            current.members.append(tensor)
            continue
        current = Bucket(tensor.dtype, [tensor])
        open_bucket[tensor.dtype] = current
        buckets.append(current)
    return buckets
