"""Compile a graph into an execution plan for one device: integer-indexed items with their
kernels bound, output edge lists, initial pending counts, and per-frame layouts.

Everything the executor needs per node is decided here once, so the hot loop only indexes lists.
"""
from __future__ import annotations

from collections.abc import Callable, Set
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidGraphError, RuntimeFailure, UsageError
from ..ir import Graph, Node
from . import kernels, output_bound
from ..partition.collectives import COLLECTIVE_OPS
from .collective.spec import bind as bind_collective
from .collective.spec import resolve_if_needed
from .dead import DEAD
from .kernels import KernelContext

if TYPE_CHECKING:   # devices.py asks this module which ops run without a kernel
    from .devices import Device

# How the executor treats a node (plain ints: compared in the hot loop). The kinds from ENTER up
# move values between frames or iterations; the others deliver within their own iteration.
# SEND/RECV are the transfer nodes of a partitioned graph (they meet in a Rendezvous). ASYNC items
# run an asynchronous kernel (registry.py): started by the scheduling loop, finished by a callback.
# COLLECTIVE items are members of a collective (exec/collective/): they talk to their peers
# through the rendezvous, as transfers do, and finish like a RECV.
(NORMAL, MERGE, SWITCH, LOOP_COND, CONTROL_TRIGGER, FED, SEND, RECV, ASYNC, COLLECTIVE,
 ENTER, EXIT, NEXT_ITERATION) = range(13)
# Kinds that finish later, through the step's completion queue, without holding a thread.
WAITING_KINDS = (RECV, ASYNC, COLLECTIVE)
# Kinds that need the step's rendezvous.
TALKING_KINDS = (SEND, RECV, COLLECTIVE)
_KIND_OF_OP = {
    "Merge": MERGE, "RefMerge": MERGE, "Switch": SWITCH, "RefSwitch": SWITCH,
    "Enter": ENTER, "RefEnter": ENTER, "Exit": EXIT, "RefExit": EXIT,
    "NextIteration": NEXT_ITERATION, "RefNextIteration": NEXT_ITERATION,
    "LoopCond": LOOP_COND, "ControlTrigger": CONTROL_TRIGGER,
    "_Send": SEND, "_HostSend": SEND, "_Recv": RECV, "_HostRecv": RECV,
    **{op: COLLECTIVE for op in COLLECTIVE_OPS},
}


# Elementwise kernels on inputs at least this big are worth a thread-pool hop (Step._wants_pool in step.py).
BIG_INPUT = 1 << 16


# A bound kernel: called as kernel(ctx, *inputs), it returns one output or a tuple of them.
Kernel = Callable[..., Any]


def _runs_no_kernel(ctx: KernelContext | None, *inputs: object) -> Any:
    """The kernel of an item the executor runs itself (control flow, transfers, fed values):
    no path calls it; if one ever does, it says so instead of computing something."""
    raise RuntimeFailure("this node has no kernel: the executor runs it itself")


def call_kernel(item: "Item", inputs) -> tuple:
    """`item`'s kernel on `inputs`: its outputs as a tuple, checked against the op's output count.
    (A plain function: the executors' hot paths call it for every cheap node.)"""
    outputs = item.kernel(item.ctx, *inputs)
    if type(outputs) is not tuple:
        if item.num_outputs != 1:
            raise RuntimeFailure(f"kernel returned 1 output, the op has {item.num_outputs}")
        return (outputs,)
    if len(outputs) != item.num_outputs:
        raise RuntimeFailure(f"kernel returned {len(outputs)} outputs, the op has {item.num_outputs}")
    return outputs


def runs_without_kernel(op: str) -> bool:
    """Control-flow, transfer and collective ops are run by the executor itself, not by kernels."""
    return op in _KIND_OF_OP


