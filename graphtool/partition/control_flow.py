"""Control skeletons: how a while loop that spans devices keeps iterating on every one of them.

The dynamic-control-flow paper (and TensorFlow's graph_partition.cc, AddControlFlow) gives each
device that holds part of a loop frame its own copy of the loop's control structure, driven by the
loop predicate that the device computing it (the frame's *leader*, which holds the LoopCond) sends
to the others once per iteration. No central scheduler is involved: every device starts
iteration k+1 as soon as it has received predicate k.

The skeleton of frame F on device D (every value is a 0-element float32 token):

    live ─► Enter(F) ─► Merge ─► Switch(·, pred) ─:1─► Identity ─► NextIteration ─┐
                          ▲                                                       │
                          └───────────────────────────────────────────────────────┘

- `pred` is the LoopCond output; on D it arrives through a `_Recv` inside F (the edge cutter
  makes it, like any cross-device edge in F). On the leader the Switch reads the LoopCond itself.
- The Merge fires once in every iteration the frame runs, the last one included, and depends
  only on the *previous* iteration's predicate. It is the anchor every `_Recv` inside F on D hangs
  from (a control input), so the Recv belongs to F and runs once per iteration, as in TensorFlow.
  (The Identity of the true branch would not do: a Recv must also run in the final iteration to
  pass on the dead values the sender sends there, and to deliver values the predicate itself
  depends on, which would be a cycle through the Switch.)
- Every `_Send` inside F on D takes a control input from the same Merge. It changes no timing
  that matters (a device's real iteration k cannot start before predicate k-1 either), but it
  ties the skeleton to what the device sends: a device that only sends in the loop (say, loop
  invariants worked on per iteration) still has its skeleton kept when a graph is pruned from
  its fetches, which follow a needed `_Recv` to its `_Send` and from there along inputs.
- `live` is the frame's liveness token on D (liveness.py): dead when the loop does not run in this
  iteration of the parent frame, so the skeleton's frame is entered dead and never runs, exactly
  like the real loop. For a nested loop the token reaches D inside the parent frame, through a
  `_Recv` hanging from the parent skeleton's Merge: each inner skeleton lives in an iteration of
  the outer skeleton on the same device.
- There is no Exit: a frame ends when its last iteration drains, and an Exit nobody reads would
  be a spurious graph output. (TensorFlow's control loops have none either.)

The leader gets a skeleton only when it receives something inside the frame (its Recvs need the
anchor); every other participating device always gets one, since it must iterate as often as the
leader even when it only sends.

    before: frame F: Merge/Switch/LoopCond on cpu:0, body op on cpu:1
    after:  cpu:1 also holds F/_cloop_cpu_1/{enter,merge,switch,pivot,next_iteration}, its Switch
            reading outer/LoopCond/_recv_on_cpu_1
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes
from ..errors import InvalidGraphError
from ..ir import Graph, Node
from ..ir.frames import Frame, FrameInfo
from .liveness import FrameLiveness, scope_name

LOOP_COND_OPS = frozenset({"LoopCond"})


@dataclass
class Skeleton:
    """One device's copy of one frame's control structure."""

    frame: str
    device: str
    enter: Node
    merge: Node
    switch: Node
    pivot: Node
    next_iteration: Node

    @property
    def recv_anchor(self) -> Node:
        """What every `_Recv` (and `_Send`) inside the frame on this device hangs from."""
        return self.merge


class LoopSkeletons:
    """Adds the skeletons of every loop frame placed on more than one device."""

    def __init__(self, graph: Graph, labels: dict[str, str]):
        self.graph = graph
        self.labels = labels
        self.skeletons: dict[tuple[str, str], Skeleton] = {}
        self.liveness = FrameLiveness(graph, labels)
        self._leaders: dict[str, Node] = {}

    def build(self) -> None:
        """Add the skeletons (outer frames first, so a nested one can live inside its parent's)."""
        info = self.graph.frames()
        spans = frame_devices(info)
        spanning = sorted((f for f in info.loops if len(spans[f.name]) > 1), key=lambda f: f.depth)
        for frame in spanning:
            self._leaders[frame.name] = _loop_cond(frame, spans[frame.name])
            self.liveness.add_token(frame, info.frame_of, self._leaders[frame.name])
        for frame in spanning:
            leader = self._leaders[frame.name]
            for device in sorted(spans[frame.name] - {leader.device}):
                self._add(frame, device)
            self.liveness.gate_enters(frame)
        self._add_leader_skeletons(spanning)

    def anchor(self, frame_name: str, device: str) -> Node:
        """The node a `_Recv` in `frame_name` on `device` hangs from (see Skeleton.recv_anchor)."""
        skeleton = self.skeletons.get((frame_name, device))
        if skeleton is None:  # the builder guarantees one wherever an edge crosses inside a frame
            raise AssertionError(f"no control skeleton for frame '{frame_name}' on {device}")
        return skeleton.recv_anchor

    def anchor_if_any(self, frame_name: str, device: str) -> Node | None:
        """The skeleton anchor of `frame_name` on `device`, or None (the leader may have none)."""
        skeleton = self.skeletons.get((frame_name, device))
        return skeleton.recv_anchor if skeleton is not None else None

    def by_frame(self) -> dict[str, list[str]]:
        """Frame name -> the devices given a skeleton of it (sorted), frames in build order."""
        found: dict[str, list[str]] = {}
        for frame, device in self.skeletons:
            found.setdefault(frame, []).append(device)
        return {frame: sorted(devices) for frame, devices in found.items()}

    # --- the leader -------------------------------------------------------------------------------
    def _add_leader_skeletons(self, spanning: list[Frame]) -> None:
        """Give the leader a skeleton where it receives inside the frame. Inner frames first: an
        inner skeleton's Enter may itself receive its token in the outer frame."""
        receiving = receiving_frames(self.graph, self.graph.frames())
        for frame in sorted(spanning, key=lambda f: -f.depth):
            leader = self._leaders[frame.name].device
            if (frame.name, leader) not in receiving:
                continue
            self._add(frame, leader)
            if self.liveness.token(frame.name).device != leader:
                assert frame.parent is not None   # (loops only: the root is not received)
                receiving.add((frame.parent.name, leader))

    # --- building -------------------------------------------------------------------------------
    def _add(self, frame: Frame, device: str) -> Skeleton:
        graph, base = self.graph, f"{scope_name(frame.name)}/_cloop_{self.labels[device]}"
        loop_cond = self._leaders[frame.name]

        def node(op: str, suffix: str, inputs, **attrs) -> Node:
            return graph.add_node(op, graph.unique_name(f"{base}/{suffix}"), inputs=inputs,
                                  attrs={"T": dtypes.float32, **attrs}, device=device)

        live = self.liveness.live_on(frame, device)
        enter = node("Enter", "enter", [live.output(0)], frame_name=frame.name, is_constant=False,
                     parallel_iterations=frame.parallel_iterations)
        merge = node("Merge", "merge", [enter.output(0), enter.output(0)], N=2)
        switch = node("Switch", "switch", [merge.output(0), loop_cond.output(0)])
        pivot = node("Identity", "pivot", [switch.output(1)])
        next_iteration = node("NextIteration", "next_iteration", [pivot.output(0)])
        merge.set_input(1, next_iteration.output(0))
        skeleton = Skeleton(frame.name, device, enter, merge, switch, pivot, next_iteration)
        self.skeletons[(frame.name, device)] = skeleton
        return skeleton


# --- frame facts ------------------------------------------------------------------------------------

def frame_devices(info: FrameInfo) -> dict[str, set[str]]:
    """Per frame, the devices holding any of its nodes, its Enters or anything in a loop nested
    in it (a device running an inner loop must also iterate the outer one)."""
    devices: dict[str, set[str]] = {name: set() for name in info.frames}
    for name, frame in info.frames.items():
        devices[name].update(n.device for n in frame.nodes)
        devices[name].update(e.device for e in frame.enters)
    for frame in sorted(info.loops, key=lambda f: -f.depth):
        assert frame.parent is not None   # a loop's frame has the frame it is entered from
        devices[frame.parent.name] |= devices[frame.name]
    return devices


def receiving_frames(graph: Graph, info: FrameInfo) -> set[tuple[str, str]]:
    """(frame, device) for every edge that crosses devices: the frame the consumer reads it in
    (its own frame; an Enter reads in the parent frame) and the consumer's device."""
    found = set()
    for node in graph.nodes:
        if any(producer.device != node.device for producer in node.input_nodes()):
            found.add((info.frame_of[node].name, node.device))
    return found


def _loop_cond(frame: Frame, devices: set[str]) -> Node:
    conds = [n for n in frame.nodes if n.op in LOOP_COND_OPS]
    if len(conds) != 1:
        what = "no LoopCond" if not conds else f"{len(conds)} LoopCond nodes"
        raise InvalidGraphError(f"while-loop frame '{frame.name}' spans devices {', '.join(sorted(devices))} "
                                f"but has {what}; a loop across devices needs exactly one predicate to share",
                                hint="place the whole loop on one device")
    return conds[0]
