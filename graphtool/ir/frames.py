"""Control-flow frame discovery: which loop frame every node executes in.

TensorFlow v1 loops are recovered from the GraphDef alone: an Enter node moves values into the
child frame named by its `frame_name` attr, an Exit moves them back to the parent, and everything
else stays in the frame its inputs come from. As in TensorFlow's executor, an Enter node itself
belongs to the *outer* frame (its outputs live in the child frame) and an Exit belongs to the inner
frame (its outputs live in the parent).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from .node import Node

ENTER_OPS = frozenset({"Enter", "RefEnter"})
EXIT_OPS = frozenset({"Exit", "RefExit"})
NEXT_ITERATION_OPS = frozenset({"NextIteration", "RefNextIteration"})


@dataclass(eq=False)
class Frame:
    """A loop frame. The root frame has name '' and no parent."""

    name: str
    parent: "Frame | None"
    enters: list[Node] = field(default_factory=list)
    exits: list[Node] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)

    @property
    def is_root(self) -> bool:
        return self.parent is None

    @property
    def depth(self) -> int:
        depth, frame = 0, self.parent   # a loop, not recursion: a graph may nest thousands of frames
        while frame is not None:
            depth, frame = depth + 1, frame.parent
        return depth

    @property
    def parallel_iterations(self) -> int:
        values = [e.attr("parallel_iterations", 10) for e in self.enters]
        return min(values) if values else 1

    def __repr__(self) -> str:
        return f"<Frame {self.name or '(root)'}>"


@dataclass
class FrameInfo:
    root: Frame
    frames: dict[str, Frame]
    frame_of: dict[Node, Frame]
    problems: list[str]

    def output_frame(self, node: Node) -> Frame:
        """The frame in which `node`'s outputs are consumed."""
        frame = self.frame_of[node]
        if node.op in ENTER_OPS:
            return self.frames[node.attr("frame_name")]
        if node.op in EXIT_OPS and frame.parent is not None:
            return frame.parent
        return frame

    @property
    def loops(self) -> list[Frame]:
        return [f for f in self.frames.values() if not f.is_root]


def discover_frames(graph) -> FrameInfo:
    """Walk the graph from its sources along data and control edges, assigning frames. Conflicts
    (a node reached in two frames, an Exit or NextIteration outside any loop, one frame name under
    two parents) are collected in `problems`; nodes unreachable from a source (only on a cycle)
    are put in the root frame."""
    root = Frame("", None)
    frames: dict[str, Frame] = {"": root}
    frame_of: dict[Node, Frame] = {}
    problems: list[str] = []

    def child_frame(enter: Node, parent: Frame) -> Frame:
        try:
            name = enter.attr("frame_name")
        except Exception:
            name = None
        if not isinstance(name, str):
            problems.append(f"node '{enter.name}' ({enter.op}) has no string frame_name attr")
            return parent
        frame = frames.get(name)
        if frame is None:
            frame = frames[name] = Frame(name, parent)
        elif frame.parent is not parent:
            problems.append(f"frame '{name}' is entered from two different parent frames "
                            f"(node '{enter.name}')")
        return frame

    queue: deque[Node] = deque()
    for node in graph.nodes:
        if not node.inputs and not node.control_inputs:
            frame_of[node] = root
            queue.append(node)
    while queue:
        node = queue.popleft()
        frame = frame_of[node]
        if node.op in ENTER_OPS:
            out_frame = child_frame(node, frame)
            if out_frame is not frame:
                out_frame.enters.append(node)
        elif node.op in EXIT_OPS:
            if frame.parent is None:
                problems.append(f"node '{node.name}' ({node.op}) is outside any while-loop frame")
                out_frame = frame
            else:
                out_frame = frame.parent
                frame.exits.append(node)
        else:
            if node.op in NEXT_ITERATION_OPS and frame.parent is None:
                problems.append(f"node '{node.name}' ({node.op}) is outside any while-loop frame")
            out_frame = frame
        for consumer in node.consumers():
            known = frame_of.get(consumer)
            if known is None:
                frame_of[consumer] = out_frame
                queue.append(consumer)
            elif known is not out_frame and len(problems) < 20:
                problems.append(
                    f"node '{consumer.name}' ({consumer.op}) mixes inputs from frames "
                    f"'{known.name or '(root)'}' and '{out_frame.name or '(root)'}' "
                    f"(via '{node.name}'); values must enter a loop through Enter")
    for node in graph.nodes:
        frame_of.setdefault(node, root)
        frame_of[node].nodes.append(node)
    return FrameInfo(root, frames, frame_of, problems)
