"""What the driver knows about the forward graph: frames, loops, cond branches, dtypes, and the
nodes on the paths from the xs to y.

Everything is computed once, before any backward node exists. Nodes the driver adds to the
forward computation later (the loop counters, the stack pushes) are recorded with their frame
and cond branch, so saving them on a stack works like saving any other forward value.
"""
from __future__ import annotations

from collections import deque

from .. import dtypes
from ..errors import RuntimeFailure
from ..ir import Frame, Graph, Node, TensorRef
from ..ir.frames import ENTER_OPS
from .conds import CondBranch, CondInfo
from .loops import LoopInfo, describe_loop


class ForwardInfo:
    def __init__(self, graph: Graph, shapes):
        self.graph = graph
        self.shapes = shapes
        self.frames = graph.frames()
        self.conds = CondInfo(graph)
        self._loops: dict[Frame, LoopInfo] = {}
        self._added: dict[Node, Frame] = {}

    # --- frames -----------------------------------------------------------------------------
    def frame_of(self, ref: TensorRef | Node) -> Frame:
        """The frame whose iterations see this value (for a node: its outputs)."""
        node = ref.node if isinstance(ref, TensorRef) else ref
        if node in self._added:
            return self._added[node]
        return self.frames.output_frame(node)

    def node_frame(self, node: Node) -> Frame:
        """The frame a node runs in (an Enter runs outside the loop it feeds)."""
        if node in self._added:
            return self._added[node]
        return self.frames.frame_of[node]

    def loop(self, frame: Frame) -> LoopInfo:
        if frame not in self._loops:
            self._loops[frame] = describe_loop(frame)
        return self._loops[frame]

    def record(self, node: Node, frame: Frame, branch: CondBranch | None) -> None:
        """Register a node added to the forward computation, its outputs living in `frame`."""
        self._added[node] = frame
        self.conds.record(node, branch)

    # --- dtypes -----------------------------------------------------------------------------
    def dtype(self, ref: TensorRef):
        return self.shapes.dtype(ref)

    def differentiable(self, ref: TensorRef) -> bool:
        """Only floating and complex values carry gradients (integers, bools, strings, resource
        handles do not), and variants holding them: a TensorList of floats carries a list of
        gradients, one of ints none; a variant nothing is known of counts as differentiable, as in
        TensorFlow. An output of an opaque node (an op dftool does not know) whose dtype nothing
        tells may carry one: it counts, so the path check can name the op."""
        base = self.dtype(ref).base
        if base is dtypes.INVALID and ref.node.spec is None:
            return True
        if base is dtypes.variant:
            found = self.shapes.info.get(ref)
            element = found.handle.dtype if found is not None and found.handle is not None else None
            return element is None or element.base.is_floating or element.base.is_complex
        return base.is_floating or base.is_complex


def is_ancestor(outer: Frame, inner: Frame) -> bool:
    """True when `inner` is `outer` or nested in it."""
    frame: Frame | None = inner
    while frame is not None:
        if frame is outer:
            return True
        frame = frame.parent
    return False


def child_toward(outer: Frame, inner: Frame) -> Frame:
    """The child frame of `outer` that contains `inner` (a proper descendant of `outer`)."""
    frame = inner
    while frame.parent is not outer:
        assert frame.parent is not None, "`outer` is not an ancestor of `inner`"
        frame = frame.parent
    return frame


def between(info: ForwardInfo, y: TensorRef, xs: list[TensorRef]) -> set[Node]:
    """The nodes on a differentiable path from some x to y: reachable from an x through floating
    values and reaching y through floating values (loop back edges included, so every node of a
    loop body that carries x's influence around the loop is in). RuntimeFailure when x also
    reaches y through a stack (a gradient of a while loop's gradient), which carries no gradient."""
    reached, reaching = nodes_reached_from(info, xs), nodes_reaching(info, y)
    _check_no_stack_between(reached, reaching)
    return reached & reaching


def _check_no_stack_between(reached: set[Node], reaching: set[Node]) -> None:
    """A backward loop pops values its forward loop pushed: if x reaches a push and the pop
    reaches y, y depends on x through the stack, which no gradient goes through (TensorFlow
    refuses second-order gradients of while loops for the same reason)."""
    pushed = {_stack_of(node): node for node in reached if node.op == "StackPushV2"}
    for node in reaching:
        if node.op == "StackPopV2" and _stack_of(node) in pushed:
            raise RuntimeFailure(
                f"y depends on x through the stack '{_stack_of(node).name}' (pushed by "
                f"'{pushed[_stack_of(node)].name}', popped by '{node.name}'): gradients of a while "
                f"loop's gradient are not supported",
                hint="second derivatives work through conds and loop-free graphs")


def _stack_of(node: Node) -> Node:
    """The StackV2 behind a push's or pop's handle (through Enter and Switch)."""
    handle = node.inputs[0].node
    while handle.op != "StackV2" and handle.inputs:
        handle = handle.inputs[0].node
    return handle


def nodes_reached_from(info: ForwardInfo, xs: list[TensorRef]) -> set[Node]:
    """The nodes that read some x through floating values (directly or not)."""
    reached: set[Node] = set()
    queue: deque[Node] = deque()

    def follow(ref: TensorRef) -> None:
        for consumer, _slot in ref.node.uses(ref.index):
            if consumer not in reached:
                reached.add(consumer)
                queue.append(consumer)

    for x in xs:
        if info.differentiable(x):
            follow(x)
    while queue:
        node = queue.popleft()
        for ref in node.outputs:
            if info.differentiable(ref):
                follow(ref)
    return reached


def nodes_reaching(info: ForwardInfo, y: TensorRef) -> set[Node]:
    """y's node and every node whose floating outputs y depends on."""
    reaching = {y.node}
    queue = deque([y.node])
    while queue:
        node = queue.popleft()
        for ref in node.inputs:
            if ref.node not in reaching and info.differentiable(ref):
                reaching.add(ref.node)
                queue.append(ref.node)
    return reaching


def constant_enter_of(ref: TensorRef, frame: Frame) -> Node | None:
    """The Enter node when `ref` is a loop invariant of `frame` (an is_constant Enter into it)."""
    node = ref.node
    if node.op in ENTER_OPS and node.attr("is_constant") and node.attr("frame_name") == frame.name:
        return node
    return None
