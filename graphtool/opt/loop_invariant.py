"""loop_invariant: compute values that do not change between iterations once, outside the loop.

    before (frame 'while'):  w -> Enter(const) -> MatMul(., .) -> Add(., i) -> NextIteration
    after:                   w -> MatMul -> Enter(const, new) -> Add(., i) -> NextIteration

As Grappler's LoopInvariantNodeMotion: inside a while frame a node is invariant when every data
input is a constant Enter of that frame or another invariant node, it is neither side-effecting
nor protected, and its control inputs are invariant nodes or the loop's pivots (TensorFlow ties
loop constants to a pivot only to keep them inside the frame). Each connected invariant subgraph
with real work in it (not just Consts and Identities) is recreated in the parent frame, reading the
values from outside, and each of its results used in the loop comes back through one new constant
Enter. Frames are handled innermost first, so a value invariant in two nested loops leaves both.

Deadness: a value tied to the body pivot is dead in the loop's last, dead iteration; hoisted it is
live there. That is harmless only when every loop user of it has another input from the body, which
keeps it dead anyway, and runs no side effect; a result whose users do not pass that check stays in
the loop (its own invariant inputs may still leave).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import Graph, Node, TensorRef
from ..ir.frames import Frame, FrameInfo
from ..proto.attr_value_pb2 import AttrValue
from .base import Pass, PassContext, PassResult, register_pass

PASS_NAME = "loop_invariant"
# Hoisting these alone saves nothing: a Const or an Identity costs about what the new Enter would.
_CHEAP_OPS = frozenset({"Const", "Identity"})
# Ops that stop deadness reasoning: their outputs may be live when an input is dead (Merge), or
# they move values between frames or iterations.
_DEADNESS_BARRIERS = frozenset({"Merge", "RefMerge", "NextIteration", "RefNextIteration",
                                "Enter", "RefEnter", "Exit", "RefExit"})


@dataclass
class _LoopAnatomy:
    """The parts of a loop frame the analysis needs."""

    frame: Frame
    merges: set[Node]        # the loop's Merges: live in every iteration (the condition's pivot)
    body_pivots: set[Node]   # Identity(Switch:1) per loop var: dead in the last iteration
    body: set[Node]          # nodes downstream of the loop's Switch:1, so dead in the last iteration


def _is_loop_constant(node: Node, frame: Frame) -> bool:
    """A constant Enter into `frame`: the same value in every iteration."""
    return (node.op == "Enter" and bool(node.attr("is_constant"))
            and node.attr("frame_name") == frame.name)


def _anatomy(frame: Frame, info: FrameInfo) -> _LoopAnatomy:
    enters = set(frame.enters)
    merges = {n for n in frame.nodes if n.op in ("Merge", "RefMerge")
              and any(ref.node in enters for ref in n.inputs)}
    switches = [n for n in frame.nodes if n.op in ("Switch", "RefSwitch") and len(n.inputs) == 2
                and n.inputs[1].node.op == "LoopCond" and info.frame_of[n.inputs[1].node] is frame]
    body_pivots = {user for s in switches for user, _ in s.uses(1) if user.op == "Identity"}
    return _LoopAnatomy(frame, merges, body_pivots, _body_region(switches, frame, info))


def _body_region(switches: list[Node], frame: Frame, info: FrameInfo) -> set[Node]:
    """Nodes of `frame` reached from the loop Switches' true outputs through ordinary ops: every
    one of them is dead in the iteration that ends the loop."""
    region: set[Node] = set()
    todo = [user for s in switches for user, _ in s.uses(1)]
    while todo:
        node = todo.pop()
        if node in region or info.frame_of.get(node) is not frame or node.op in _DEADNESS_BARRIERS:
            continue
        region.add(node)
        todo.extend(node.consumers())
    return region


def _invariant_nodes(order: list[Node], loop: _LoopAnatomy, ctx: PassContext,
                     blocked: set[Node]) -> dict[Node, bool]:
    """Invariant nodes of the frame, each mapped to whether it is tied to a body pivot (directly or
    through its inputs), i.e. whether hoisting it makes it live in the loop's dead last iteration."""
    invariant: dict[Node, bool] = {}
    for node in order:
        if node in blocked or not ctx.can_rewrite(node):
            continue
        gated = _gating_if_invariant(node, invariant, loop)
        if gated is not None:
            invariant[node] = gated
    return invariant


