"""Which tensor of a graph holds its summaries: what `--logdir` fetches each step.

A TF1 graph typically ends its summaries in one MergeSummary (`tf.compat.v1.summary.merge_all()`);
the summaries merged into it are not fetched again. Summaries nobody merges are outputs of their
own: find_summary_tensors lists them all, find_summary_tensor the one to fetch when there is one.
"""
from __future__ import annotations

from ..errors import UsageError
from ..ir import Graph
from ..ops.summary import SUMMARY_OPS

# Ops that pass a summary along unchanged: a summary reaching a MergeSummary through them is merged.
_FORWARDING_OPS = frozenset({"Identity", "IdentityN", "Snapshot", "StopGradient"})


def _merged(node) -> bool:
    """Whether a MergeSummary takes this node's output (directly or through forwarding ops)."""
    pending, seen = [node], set()
    while pending:
        current = pending.pop()
        for consumer, _ in current.uses():
            if consumer.op == "MergeSummary":
                return True
            if consumer.op in _FORWARDING_OPS and consumer.name not in seen:
                seen.add(consumer.name)
                pending.append(consumer)
    return False


def find_summary_tensors(graph: Graph) -> list[str]:
    """Every summary output no MergeSummary merges, as tensor names ("Merge/MergeSummary:0"),
    sorted by name. Empty for a graph without summary ops. Summaries inside a while loop are
    left out: their value exists once per iteration, and a step cannot fetch it."""
    summaries = [node for node in graph.nodes if node.op in SUMMARY_OPS]
    if not summaries:
        return []
    frames = graph.frames()
    return sorted(f"{node.name}:0" for node in summaries
                  if frames.output_frame(node).is_root and not _merged(node))


def find_summary_tensor(graph: Graph) -> str | None:
    """The tensor holding all of the graph's summaries: the MergeSummary no other summary
    consumes, or the graph's single summary op; None when the graph has no summaries.
    UsageError when several summaries are left unmerged (find_summary_tensors lists them, each
    of which can be fetched and written)."""
    tensors = find_summary_tensors(graph)
    if len(tensors) > 1:
        raise UsageError(f"the graph has {len(tensors)} summary outputs that no MergeSummary merges: "
                         + ", ".join(tensors),
                         hint="merge them with tf.compat.v1.summary.merge_all(), or fetch each one")
    return tensors[0] if tensors else None
