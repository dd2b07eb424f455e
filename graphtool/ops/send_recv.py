"""Cross-device transfers: _Send/_Recv and their host-memory forms.

Partitioning cuts every edge between devices into a _Send on the producer's device and a _Recv
on the consumer's; the pair meets in the rendezvous under a key built from tensor_name, the two
devices and send_device_incarnation. A receive waits for its peer, so _Recv/_HostRecv are
asynchronous (TensorFlow runs them as AsyncOpKernels). The collectives, which travel through the
same rendezvous, are declared in collective.py.
"""
from __future__ import annotations

from ..shapes import Shape
from .inference import InferenceContext, no_outputs, unchanged
from .registry import register

_TRANSFER_ATTRS = ["tensor_name: string", "send_device: string", "send_device_incarnation: int",
                   "recv_device: string", "client_terminated: bool = false"]


def _recv_shape(ctx: InferenceContext) -> Shape:
    """Unknown, as in TensorFlow, unless the node carries an `_output_shapes` hint (partitioning
    may copy the sent tensor's shape there)."""
    hint = ctx.node.attr("_output_shapes", None)
    return hint[0] if hint and len(hint) == 1 else Shape.unknown()


for _name in ("_Send", "_HostSend"):
    register(_name, inputs=["tensor: T"], attrs=["T: type", *_TRANSFER_ATTRS],
             shape=no_outputs, stateful=True)
for _name in ("_Recv", "_HostRecv"):
    register(_name, outputs=["tensor: tensor_type"], attrs=["tensor_type: type", *_TRANSFER_ATTRS],
             shape=_recv_shape, stateful=True, is_async=True)
