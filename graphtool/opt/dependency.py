"""dependency: remove NoOps, bypass Identity nodes and drop control edges that are implied anyway.

    before: a -> Identity(i) -> b;  ^a -> NoOp(n) -> ^c;  d = Mul(a, x) ^a
    after:  a -> b;                 ^a -> ^c;             d = Mul(a, x)

Three rules, applied in one topological sweep, repeated until a sweep changes nothing (so a second
run finds nothing to do):

- NoOp removal: each `^noop` user gets the NoOp's own control inputs instead — only when that adds
  no more edges than it removes (plus a small slack: Grappler's rule) and adds no cross-device
  edge. NoOps that nothing depends on are run targets (train_op): they stay.
- Identity bypass: users read the Identity's input. Not for fetched/kept Identities, those reading
  another device, a Switch output (cond pivots: control dependencies hang on them), an Enter or
  Merge inside a loop frame, or a variable/receive (the Identity is the read). Control inputs of
  the Identity move to its users, unless a user is a Merge or ControlTrigger (a Merge ignores the
  deadness of control inputs, so moving would change which branch it takes).
- Redundant control edges: `^a` on a node that reads `a`, or that depends on `a` through another
  input's ancestry (a bounded search). The search follows only nodes that are dead whenever an
  input is dead (no Merge, Enter, Exit, NextIteration or ControlTrigger), so dropping the edge
  keeps both the ordering and the deadness of the node.
- Control edges from constants: `^c` where c is a Const with no inputs at all (so it is never
  dead and is ready at once) orders nothing (Grappler's dependency optimizer drops them too);
  kept on a node of an unknown op, whose NodeDef round-trips verbatim.
  A frozen graph hangs its folded variable reads on the output this way; once dropped, dce
  removes the Consts nobody reads.
"""
from __future__ import annotations

from collections import Counter

from ..ir import Graph, Node
from ..ops.opaque import is_opaque
from ..ir.frames import ENTER_OPS, FrameInfo
from .base import Pass, PassContext, PassResult, Rule, apply_rules, register_pass

# Bypassing a node may add this many edges more than it removes (Grappler allows a little).
EDGE_SLACK = 2
# Nodes visited per node when looking for a control input among the ancestors of its other inputs.
ANCESTOR_SEARCH_LIMIT = 256
# A sweep only makes the graph smaller, so this bound is never reached in practice.
MAX_SWEEPS = 10

_SWITCH_OPS = frozenset({"Switch", "RefSwitch"})
_MERGE_OPS = frozenset({"Merge", "RefMerge"})
_RECV_OPS = frozenset({"_Recv", "_HostRecv"})
# Ops that are not dead when a control input is dead (a Merge only waits for it).
_IGNORE_DEAD_CONTROLS = frozenset({"Merge", "RefMerge", "ControlTrigger"})
# Ops that are not simply dead when one input is dead, or that change frames.
_DEADNESS_BARRIERS = frozenset({"Merge", "RefMerge", "Enter", "RefEnter", "Exit", "RefExit",
                                "NextIteration", "RefNextIteration", "ControlTrigger"})


@register_pass
class DependencyOptimizer(Pass):
    name = "dependency"
    description = "remove NoOps, bypass Identity nodes, drop implied control edges"

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        totals: Counter = Counter()
        for _ in range(MAX_SWEEPS):
            rules = [RemoveNoOp(), BypassIdentity(graph.frames()), RemoveImpliedControls(), RemoveConstControls()]
            result = apply_rules(graph, ctx, rules)
            if not result.changed:
                break
            totals.update(result.stats)
        return PassResult.from_counts(**totals)


# --- NoOps ----------------------------------------------------------------------------------------

class RemoveNoOp(Rule):
    name = "noops_removed"

    def applies(self, node: Node, ctx: PassContext) -> bool:
        return (node.op == "NoOp" and not ctx.is_protected(node) and not node.inputs
                and bool(node.control_uses))

    def rewrite(self, node: Node, graph: Graph, ctx: PassContext) -> bool:
        sources, users = list(node.control_inputs), node.control_uses
        if not _bypass_is_cheap(node, sources, users):
            return False
        for user in users:
            user.remove_control_input(node)
            for source in sources:
                user.add_control_input(source)
        graph.remove_node(node)
        return True


def _bypass_is_cheap(node: Node, sources: list[Node], users: list[Node]) -> bool:
    """Whether making every user depend on every source directly adds at most EDGE_SLACK edges more
    than the 2-hop edges it removes, and no more cross-device edges than there were."""
    new_pairs = [(s, u) for u in users for s in sources if s not in u.control_inputs]
    if len(new_pairs) > len(sources) + len(users) + EDGE_SLACK:
        return False
    crossing_before = sum(_crosses(s, node) for s in sources) + sum(_crosses(node, u) for u in users)
    crossing_after = sum(_crosses(s, u) for s, u in new_pairs)
    return crossing_after <= crossing_before