def _gating_if_invariant(node: Node, invariant: dict[Node, bool], loop: _LoopAnatomy) -> bool | None:
    """None when `node` varies between iterations, else whether a body pivot gates it."""
    gated = False
    for ref in node.inputs:
        if ref.node in invariant:
            gated |= invariant[ref.node]
        elif not _is_loop_constant(ref.node, loop.frame):
            return None
    for control in node.control_inputs:
        if control in invariant:
            gated |= invariant[control]
        elif control in loop.body_pivots:
            gated = True
        elif control not in loop.merges:
            return None  # an ordering constraint we must not drop
    return gated


def _outside_users(node: Node, group) -> list[Node]:
    return [user for user in node.consumers() if user not in group]


def _stays_in_loop(node: Node, group) -> bool:
    """A Const used outside its group keeps serving those loop users (as cheap as an Enter), unless
    it is ordered after a group member, which leaves the loop."""
    return node.op == "Const" and not any(c in group for c in node.control_inputs)


def _keeps_deadness(user: Node, leaving: set[Node], loop: _LoopAnatomy, ctx: PassContext) -> bool:
    """Whether `user` stays dead in the last iteration without the hoisted input's pivot: it keeps
    another input from the loop body, and propagates deadness like any op (no side effects)."""
    if ctx.is_side_effecting(user):
        return False
    return any(p in loop.body and p not in leaving for p in user.input_nodes())


def _worth_hoisting(group: list[Node]) -> bool:
    return any(n.op not in _CHEAP_OPS for n in group)


def _leaving(groups: list[list[Node]], invariant: dict[Node, bool]) -> set[Node]:
    """The nodes that hoisting `groups` takes out of the loop."""
    return {n for group in groups for n in group
            if not (_outside_users(n, invariant) and _stays_in_loop(n, invariant))}


def _groups_to_hoist(order: list[Node], loop: _LoopAnatomy, ctx: PassContext) -> list[list[Node]]:
    """The invariant groups worth hoisting whose hoisting no loop user can notice. A pivot-gated
    result with a user that would notice stays in the loop; that changes what is invariant, so
    repeat until stable (each round blocks at least one node)."""
    blocked: set[Node] = set()
    while True:
        invariant = _invariant_nodes(order, loop, ctx, blocked)
        groups = [g for g in _components([n for n in order if n in invariant]) if _worth_hoisting(g)]
        leaving = _leaving(groups, invariant)
        unsafe = [node for node in leaving if invariant[node]
                  and not all(_keeps_deadness(u, leaving, loop, ctx) for u in _outside_users(node, invariant))]
        if not unsafe:
            return groups
        blocked.update(unsafe)


def _components(nodes: list[Node]) -> list[list[Node]]:
    """Connected groups (by data or control edges) of `nodes`, each in the order given."""
    members = set(nodes)
    group_of: dict[Node, int] = {}
    groups: list[list[Node]] = []
    for start in nodes:
        if start in group_of:
            continue
        index, todo = len(groups), [start]
        group_of[start] = index
        while todo:
            node = todo.pop()
            for other in list(node.input_nodes()) + node.consumers():
                if other in members and other not in group_of:
                    group_of[other] = index
                    todo.append(other)
        groups.append([])
    for node in nodes:
        groups[group_of[node]].append(node)
    return groups


def _anchor(frame: Frame) -> Node | None:
    """In a loop parent, a hoisted node without inputs needs a control input from that frame: the
    value a loop var enters from (the inner loop runs only once that value exists)."""
    if frame.parent is None or frame.parent.is_root:
        return None
    enters = sorted(frame.enters, key=lambda e: bool(e.attr("is_constant")))
    return enters[0].inputs[0].node


def _copy_attrs(node: Node) -> dict[str, AttrValue]:
    copies = {}
    for name, value in node.attrs.items():
        copies[name] = AttrValue()
        copies[name].CopyFrom(value)
    return copies


