"""Run optimization passes in a fixed order until nothing changes.

Each pass is timed and checked: after it runs the graph must still verify(), or the error names the
pass. The report holds one entry per pass run (nodes/edges delta, time, stats).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DftoolError, InvalidGraphError, RuntimeFailure, UsageError
from ..suggest import did_you_mean, join_hints
from ..ir import Graph, to_graphdef
from ..placement.colocation import drop_dangling_colocation
from .base import PassContext, registered_passes


class PassFailure(RuntimeFailure):
    """A pass raised or left an invalid graph (exit 1; the message names the pass)."""


@dataclass
class PassRun:
    name: str
    iteration: int
    changed: bool
    seconds: float
    nodes_before: int
    nodes_after: int
    edges_before: int
    edges_after: int
    stats: dict[str, int] = field(default_factory=dict)


@dataclass
class OptimizeReport:
    runs: list[PassRun] = field(default_factory=list)
    iterations: int = 0
    colocation_dropped: int = 0   # nodes whose _class named a node the passes removed


def pass_order() -> list[str]:
    from . import PASS_ORDER

    return list(PASS_ORDER)


def select_passes(only: list[str] | None, skip: list[str] | None) -> list[str]:
    """The passes to run, in the fixed order; UsageError naming an unknown pass."""
    known = pass_order()
    for name in (only or []) + (skip or []):
        if name not in known:
            raise UsageError(f"unknown pass '{name}'",
                             hint=join_hints(did_you_mean(name, known), "valid passes: " + ", ".join(known)))
    chosen = [n for n in known if only is None or n in only]
    return [n for n in chosen if n not in (skip or [])]


def count_edges(graph: Graph) -> int:
    return graph.num_edges()


def optimize(graph: Graph, ctx: PassContext, passes: list[str] | None = None, max_iterations: int = 10,
             dump_dir: str | None = None) -> OptimizeReport:
    """Optimize `graph` in place with `passes` (default: all, in order) to a fixed point."""
    names = passes if passes is not None else pass_order()
    classes = registered_passes()
    instances = [(name, classes[name]()) for name in names]
    report = OptimizeReport()
    dump = Path(dump_dir) if dump_dir else None
    if dump is not None:
        from ..graph_io import ensure_directory

        ensure_directory(str(dump), "--dump-dir")
    for iteration in range(1, max_iterations + 1):
        report.iterations = iteration
        any_change = False
        for name, instance in instances:
            run = _run_one(graph, ctx, name, instance, iteration)
            report.runs.append(run)
            any_change |= run.changed
            if dump is not None and run.changed:
                from ..graph_io import save_graphdef

                save_graphdef(to_graphdef(graph), str(dump / f"{len(report.runs):03d}_{name}.pbtxt"))
        if not any_change:
            break
    # A pass that folded or removed a node leaves `loc:@node` behind in its users' _class attrs.
    report.colocation_dropped = drop_dangling_colocation(graph)
    return report


def _run_one(graph: Graph, ctx: PassContext, name: str, instance, iteration: int) -> PassRun:
    nodes_before, edges_before = len(graph), count_edges(graph)
    start = time.perf_counter()
    ran = False
    try:
        result = instance.run(graph, ctx)
        ran = True
        ctx.refresh(graph)
        if result.changed:
            # A pass that changed nothing left the graph as valid as it found it: verifying
            # again would be whole-graph work per pass and iteration, for nothing.
            graph.verify()
    except DftoolError as exc:
        failure = PassFailure(f"pass '{name}' failed: {exc.one_line()}")
        if not ran and isinstance(exc, InvalidGraphError):
            # The pass met an invalid input (a malformed function body, seen only when lowering
            # instantiates it): exit 3 as for any invalid input. An invalid graph *left* by a pass
            # stays the pass's failure (1).
            failure.exit_code = exc.exit_code
        raise failure from exc
    except Exception as exc:
        raise PassFailure(f"pass '{name}' failed: {type(exc).__name__}: {' '.join(str(exc).split())}") from exc
    return PassRun(name, iteration, result.changed, time.perf_counter() - start, nodes_before, len(graph),
                   edges_before, count_edges(graph), dict(result.stats))
