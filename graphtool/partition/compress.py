"""Lossy compression of float32 transfers (`--compress bf16|fp16`).

The paper's platform notes point out that a device computes far faster than data reaches it, and
TensorFlow's partitioner can cast a transfer to a 16-bit type on the sending side and back on the
receiving side. Only float32 tensors are narrowed; every other dtype travels as it is.

    before: x (float32, cpu:0) -> _Send -> _Recv -> y (cpu:1)
    after:  x -> Cast(bfloat16) -> _Send -> _Recv(bfloat16) -> Cast(float32) -> y

Casts round to nearest (Truncate=false): a bfloat16 round trip is then within a relative 2^-8 of
the original and a float16 one within 2^-11 for values in float16's normal range (TensorFlow's
own send-side bfloat16 cast truncates, which doubles the bfloat16 error). One narrowing Cast is
shared by every destination device of a tensor; each receiving device widens once.
"""
from __future__ import annotations

from .. import dtypes
from ..dtypes import DType
from ..errors import UsageError
from ..ir import Graph, TensorRef

COMPRESSED_DTYPES: dict[str, DType | None] = {"none": None, "bf16": dtypes.bfloat16, "fp16": dtypes.float16}


def compressed_dtype(mode: str) -> DType | None:
    """The 16-bit dtype for a --compress mode (None for 'none'); UsageError for another mode."""
    if mode not in COMPRESSED_DTYPES:
        raise UsageError(f"unknown --compress mode '{mode}'", hint="use none, bf16 or fp16")
    return COMPRESSED_DTYPES[mode]


class Compressor:
    """Adds the narrowing and widening Casts around transfers of float32 tensors."""

    def __init__(self, graph: Graph, mode: str = "none", across_tasks_only: bool = False):
        self.graph = graph
        self.mode = mode
        self.narrow_dtype = compressed_dtype(mode)
        # On a cluster only the network is worth narrowing for, not a CPU-GPU copy within a task.
        self.across_tasks_only = across_tasks_only
        self._narrowed: dict[TensorRef, TensorRef] = {}

    def applies(self, dtype: DType, send_device: str = "", recv_device: str = "") -> bool:
        """Whether a value of `dtype` travels compressed between these (canonical) devices."""
        if self.narrow_dtype is None or dtype.base is not dtypes.float32:
            return False
        return not self.across_tasks_only or _task(send_device) != _task(recv_device)

    def narrow(self, ref: TensorRef) -> TensorRef:
        """`ref` cast to the 16-bit dtype on its own device (one Cast per tensor)."""
        if ref not in self._narrowed:
            assert self.narrow_dtype is not None   # (callers ask `applies` first)
            suffix = f"_{ref.index}" if ref.index else ""
            cast = self._cast(ref, f"{ref.node.name}/_to_{self.mode}{suffix}", dtypes.float32,
                              self.narrow_dtype, ref.node.device)
            self._narrowed[ref] = cast.output(0)
        return self._narrowed[ref]

    def widen(self, received: TensorRef) -> TensorRef:
        """A received 16-bit value cast back to float32 on the receiving device."""
        node = received.node
        assert self.narrow_dtype is not None   # (only compressed transfers are widened)
        cast = self._cast(received, f"{node.name}/_to_float32", self.narrow_dtype, dtypes.float32, node.device)
        return cast.output(0)

    def _cast(self, ref: TensorRef, name: str, source: DType, target: DType, device: str):
        graph = self.graph
        return graph.add_node("Cast", graph.unique_name(name), inputs=[ref], device=device,
                              attrs={"SrcT": source, "DstT": target, "Truncate": False})


def _task(device: str) -> str:
    """'/job:worker/replica:0/task:1' of a canonical device name."""
    return device.rsplit("/device:", 1)[0]