@dataclass(eq=False, slots=True)
class Item:
    """One node as the executor sees it (slots: the executor reads its fields for every node)."""

    id: int
    node: Node
    kind: int
    frame: "FrameTemplate"
    local: int                   # index within its frame's per-iteration arrays
    input_base: int              # first slot of its inputs in its frame's input buffer
    num_inputs: int
    num_control_inputs: int
    num_outputs: int
    kernel: Kernel = _runs_no_kernel   # bound kernel callable (NORMAL and ASYNC items)
    ctx: KernelContext | None = None   # bound with the kernel (NORMAL and ASYNC items)
    expensive: bool = False
    intra_op: bool = False       # splits its own work over the threads it is granted
    # Nodes whose result needs no kernel call (CPU only): FORWARDS passes its input on (Identity),
    # FIXED always gives `fixed_outputs` (Const). The counting loop takes the shortcut where no
    # recorder, numerics check or stream needs to see the kernel run.
    shortcut: int = 0
    fixed_outputs: tuple = ()
    # out_edges[port] = [(dst item, dst slot), ...]; control_out = [dst item, ...]
    out_edges: list = field(default_factory=list)
    control_out: list = field(default_factory=list)
    # Enter only: the child frame and whether the value is a loop constant.
    child_frame: "FrameTemplate | None" = None
    is_constant: bool = False
    # Preallocated for the hot loop: the value that clears its input slots, its outputs when dead.
    empty_inputs: list = field(default_factory=list)
    dead_outputs: tuple = ()
    # [(port, [(dst, dst.local, slot index in dst's frame buffer)] of consumers that are not
    # Merges, [(dst, dst.local, slot, dst arity)] of Merges)] for the ports somebody consumes:
    # what delivery walks (frames.py).
    live_ports: list = field(default_factory=list)
    # Merge only: its value_index outputs, made once.
    value_indices: tuple = ()
    # _Send/_Recv only: (send_device, recv_device, tensor_name), the static part of the key.
    transfer_key: tuple = ()
    # COLLECTIVE only: its group, rank and op (a collective.spec.CollectiveSpec).
    collective: Any = None

    @property
    def name(self) -> str:
        return self.node.name


@dataclass(eq=False)
class FrameTemplate:
    """The static layout of one loop frame (or the root): its items and initial counts."""

    name: str
    parent: "FrameTemplate | None"
    items: list[Item] = field(default_factory=list)
    num_slots: int = 0
    initial_pending: list[int] = field(default_factory=list)
    num_enters: int = 0
    parallel_iterations: int = 1
    exits: list[Item] = field(default_factory=list)
    # Set by sequential_loop.prepare: how a qualifying loop runs without dependency counting, and
    # why another does not ("" when it qualifies; None until decided).
    sequential: object = None
    sequential_reason: str | None = None


@dataclass
class Plan:
    items: list[Item]
    root: FrameTemplate
    frames: dict[str, FrameTemplate]
    item_of: dict[str, Item]
    device: Device

    @property
    def sources(self) -> list[Item]:
        """Root-frame items with nothing to wait for."""
        return [it for it in self.root.items if self.root.initial_pending[it.local] == 0]


