"""The JIT pass a Session runs on each pruned graph before planning it (Session(jit=True)).

    report, moved = compile_graph(graph, device_name, fetches={("y", 0)}, fed={"x"}, targets=set())

1. v1 control flow is functionalized where possible (functionalize.py: while frames and conds
   become While/If nodes, TensorArrays in loops TensorLists), so a loop can compile to one call;
2. clusters are found (clustering.py) and each replaced by a `_JitCluster` node (rewrite.py);
3. functional ops left outside clusters are lowered to v1 control flow for the interpreter.

`--jit` never refuses a graph: what cannot compile stays in the interpreter, with its reason in
the report. `moved` maps a fetched (node, port) now inside a cluster to the cluster's output.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from ..ir import Graph, TensorRef
from . import runtime
from .candidates import TRANSFER_OPS
from .clustering import find_clusters
from .rewrite import RewrittenCluster, rewrite_clusters

if TYPE_CHECKING:
    from ..functions.lowering import LoweringReport
    from .functionalize import FunctionalizeReport

ENV_VAR = "DFTOOL_JIT"


def enabled_by_env() -> bool:
    import os

    return os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on")


@dataclass
class JitReport:
    clusters: list[RewrittenCluster] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)     # node name -> reason
    functionalized: FunctionalizeReport | None = None          # functionalize's report, if it ran
    lowered: LoweringReport | None = None                      # the lowering of what stayed out

    @property
    def compiled_nodes(self) -> int:
        return sum(c.size for c in self.clusters)

    @property
    def compile_seconds(self) -> float:
        return sum(c.program.compile_seconds for c in self.clusters)

    def top_reasons(self, count: int = 5) -> list[tuple[str, int]]:
        return Counter(self.left_out.values()).most_common(count)

    def summary(self) -> str:
        copied = sum(c.copied for c in self.clusters)
        copies = f" (and copies of {copied} constant/shape nodes)" if copied else ""
        return (f"jit: {len(self.clusters)} cluster(s) compile {self.compiled_nodes} nodes{copies}, "
                f"{len(self.left_out)} stay in the interpreter; compile {self.compile_seconds * 1000:.0f} ms")

    def lines(self, verbose: int = 1) -> list[str]:
        """Human-readable lines: one per cluster, then the top reasons nodes stayed out."""
        lines = [self.summary()]
        if self.functionalized is not None and self.functionalized.changed:
            lines.append(f"  functionalized v1 control flow: {self.functionalized.summary()}")
        for c in self.clusters:
            ops = Counter(c.program.ops).most_common(4)
            shown = ", ".join(f"{n} {op}" for op, n in ops)
            more = ", ..." if len(set(c.program.ops)) > 4 else ""
            lines.append(f"  {c.node.name}: {c.size} nodes ({shown}{more}); compiled {c.program.compiles}x "
                         f"in {c.program.compile_seconds * 1000:.0f} ms; {c.program.calls} call(s)")
            if c.program.failure:
                lines.append(f"    XLA could not compile it, so it runs interpreted: {c.program.failure}")
        reasons = self.top_reasons(5 if verbose < 2 else 50)
        if reasons:
            lines.append("  stayed in the interpreter:")
            lines.extend(f"    {n} node(s): {reason}" for reason, n in reasons)
        return lines

    def to_json(self) -> dict:
        return {
            "clusters": [{"name": c.node.name, "nodes": c.size, "copied_nodes": c.copied,
                          "ops": dict(Counter(c.program.ops)),
                          "compile_seconds": c.program.compile_seconds, "compiles": c.program.compiles,
                          "calls": c.program.calls, "interpreted_because": c.program.failure}
                         for c in self.clusters],
            "left_out": [{"reason": r, "nodes": n} for r, n in self.top_reasons(50)],
            "cache_dir": runtime.cache_dir(),
            "persistent_cache": dict(runtime.cache_events),
        }

    def merge(self, other: "JitReport") -> None:
        self.clusters.extend(other.clusters)
        self.left_out.update(other.left_out)
        self.functionalized = other.functionalized or self.functionalized
        self.lowered = other.lowered or self.lowered


def _functionalize(graph: Graph, keep: list[str]):
    try:
        from .functionalize import functionalize, has_v1_control_flow
    except ImportError:   # without it v1 control flow stays in the interpreter
        return None
    return functionalize(graph, keep=keep) if has_v1_control_flow(graph) else None


# Ops that only check: they fail the step or do nothing.
CHECK_OPS = frozenset({"Assert"})


def _detach_asserts(graph: Graph) -> None:
    """Drop the control edges out of Asserts. An Assert still runs in the interpreter and still
    fails the step; only nothing waits for it any more. Otherwise the shape checks TensorFlow
    puts before a dynamic_rnn (Shape -> Equal -> Assert -> ^Identity) would cut every cluster
    around them in two, as a path out of the cluster and back."""
    for node in graph.nodes:
        if node.op in CHECK_OPS:
            for consumer in node.control_uses:
                consumer.remove_control_input(node)


def compile_graph(graph: Graph, default_device: str, fetches: set[tuple[str, int]], fed: set[str],
                  targets: set[str], lower_rest: bool = True, *, interpreter: Callable
                  ) -> tuple[JitReport, dict[tuple[str, int], TensorRef]]:
    runtime.load()
    report = JitReport()
    # A partition's loops run in step with their copies on other devices (each iteration's
    # _Send/_Recv), so they stay v1 there: only a graph without transfers is functionalized.
    if not any(n.op in TRANSFER_OPS for n in graph.nodes):
        report.functionalized = _functionalize(graph, [f"{name}:{port}" for name, port in fetches]
                                               + sorted(fed) + sorted(targets))
    _detach_asserts(graph)
    clustering = find_clusters(graph, default_device, fed, targets)
    keep = {TensorRef(node, port) for name, port in fetches if (node := graph.get(name)) is not None}
    report.left_out = {node.name: reason for node, reason in clustering.reasons.items()}
    protected = {name for name, _ in fetches} | set(fed) | set(targets)
    report.clusters, moved = rewrite_clusters(graph, clustering.clusters, clustering.static, keep,
                                              protected=protected, interpreter=interpreter)
    if lower_rest:
        from ..functions.lowering import lower_functional_ops, needs_lowering

        if needs_lowering(graph):
            report.lowered = lower_functional_ops(graph)
    return report, moved
