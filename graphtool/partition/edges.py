"""Cutting the edges between devices into `_Send`/`_Recv` pairs.

    before: a (cpu:0) ─► b (cpu:1), a ─► c (cpu:1), a ─► d (cpu:2)
    after:  a ─► a/_send_to_cpu_1 ┄┄ a/_recv_on_cpu_1 ─► b, c      one Recv per (tensor, device)
            a ─► a/_send_to_cpu_2 ┄┄ a/_recv_on_cpu_2 ─► d

    before: ^p (cpu:0) ─► q (cpu:1)                                control edge
    after:  ^p ─► p/_ctrl_to_cpu_1 (Const, 0 floats) ─► _Send ┄┄ _Recv ─► p/_ctrl_on_cpu_1 (Identity) ─► ^q

(The Identity makes `q` dead when `p` was dead, as it would be on one device: a `_Recv` runs even
with dead inputs, so its own control edges say nothing about the value it received.)

Both nodes of a pair carry TensorFlow's attrs: `tensor_name`, `send_device`, `recv_device`,
`send_device_incarnation` and `client_terminated` (false), plus `T` on the Send and
`tensor_type` on the Recv. `tensor_name` is `edge_<n>_<tensor>` (TensorFlow writes
`edge_<edge id>_<producer>`; we add the port, so a Send names the exact tensor it carries, and
count transfers from 0 in graph order). `send_device_incarnation` is always 1: dftool's devices
live in one process for one run, so there is never an older incarnation of a device to tell
apart. The Recv carries the sent tensor's inferred shape as `_output_shapes`, which the `_Recv`
shape function reads, so shape inference stays as informative as before the cut.

A Recv inside a loop frame takes a control input from its device's control skeleton (see
control_flow.py), which puts it in the frame and makes it run once per iteration; the runtime keys
each transfer by frame and iteration, so iterations never mix. A Send sits next to its producer, in
the producer's frame (hanging from its own device's skeleton too, when there is one). Dead values cross as dead (the runtime sends a dead flag), so a cond whose
branches span devices needs nothing more.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import dtypes
from ..dtypes import DType
from ..errors import InvalidGraphError
from ..ir import Graph, Node, TensorRef
from ..ir.frames import Frame
from ..ops import opaque
from ..shape_inference import ShapeResult
from ..shapes import Shape, has_rank
from .compress import Compressor
from .control_flow import LoopSkeletons

SEND_DEVICE_INCARNATION = 1
_EMPTY = np.zeros([0], np.float32)


@dataclass
class Transfer:
    """One `_Send`/`_Recv` pair."""

    tensor_name: str
    carries: str          # the tensor ('a:1') or, for a control edge, '^node'
    send: Node
    recv: Node
    frame: str            # '' for the root frame
    sent_dtype: DType
    original_dtype: DType
    elements: int | None  # per transfer, when the shape is fully known

    @property
    def is_control(self) -> bool:
        return self.carries.startswith("^")

    @property
    def bytes_sent(self) -> int | None:
        return None if self.elements is None else self.elements * self.sent_dtype.itemsize

    @property
    def bytes_uncompressed(self) -> int | None:
        return None if self.elements is None else self.elements * self.original_dtype.itemsize


class EdgeCutter:
    """Replaces every edge between two devices by a transfer (see the module docstring)."""

    def __init__(self, graph: Graph, labels: dict[str, str], skeletons: LoopSkeletons,
                 compressor: Compressor, shapes: ShapeResult):
        self.graph = graph
        self.labels = labels
        self.skeletons = skeletons
        self.compressor = compressor
        self.shapes = shapes
        self.transfers: list[Transfer] = []
        self.control_edges = 0           # control edges carried (several may share one transfer)
        self._data: dict[tuple[TensorRef, str], TensorRef] = {}
        self._control: dict[tuple[Node, str], Node] = {}
        self._tensor_names = {n.attr("tensor_name") for n in graph.nodes if n.op in ("_Send", "_Recv")}

    def cut_all(self) -> None:
        """Cut every cross-device data and control edge of the graph."""
        frame_of = self.graph.frames().frame_of
        data, control = crossing_edges(self.graph)
        for consumer, slot, ref in data:
            _check_value_edge(consumer, slot, ref)
            consumer.set_input(slot, self._received(ref, consumer.device, frame_of[consumer]))
        for consumer, producer in control:
            recv = self._received_control(producer, consumer.device, frame_of[consumer])
            consumer.remove_control_input(producer)
            consumer.add_control_input(recv)
            self.control_edges += 1

    # --- data -------------------------------------------------------------------------------------
    def _received(self, ref: TensorRef, device: str, frame: Frame) -> TensorRef:
        """The tensor `ref` as seen on `device`: one Recv (and widening Cast) per device."""
        key = (ref, device)
        if key not in self._data:
            dtype = opaque.dtype_of(ref).base
            if dtype is dtypes.INVALID:
                raise InvalidGraphError(
                    f"'{ref.name}' ({ref.node.op}, an op dftool does not know) crosses from "
                    f"{ref.node.device} to {device}, but nothing in the graph tells its dtype",
                    hint="place it on its consumers' device (dftool place puts unknown ops "
                         "with their neighbours)")
            compressed = self.compressor.applies(dtype, ref.node.device, device)
            sent = self.compressor.narrow(ref) if compressed else ref
            sent_dtype = dtype
            if compressed:
                assert self.compressor.narrow_dtype is not None   # (applies() said so)
                sent_dtype = self.compressor.narrow_dtype
            suffix = f"_{ref.index}" if ref.index else ""
            recv = self._pair(sent, sent_dtype, ref.name, (ref.node.name, suffix), device, frame,
                              original_dtype=dtype, shape=self.shapes.shape(ref))
            self._data[key] = self.compressor.widen(recv.output(0)) if compressed else recv.output(0)
        return self._data[key]

    # --- control ----------------------------------------------------------------------------------
    def _received_control(self, producer: Node, device: str, frame: Frame) -> Node:
        """A node on `device` that completes after `producer`, dead when it was (one per
        producer and device)."""
        key = (producer, device)
        if key not in self._control:
            graph, label = self.graph, self.labels[device]
            dummy = graph.add_node("Const", graph.unique_name(f"{producer.name}/_ctrl_to_{label}"),
                                   control_inputs=[producer], device=producer.device,
                                   attrs={"dtype": dtypes.float32, "value": _EMPTY})
            recv = self._pair(dummy.output(0), dtypes.float32, f"^{producer.name}", (producer.name, "_ctrl"),
                              device, frame, original_dtype=dtypes.float32, shape=Shape([0]))
            # A Recv's own control edges carry its *input's* deadness (it runs even when dead);
            # an Identity of the received value carries the sender's, as TensorFlow's AddRecv does.
            self._control[key] = graph.add_node("Identity", graph.unique_name(f"{producer.name}/_ctrl_on_{label}"),
                                                inputs=[recv.output(0)], device=device,
                                                attrs={"T": dtypes.float32})
        return self._control[key]

    # --- the pair ---------------------------------------------------------------------------------
    def _pair(self, sent: TensorRef, dtype: DType, carries: str, naming: tuple[str, str], device: str,
              frame: Frame, *, original_dtype: DType, shape: Shape) -> Node:
        """Add the Send (next to `sent`) and the Recv (on `device`); return the Recv. They are
        named `BASE/_sendSUFFIX_to_DEVICE` and `BASE/_recvSUFFIX_on_DEVICE` for naming (BASE, SUFFIX)."""
        graph, label = self.graph, self.labels[device]
        base, suffix = naming
        attrs: dict[str, Any] = {"tensor_name": self._tensor_name(carries), "send_device": sent.node.device,
                 "send_device_incarnation": SEND_DEVICE_INCARNATION, "recv_device": device,
                 "client_terminated": False}
        send = graph.add_node("_Send", graph.unique_name(f"{base}/_send{suffix}_to_{label}"),
                              inputs=[sent], device=sent.node.device, attrs={"T": dtype, **attrs})
        recv = graph.add_node("_Recv", graph.unique_name(f"{base}/_recv{suffix}_on_{label}"),
                              device=device, attrs={"tensor_type": dtype, **attrs})
        if has_rank(shape):
            recv.set_attr("_output_shapes", [shape], kind="list(shape)")
        if not frame.is_root:
            recv.add_control_input(self.skeletons.anchor(frame.name, device))
            sender_anchor = self.skeletons.anchor_if_any(frame.name, send.device)
            if sender_anchor is not None:
                send.add_control_input(sender_anchor)
        self.transfers.append(Transfer(attrs["tensor_name"], carries, send, recv, frame.name, dtype,
                                       original_dtype, shape.num_elements() if shape.fully_defined else None))
        return recv

    def _tensor_name(self, carries: str) -> str:
        count = len(self.transfers)
        name = f"edge_{count}_{carries}"
        while name in self._tensor_names:  # a graph partitioned before may use the same names
            count += 1
            name = f"edge_{count}_{carries}"
        self._tensor_names.add(name)
        return name


def crossing_edges(graph: Graph) -> tuple[list, list]:
    """([(consumer, slot, ref)], [(consumer, control producer)]) for edges between devices."""
    data, control = [], []
    for node in graph.nodes:
        data += [(node, slot, ref) for slot, ref in enumerate(node.inputs) if ref.node.device != node.device]
        control += [(node, p) for p in node.control_inputs if p.device != node.device]
    return data, control


def _check_value_edge(consumer: Node, slot: int, ref: TensorRef) -> None:
    """A reference (a variable's storage) cannot travel: its consumer must share its device."""
    if consumer.spec is None:
        return  # an opaque consumer: whether it wants a reference is unknown; TensorFlow will check
    wanted = consumer.spec.input_dtypes(consumer)[slot]
    if wanted.is_ref:
        raise InvalidGraphError(
            f"node '{consumer.name}' ({consumer.op}) on {consumer.device} needs a reference to "
            f"'{ref.name}' on {ref.node.device}; references cannot cross devices",
            hint="place them on one device (dftool place keeps reference edges together)")