def compile_plan(graph: Graph, device: Device, fed_nodes: Set[str] = frozenset()) -> Plan:
    """Build the plan for running `graph` on `device`. `fed_nodes` are nodes whose outputs are
    supplied by the caller (they run no kernel). Raises UsageError for an op without a kernel on
    the device."""
    info = graph.frames()
    if info.problems:
        raise InvalidGraphError(info.problems[0])
    templates = {name: FrameTemplate(name, None) for name in info.frames}
    for name, frame in info.frames.items():
        templates[name].parent = templates[frame.parent.name] if frame.parent is not None else None
        templates[name].parallel_iterations = max(1, frame.parallel_iterations)

    if any(node.op in COLLECTIVE_OPS for node in graph.nodes):
        resolve_if_needed(graph, device.name)
    items: list[Item] = []
    item_of: dict[str, Item] = {}
    for node in graph.topological_order():
        template = templates[info.frame_of[node].name]
        kind = FED if node.name in fed_nodes else _KIND_OF_OP.get(node.op, NORMAL)
        num_inputs = 0 if kind == FED else len(node.inputs)
        item = Item(id=len(items), node=node, kind=kind, frame=template, local=len(template.items),
                    input_base=template.num_slots, num_inputs=num_inputs,
                    num_control_inputs=0 if kind == FED else len(node.control_inputs),
                    num_outputs=node.num_outputs)
        item.out_edges = [[] for _ in range(item.num_outputs)]
        item.empty_inputs = [None] * num_inputs
        item.dead_outputs = (DEAD,) * item.num_outputs
        template.items.append(item)
        template.num_slots += num_inputs
        items.append(item)
        item_of[node.name] = item
        if kind == EXIT:
            template.exits.append(item)
        if kind == ENTER:
            item.child_frame = templates[node.attr("frame_name")]
            item.child_frame.num_enters += 1
            item.is_constant = bool(node.attr("is_constant"))
        elif kind == NORMAL:
            _bind_kernel(item, device)
        elif kind in (SEND, RECV):
            item.transfer_key = (node.attr("send_device"), node.attr("recv_device"), node.attr("tensor_name"))
        elif kind == COLLECTIVE:
            item.collective = bind_collective(graph, node, device.name)

    for item in items:
        if item.kind == FED:
            continue
        for slot, ref in enumerate(item.node.inputs):
            item_of[ref.node.name].out_edges[ref.index].append((item, slot))
        for control in item.node.control_inputs:
            item_of[control.name].control_out.append(item)

    for item in items:
        item.live_ports = [(port, [(dst, dst.local, dst.input_base + slot) for dst, slot in edges if dst.kind != MERGE],
                            [(dst, dst.local, dst.input_base + slot, dst.num_inputs) for dst, slot in edges
                             if dst.kind == MERGE])
                           for port, edges in enumerate(item.out_edges) if edges]
        if item.kind == MERGE:
            item.value_indices = tuple(np.asarray(i, dtype=np.int32) for i in range(item.num_inputs))
    for template in templates.values():
        template.initial_pending = [_initial_pending(it) for it in template.items]
    return Plan(items, templates[""], templates, item_of, device)


def _initial_pending(item: Item) -> int:
    if item.kind == MERGE:
        # As in TensorFlow: bit 0 is set while no live data input has arrived, and each control
        # input counts 2, so the Merge is ready exactly when pending reaches 1 -> 0 transitions.
        return 2 * item.num_control_inputs + 1
    return item.num_inputs + item.num_control_inputs


def _bind_kernel(item: Item, device) -> None:
    node = item.node
    kernel_def = kernels.lookup(node.op, device.kernel_device_type)
    if kernel_def is None:
        raise UsageError(f"node '{node.name}': op {node.op} has no {device.kernel_device_type} kernel",
                         hint="place it on a device that has one")
    try:
        item.kernel = kernels.bind(kernel_def, node)
        if output_bound.sizes_from_values(node):
            item.kernel = output_bound.bounded(item.kernel, node)
    except KeyError as exc:
        raise InvalidGraphError(f"node '{node.name}' ({node.op}): {exc.args[0]}") from None
    output_dtypes = node.spec.output_dtypes(node) if node.spec else []
    item.ctx = KernelContext(device.xp, node.name, node.op, output_dtypes, device)
    item.expensive = kernel_def.expensive
    item.intra_op = kernel_def.intra_op
    if kernel_def.asynchronous:
        item.kind = ASYNC
    if node.op in _CONSTANTS:
        _bind_constant(item)
    elif device.kernel_device_type == "CPU" and node.op in _FORWARDING and item.kernel is kernel_def.fn:
        item.shortcut = FORWARDS   # (not wrapped by a bound)


# A Const's value is made once here, on its device, and every step and loop iteration reuses that
# array (the shortcut): free on the CPU (asarray of an array is the array); on a GPU the upload
# happens once per plan, as TensorFlow's Const kernel holds its device tensor, instead of copying
# the weights to the device on every step.
_CONSTANTS = ("Const", "HostConst")
# Ops whose CPU kernel returns its one input unchanged (kernels/core.py).
_FORWARDING = ("Identity", "Snapshot", "StopGradient", "PreventGradient")
NO_SHORTCUT, FORWARDS, FIXED = 0, 1, 2


def _bind_constant(item: Item) -> None:
    try:
        value = item.kernel(item.ctx)
    except Exception:   # a bad value: the kernel reports it, naming the node, when it runs
        return
    item.kernel = lambda ctx, _value=value: _value
    item.shortcut, item.fixed_outputs = FIXED, (value,)