class _Hoister:
    """Moves invariant groups of one frame into its parent frame."""

    def __init__(self, graph: Graph, ctx: PassContext, frame: Frame):
        self.graph, self.ctx, self.frame = graph, ctx, frame
        self.anchor = _anchor(frame)
        self.nodes_hoisted = 0
        self.enters_added = 0

    def hoist(self, group: list[Node]) -> None:
        members = set(group)
        copies: dict[Node, Node] = {}
        for node in group:
            copies[node] = self._copy_outside(node, copies)
        doomed = []
        for node in group:
            outside = _outside_users(node, members)
            if outside and _stays_in_loop(node, members):
                continue
            if outside:
                self._feed_back(node, copies[node], members)
            doomed.append(node)
        self.graph.remove_nodes(doomed)
        self.nodes_hoisted += len(doomed)

    def _copy_outside(self, node: Node, copies: dict[Node, Node]) -> Node:
        """`node` rebuilt in the parent frame: constant Enters replaced by the values they carry,
        pivot control inputs dropped."""
        inputs = [TensorRef(copies[ref.node], ref.index) if ref.node in copies else ref.node.inputs[0]
                  for ref in node.inputs]
        controls = [copies[c] for c in node.control_inputs if c in copies]
        if not inputs and not controls and self.anchor is not None:
            controls = [self.anchor]
        return self.graph.add_node(node.op, self.ctx.new_name(self.graph, node, PASS_NAME), inputs,
                                   controls, attrs=_copy_attrs(node), device=node.device)

    def _feed_back(self, node: Node, copy: Node, members: set[Node]) -> None:
        """Make the loop users of `node` read `copy` through one new constant Enter per output."""
        dtypes = node.spec.output_dtypes(node)
        enters: dict[int, Node] = {}
        for user, slot in node.uses():
            if user in members:
                continue
            port = user.inputs[slot].index
            if port not in enters:
                enters[port] = self._enter(copy.output(port), dtypes[port], node)
            user.set_input(slot, enters[port].output(0))
        for user in node.control_uses:
            if user not in members:
                if not enters:
                    enters[0] = self._enter(copy.output(0), dtypes[0], node)
                user.remove_control_input(node)
                user.add_control_input(next(iter(enters.values())))

    def _enter(self, value: TensorRef, dtype, node: Node) -> Node:
        self.enters_added += 1
        return self.graph.add_node(
            "Enter", self.ctx.new_name(self.graph, node, PASS_NAME, "enter"), [value],
            attrs={"T": dtype, "frame_name": self.frame.name, "is_constant": True,
                   "parallel_iterations": self.frame.parallel_iterations},
            device=node.device)


@register_pass
class LoopInvariantNodeMotion(Pass):
    name = PASS_NAME
    description = "compute loop-invariant subgraphs once, before the loop, and feed them in through Enter"

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        info = graph.frames()
        if info.problems or not info.loops:
            return PassResult(False)
        nodes = enters = 0
        order = graph.topological_order()
        # Innermost first: what leaves an inner loop may then leave the outer one too.
        for name in sorted((f.name for f in info.loops), key=lambda n: -info.frames[n].depth):
            hoister = self._hoist_frame(graph, ctx, info, order, name)
            nodes += hoister.nodes_hoisted
            enters += hoister.enters_added
            if hoister.nodes_hoisted or hoister.enters_added:
                # Hoisting added nodes to the enclosing frames: see them. Only then, so that
                # thousands of nested frames are not thousands of whole-graph analyses.
                info, order = graph.frames(), graph.topological_order()
        return PassResult.from_counts(nodes_hoisted=nodes, enters_added=enters)

    @staticmethod
    def _hoist_frame(graph: Graph, ctx: PassContext, info, order, name: str) -> _Hoister:
        frame = info.frames[name]
        hoister = _Hoister(graph, ctx, frame)
        members = set(frame.nodes)
        order = [n for n in order if n in members]
        for group in _groups_to_hoist(order, _anatomy(frame, info), ctx):
            hoister.hoist(group)
        return hoister
