"""Which cond branch every forward value lives in, recovered from the GraphDef alone.

A TensorFlow v1 cond is Switch/Merge pairs: a Switch sends its input to output 0 (false) or 1
(true), everything computed from that output runs only on that branch, and a Merge forwards
whichever branch ran. The gradient needs that structure twice: the gradient of a Merge is a
Switch on the same predicate, and inside a while loop a value saved in a cond branch is only
pushed when the branch ran, so its pop must be guarded by a Switch on the (saved) predicate.

Branches nest (a cond inside a branch) and are per loop frame: an Enter starts afresh in the
loop's frame, and an Exit's value lives where the loop was entered. Switches and Merges that
form a while loop (the Switch reads a LoopCond, the Merge an Enter or NextIteration) are not
conds.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Node, TensorRef
from ..ir.frames import ENTER_OPS, EXIT_OPS, NEXT_ITERATION_OPS

SWITCH_OPS = frozenset({"Switch", "RefSwitch"})
MERGE_OPS = frozenset({"Merge", "RefMerge"})
# Identity-like ops that TensorFlow's cond puts between a predicate and its Switches (pred_id).
_PASS_THROUGH = frozenset({"Identity", "Snapshot"})


@dataclass(eq=False)
class CondBranch:
    """One branch of a cond: the values computed when `pred` is `branch` (0 false, 1 true),
    nested in `outer` (None: not inside any other branch of this frame)."""

    pred: TensorRef
    branch: int
    outer: "CondBranch | None"
    depth: int = field(init=False)

    def __post_init__(self):
        self.depth = 1 if self.outer is None else self.outer.depth + 1

    def chain(self) -> list["CondBranch"]:
        """This branch and every enclosing one, outermost first."""
        found: list[CondBranch] = []
        branch: CondBranch | None = self
        while branch is not None:
            found.append(branch)
            branch = branch.outer
        return found[::-1]

    def __repr__(self) -> str:
        return f"<CondBranch {self.pred.name}={bool(self.branch)} depth {self.depth}>"


def is_loop_switch(node: Node) -> bool:
    """A while loop's Switch: its predicate is the loop's LoopCond."""
    return node.op in SWITCH_OPS and len(node.inputs) == 2 and node.inputs[1].node.op == "LoopCond"


def is_loop_merge(node: Node) -> bool:
    """A while loop's Merge: it reads the loop var's Enter and NextIteration."""
    return node.op in MERGE_OPS and any(
        ref.node.op in ENTER_OPS or ref.node.op in NEXT_ITERATION_OPS for ref in node.inputs)


def canonical_pred(ref: TensorRef) -> TensorRef:
    """The predicate behind Identity copies (TensorFlow's Switches read pred_id = Identity(pred)
    while the pivot Switch reads pred), so the branches of one cond compare equal."""
    while ref.node.op in _PASS_THROUGH and ref.node.inputs:
        ref = ref.node.inputs[0]
    return ref


def deepest(branches) -> CondBranch | None:
    """The most deeply nested of some branches (values combined in a branch live in it)."""
    best = None
    for branch in branches:
        if branch is not None and (best is None or branch.depth > best.depth):
            best = branch
    return best


def common_branch(branches: list) -> CondBranch | None:
    """The innermost branch enclosing all of `branches`: where a Merge of them lives (the two
    sides of a cond share everything but their last level, so the Merge leaves the cond)."""
    chains = [[] if b is None else b.chain() for b in branches]
    common = None
    for level in zip(*chains):
        if any(b is not level[0] for b in level):
            break
        common = level[0]
    return common


class CondInfo:
    """The cond branch of every forward output (None: outside any cond of its frame)."""

    def __init__(self, graph):
        self._port: dict[TensorRef, CondBranch | None] = {}
        self._node: dict[Node, CondBranch | None] = {}
        self._interned: dict[tuple, CondBranch] = {}
        for node in graph.topological_order():
            self._visit(node)

    # --- queries ----------------------------------------------------------------------------
    def of(self, ref: TensorRef) -> CondBranch | None:
        """The branch `ref` is computed in."""
        if ref in self._port:
            return self._port[ref]
        return self._node.get(ref.node)

    def merge_input_branch(self, merge: Node, slot: int) -> CondBranch | None:
        """The branch of the cond a Merge closes that its input `slot` comes from, or None when
        that input is not in a branch the Merge closes (a Merge that is not a cond's)."""
        outer = self._node.get(merge)
        inner = self.of(merge.inputs[slot])
        while inner is not None and inner.outer is not outer:
            inner = inner.outer
        return inner

    def record(self, node: Node, branch: CondBranch | None) -> None:
        """Register a node the driver added to the forward graph (all its outputs in `branch`)."""
        self._node[node] = branch

    # --- the analysis -----------------------------------------------------------------------
    def _visit(self, node: Node) -> None:
        if node.op in ENTER_OPS or is_loop_merge(node) or is_loop_switch(node):
            self._node[node] = None          # the top of a loop frame
        elif node.op in EXIT_OPS:
            self._node[node] = self._loop_entry_branch(node)
        elif node.op in SWITCH_OPS:
            self._visit_switch(node)
        elif node.op in MERGE_OPS:
            self._node[node] = common_branch([self.of(ref) for ref in node.inputs])
        else:
            self._node[node] = self._inputs_branch(node)

    def _inputs_branch(self, node: Node) -> CondBranch | None:
        branches = [self.of(ref) for ref in node.inputs]
        branches += [self._node.get(control) for control in node.control_inputs]
        return deepest(branches)

    def _visit_switch(self, node: Node) -> None:
        base = self._inputs_branch(node)
        self._node[node] = base
        pred = canonical_pred(node.inputs[1])
        for port in (0, 1):
            key = (pred, port, id(base))
            branch = self._interned.get(key)
            if branch is None:
                branch = self._interned[key] = CondBranch(pred, port, base)
            self._port[TensorRef(node, port)] = branch

    def _loop_entry_branch(self, exit_node: Node) -> CondBranch | None:
        """An Exit's value lives where its loop var entered the loop: Exit <- Switch <- Merge <- Enter."""
        try:
            switch = exit_node.inputs[0].node
            merge = switch.inputs[0].node
            enter = next(ref.node for ref in merge.inputs if ref.node.op in ENTER_OPS)
            return self.of(enter.inputs[0])
        except (IndexError, StopIteration):
            return None