def _crosses(a: Node, b: Node) -> bool:
    return bool(a.device) and bool(b.device) and a.device != b.device


# --- Identity ------------------------------------------------------------------------------------

class BypassIdentity(Rule):
    name = "identities_bypassed"

    def __init__(self, frames: FrameInfo):
        self.frames = frames

    def applies(self, node: Node, ctx: PassContext) -> bool:
        if node.op != "Identity" or len(node.inputs) != 1 or ctx.is_protected(node) or not node.has_users:
            return False
        source = node.inputs[0].node
        # An Identity of a Switch output is a cond/loop pivot only when something hangs control
        # dependencies on it (Grappler's rule); otherwise it is a plain copy.
        if source.op in _SWITCH_OPS and node.control_uses:
            return False
        return (source.device == node.device
                and not self._at_loop_boundary(node, source) and not _is_a_read(node.inputs[0]))

    def _at_loop_boundary(self, node: Node, source: Node) -> bool:
        """Inside a loop frame, an Identity of an Enter or Merge stays (loop structure)."""
        frame = self.frames.frame_of.get(node)
        in_loop = frame is None or not frame.is_root
        return in_loop and (source.op in ENTER_OPS or source.op in _MERGE_OPS)

    def rewrite(self, node: Node, graph: Graph, ctx: PassContext) -> bool:
        controls, users = list(node.control_inputs), node.consumers()
        if controls and not _can_take_controls(node, controls, users):
            return False
        source = node.inputs[0]
        for user in users:
            for control in controls:
                user.add_control_input(control)
        graph.replace_all_uses_with(node.output(0), source)
        graph.move_control_uses(node, source.node)
        graph.remove_node(node)
        return True


def _can_take_controls(node: Node, controls: list[Node], users: list[Node]) -> bool:
    """Whether the Identity's control inputs can move to its users: none of them treats a dead
    control input differently from a dead data input (Merge, ControlTrigger), and the edge count
    stays in bounds."""
    if any(user.spec is None or user.op in _IGNORE_DEAD_CONTROLS for user in users):
        return False
    return _bypass_is_cheap(node, controls, users)


def _is_a_read(ref) -> bool:
    """An Identity of a variable (a snapshot of its value), of a reference or of a receive."""
    producer = ref.node
    spec = producer.spec
    if spec is None or spec.stateful or producer.op in _RECV_OPS:
        return True
    try:
        return spec.output_dtypes(producer)[ref.index].is_ref
    except Exception:  # malformed attrs: verify() reports them; leave the node alone
        return True


# --- control edges -------------------------------------------------------------------------------

class RemoveImpliedControls(Rule):
    name = "control_edges_removed"

    def applies(self, node: Node, ctx: PassContext) -> bool:
        return bool(node.control_inputs) and _passes_deadness(node)

    def rewrite(self, node: Node, graph: Graph, ctx: PassContext) -> bool:
        implied = _implied_controls(node)
        for control in implied:
            node.remove_control_input(control)
        return bool(implied)


def _passes_deadness(node: Node) -> bool:
    """Whether `node` runs after all its inputs and is dead as soon as one of them is (so a path
    through it carries both the ordering and the deadness of a control edge)."""
    return node.spec is not None and node.op not in _DEADNESS_BARRIERS


def _implied_controls(node: Node) -> list[Node]:
    """Control inputs of `node` that are also a data input, or an ancestor of another input."""
    readers = {ref.node for ref in node.inputs}
    ancestors = _ancestors_of_inputs(node)
    return [c for c in node.control_inputs if c in readers or c in ancestors]


def _ancestors_of_inputs(node: Node) -> set[Node]:
    """Strict ancestors of `node`'s inputs, searched breadth first through deadness-passing nodes
    only, and at most ANCESTOR_SEARCH_LIMIT of them (a partial set only misses some removals)."""
    found: set[Node] = set()
    frontier = [n for n in dict.fromkeys(node.input_nodes()) if _passes_deadness(n)]
    for current in frontier:  # grows while iterating: breadth first
        for parent in current.input_nodes():
            if parent in found:
                continue
            if len(found) >= ANCESTOR_SEARCH_LIMIT:
                return found
            found.add(parent)
            if _passes_deadness(parent):
                frontier.append(parent)
    return found


class RemoveConstControls(Rule):
    name = "const_control_edges_removed"

    def applies(self, node: Node, ctx: PassContext) -> bool:
        # A node of an op dftool does not know keeps its NodeDef verbatim (ops/opaque.py).
        return any(_free_constant(c) for c in node.control_inputs) and not is_opaque(node)

    def rewrite(self, node: Node, graph: Graph, ctx: PassContext) -> bool:
        for control in [c for c in node.control_inputs if _free_constant(c)]:
            node.remove_control_input(control)
        return True


def _free_constant(node: Node) -> bool:
    """A Const with no data or control inputs: never dead, ready as the step starts."""
    return node.op in ("Const", "HostConst") and not node.inputs and not node.control_inputs
