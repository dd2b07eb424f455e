"""Questions about a whole graph that several layers ask: which nodes are its outputs and sinks.

`inspect` reports them, and `Session` (what `dftool run` fetches by default) and `optimize` (what
must survive) use the same answer, so it lives with the IR rather than in a command's module.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ops.core import FED_INPUT_OPS
from .graph import Graph
from .node import Node, TensorRef

# Nodes a user feeds (PlaceholderWithDefault may be fed, or left to its default).
PLACEHOLDER_OPS = FED_INPUT_OPS | {"PlaceholderWithDefault"}


def graph_outputs(graph: Graph) -> list[Node]:
    """Nodes that have outputs but whose outputs nobody uses (by data or control edge), and whose
    outputs live outside any while loop (a value inside a loop exists once per iteration, so only
    a loop's Exit can be an output). Placeholders are inputs, not outputs, even when unused (that
    is reported as a finding)."""
    frames = graph.frames()
    return [n for n in graph.nodes
            if not n.has_users and n.num_outputs > 0 and n.op not in PLACEHOLDER_OPS
            and frames.output_frame(n).is_root]


def graph_sinks(graph: Graph) -> list[Node]:
    """Nodes with no outputs that nothing depends on: NoOp targets, _Retval, Assert-like ops."""
    return [n for n in graph.nodes if not n.has_users and n.num_outputs == 0]


# --- the outputs worth fetching -------------------------------------------------------------------
# Unused nodes that are never an answer: probes and control-flow bookkeeping.
_PROBE_OPS = frozenset({"VarIsInitializedOp", "IsVariableInitialized"})
_SWITCH_OPS = frozenset({"Switch", "RefSwitch"})
_MERGE_OPS = frozenset({"Merge", "RefMerge"})
_EXIT_OPS = frozenset({"Exit", "RefExit"})
# A saver's save op: fetching the Identity after it writes a checkpoint.
_SAVE_OPS = frozenset({"SaveV2", "Save", "SaveSlices", "MergeV2Checkpoints"})
_WRITES_CHECKPOINT = "a saver's save result (fetching it writes a checkpoint)"
# Ops that pass their input along: seen through when looking for a loop counter or a pivot.
_FORWARDING = frozenset({"Identity", "RefIdentity", "Snapshot"})


@dataclass(frozen=True)
class LeftOut:
    """An unused output tensor the default fetches leave out, and why (one phrase)."""

    tensor: TensorRef
    reason: str


def picked_outputs(graph: Graph) -> tuple[list[TensorRef], list[LeftOut]]:
    """The graph's real outputs, what `run` fetches by default and `inspect` lists, and the unused
    output tensors left out with the reason. From the tensors of graph_outputs():

    - never fetched: variable-initialized probes (VarIsInitializedOp, IsVariableInitialized), a
      cond's bookkeeping (an unused Switch, the pivot Identity of a Switch of the predicate on
      itself, a Merge's value_index output) and a saver's save result (fetching it writes a
      checkpoint);
    - left out while a real output remains: the Exit of a while loop's counter (a loop variable
      computed only from itself and constants), the Exit of any other loop variable nobody uses,
      the read TensorFlow makes when it creates a variable (`v/read`, `v/Read/ReadVariableOp`) and
      tensors of a `gradients/` scope nobody uses (TensorFlow's gradient bookkeeping).

    When nothing else remains, the leftovers are picked, and failing those the bookkeeping (never
    a saver's save result)."""
    candidates = [ref for node in graph_outputs(graph) for ref in node.outputs]
    never: list[LeftOut] = []
    secondary: list[LeftOut] = []
    picked: list[TensorRef] = []
    for ref in candidates:
        reason = _never_fetched(ref)
        if reason is not None:
            never.append(LeftOut(ref, reason))
            continue
        reason = _leftover(ref)
        if reason is not None:
            secondary.append(LeftOut(ref, reason))
            continue
        picked.append(ref)
    if not picked:   # nothing but leftovers: fetch them, then the harmless bookkeeping
        picked, secondary = [left.tensor for left in secondary], []
    if not picked:
        picked = [left.tensor for left in never if left.reason != _WRITES_CHECKPOINT]
        never = [left for left in never if left.reason == _WRITES_CHECKPOINT]
    return picked, sorted(never + secondary, key=lambda left: candidates.index(left.tensor))


def _never_fetched(ref: TensorRef) -> str | None:
    node = ref.node
    if node.op in _PROBE_OPS:
        return "a variable-initialized probe"
    if node.op in _SWITCH_OPS:
        return "cond bookkeeping: a Switch nobody uses"
    if node.op in _MERGE_OPS and ref.index == 1:
        return "a Merge's value_index (which branch ran)"
    if node.op in _FORWARDING and node.inputs and _is_pivot(node.inputs[0]):
        return "a cond pivot (the predicate switched on itself)"
    if any(control.op in _SAVE_OPS for control in node.control_inputs):
        return _WRITES_CHECKPOINT
    return None


def _is_pivot(ref: TensorRef) -> bool:
    """Whether `ref` is an output of Switch(p, p): TensorFlow's cond pivot (switch_t/switch_f)."""
    node = ref.node
    return node.op in _SWITCH_OPS and len(node.inputs) == 2 and node.inputs[0] == node.inputs[1]


def _leftover(ref: TensorRef) -> str | None:
    node = ref.node
    if node.op in _EXIT_OPS:
        if _is_counter(node):
            return "a while loop's counter"
        return "a loop variable's Exit nobody uses"
    if node.op == "ReadVariableOp" and node.inputs and node.name == f"{node.inputs[0].node.name}/Read/ReadVariableOp":
        return "a resource variable's creation-time read"
    if node.op == "Identity" and node.inputs and node.inputs[0].node.op in ("VariableV2", "Variable") \
            and node.name == f"{node.inputs[0].node.name}/read":
        return "a variable's creation-time read"
    scope = node.name.split("/", 1)[0]
    if "/" in node.name and (scope == "gradients" or scope.startswith("gradients_")):
        return "gradient bookkeeping nobody uses"
    return None


def _is_counter(exit_node: Node) -> bool:
    """Whether the loop variable that `exit_node` leaves with is a counter: Exit(Switch(Merge(
    Enter, NextIteration(update)))) where the update is computed from that Switch's output and
    constants only (i + 1, time + 1, ...)."""
    switch = _through(exit_node.inputs[0]).node if exit_node.inputs else None
    if switch is None or switch.op not in _SWITCH_OPS or not switch.inputs:
        return False
    merge = _through(switch.inputs[0]).node
    if merge.op not in _MERGE_OPS:
        return False
    nexts = [_through(r).node for r in merge.inputs if _through(r).node.op in ("NextIteration", "RefNextIteration")]
    if len(nexts) != 1 or not nexts[0].inputs:
        return False
    pending, seen = [nexts[0].inputs[0]], set()
    steps = 0
    while pending:
        ref = pending.pop()
        if ref.node in seen:
            continue
        seen.add(ref.node)
        steps += 1
        if steps > 64:   # a counter is a short expression; a long one is a computation
            return False
        producer = ref.node
        if producer is switch:
            if ref.index != 1:
                return False
            continue
        if producer.op == "Const":
            continue
        if producer.op in ("Enter", "RefEnter"):
            if not producer.inputs or _through(producer.inputs[0]).node.op != "Const":
                return False
            continue
        if producer.op in _MERGE_OPS or producer.op in _SWITCH_OPS or producer.op in PLACEHOLDER_OPS \
                or producer.spec is None or producer.spec.stateful or not producer.inputs:
            return False
        pending.extend(producer.inputs)
    return True


def _through(ref: TensorRef) -> TensorRef:
    """`ref` seen through Identity-like nodes."""
    hops = 0
    while ref.node.op in _FORWARDING and ref.node.inputs and hops < 64:
        ref, hops = ref.node.inputs[0], hops + 1
    return ref
