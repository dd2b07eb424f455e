"""Whether a loop runs at all, told to every device that holds part of it.

A loop frame is entered once per iteration of its parent frame, and in some of those it does not
run: on an untaken cond branch, or in the final iteration of an outer loop, where the values
entering it are dead. On one device the executor sees this by itself (every Enter is dead, so the
loop never starts and each of its Exits leaves dead). Split over devices, each device's copy of the
frame must agree: a device whose copy ran while the leader's did not would wait forever for
predicates, and a device whose copy neither ran nor reported dead Exits would leave its peers
waiting for the values those Exits send.

So for each frame spanning devices one *liveness token* is made in the parent frame: a Const
(0 floats) with a control input from the value entering the real loop through its anchor Enter
(the initial value of a loop variable the predicate depends on). It is dead exactly when that
value is. Each device holding part of the frame reads the token (through a `_Recv` when it lives
elsewhere) into an Identity, `live_on(frame, device)`, which

- is the input of the device's control-skeleton Enter (control_flow.py), and
- becomes a control input of every real Enter into the frame on that device, so that when the
  loop does not run *all* of the device's Enters are dead, loop constants included, and the
  executor reports all of the device's Exits as dead to their consumers on other devices.

    before: r (cpu:0) ─► Enter(F) (cpu:0)          c (cpu:1) ─► Enter(F, constant) (cpu:1)
    after:  r ─► Enter(F);  ^r ─► F/_cloop_live (Const, cpu:0)
            F/_cloop_live ─► F/_cloop_live_on_cpu_1 (Identity, cpu:1) ─► ^Enter(F, constant)

(A loop constant that is live while the loop does not run feeds nothing that runs: only the
graph's bookkeeping of dead Exits changes.)
"""
from __future__ import annotations

import re
from collections import deque

import numpy as np

from .. import dtypes
from ..ir import Graph, Node
from ..ir.frames import ENTER_OPS, Frame
from ..ops import opaque

_TOKEN = np.zeros([0], np.float32)


class FrameLiveness:
    """The liveness tokens of the frames that span devices, and their per-device copies."""

    def __init__(self, graph: Graph, labels: dict[str, str]):
        self.graph = graph
        self.labels = labels
        self._tokens: dict[str, Node] = {}
        self._local: dict[tuple[str, str], Node] = {}

    def add_token(self, frame: Frame, frame_of: dict[Node, Frame], loop_cond: Node) -> Node:
        """Make the token of `frame` (in its parent frame, on the anchor value's device)."""
        graph = self.graph
        ref = anchor_enter(frame, frame_of, loop_cond).inputs[0]
        source = ref.node
        if source.num_outputs > 1:
            # A control edge carries the deadness of the whole node; an Identity of the one
            # output carries that output's (a Switch's untaken port is dead, the other not).
            dtype = opaque.dtype_of(ref).base
            source = graph.add_node("Identity", graph.unique_name(f"{ref.node.name}/_live_{ref.index}"),
                                    inputs=[ref], attrs={"T": dtype}, device=source.device)
        token = graph.add_node("Const", graph.unique_name(f"{scope_name(frame.name)}/_cloop_live"),
                               control_inputs=[source], device=source.device,
                               attrs={"dtype": dtypes.float32, "value": _TOKEN})
        self._tokens[frame.name] = token
        return token

    def token(self, frame_name: str) -> Node:
        return self._tokens[frame_name]

    def live_on(self, frame: Frame, device: str) -> Node:
        """The token as seen on `device` (an Identity there, made once per frame and device)."""
        key = (frame.name, device)
        if key not in self._local:
            graph, token = self.graph, self._tokens[frame.name]
            name = graph.unique_name(f"{scope_name(frame.name)}/_cloop_live_on_{self.labels[device]}")
            self._local[key] = graph.add_node("Identity", name, inputs=[token.output(0)], device=device,
                                              attrs={"T": dtypes.float32})
        return self._local[key]

    def gate_enters(self, frame: Frame) -> None:
        """Make every real Enter into `frame` wait for (and die with) the token on its device."""
        for enter in list(frame.enters):
            enter.add_control_input(self.live_on(frame, enter.device))


def anchor_enter(frame: Frame, frame_of: dict[Node, Frame], loop_cond: Node) -> Node:
    """The Enter whose liveness decides whether the loop runs: the first non-constant Enter
    the predicate depends on (a loop variable's initial value), else any non-constant Enter,
    else any Enter."""
    seen, queue = {loop_cond}, deque([loop_cond])
    while queue:
        for ref in queue.popleft().inputs:
            producer = ref.node
            if producer in seen:
                continue
            seen.add(producer)
            if producer.op in ENTER_OPS:
                if not producer.attr("is_constant"):
                    return producer
            elif frame_of.get(producer) is frame:
                queue.append(producer)
    variables = [e for e in frame.enters if not e.attr("is_constant")]
    return (variables or frame.enters)[0]


def scope_name(frame_name: str) -> str:
    """A frame name made into a valid node-name scope."""
    cleaned = re.sub(r"[^A-Za-z0-9_.\-/>]", "_", frame_name).strip("/") or "frame"
    return cleaned if re.match(r"[A-Za-z0-9.]", cleaned) else f"frame{cleaned}"
