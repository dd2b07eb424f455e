"""`dftool optimize IN OUT`: run the optimization passes (see docs/commands.md)."""
from __future__ import annotations

import time
from collections import Counter

import click
from rich.table import Table

from graphtool import graph_io
from graphtool.errors import DftoolError, RuntimeFailure, UsageError
from graphtool.feeds.generated import apply_shape_overrides, parse_shape_overrides
from graphtool.suggest import did_you_mean

from . import output
from .common import (common_options, console, emit_report, graph_output_options, info, load_graph, prepare_graph_output,
                     save_graph, settings, signature_option)
from .output import show, stage


def _split(values: tuple[str, ...]) -> list[str] | None:
    if not values:
        return None
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def _op_table(before: Counter, after: Counter) -> Table:
    table = output.table("ops before/after", ["op", "before", "after", "delta"], right=("before", "after", "delta"))
    for op in sorted(set(before) | set(after), key=lambda o: (-(before[o] or after[o]), o)):
        delta = after[op] - before[op]
        if before[op] or after[op]:
            table.add_row(op, str(before[op]), str(after[op]), f"{delta:+d}" if delta else "")
    return table


def _cost_figures(graph) -> dict:
    """The figures optimize compares before and after (graphtool/costs.py; one run, unknown
    dims counted as 1)."""
    from graphtool.costs import graph_costs

    costs = graph_costs(graph)
    return {"parameters": costs.parameters["elements"], "model_bytes": costs.model_bytes,
            "flops": costs.total.flops, "macs": costs.total.macs, "bytes_accessed": costs.total.bytes_accessed,
            "notes": costs.notes}


_COST_ROWS = (("parameters", "parameters"), ("model size (bytes)", "model_bytes"), ("FLOPs", "flops"),
              ("MACs", "macs"), ("memory access (bytes)", "bytes_accessed"))


def _cost_table(before: dict, after: dict) -> Table:
    table = output.table("costs before/after (one run)", ["figure", "before", "after", "delta"],
                         right=("before", "after", "delta"))
    for title, key in _COST_ROWS:
        delta = after[key] - before[key]
        table.add_row(title, f"{before[key]:,}", f"{after[key]:,}", f"{delta:+,}" if delta else "")
    return table


# --verify runs graphs, and a graph whose loop never ends must not hang `optimize`.
DEFAULT_VERIFY_TIMEOUT = 60.0


def _verify(original, optimized, fetch_names, feeds_file, tolerance, timeout, seed: int = 0,
            shapes=None) -> tuple[list[str], str]:
    """Differences between the graphs' fetches on the given feeds, or on the first kind of
    generated feeds (graphtool/feeds/generated.py, from `seed`) the original graph accepts
    (integer inputs may have to be divisors or permutations), beyond each fetch's float32
    accumulation tolerance (graphtool/opt/tolerance.py) or the explicit relative `tolerance`;
    also the tolerance in words. `shapes` (--shape: name -> dims) run both graphs' placeholders
    at those shapes. Every run together gets `timeout` seconds; running out is a RuntimeFailure
    saying how to raise it."""
    from graphtool.exec.executor import StepTimeout
    from graphtool.exec.session import Session
    from graphtool.opt.equivalence import candidate_feeds, differences
    from graphtool.opt.tolerance import describe, fetch_tolerances

    from graphtool.feeds.files import collect_feeds
    from graphtool.feeds.generated import find_input

    deadline = time.monotonic() + timeout

    def left() -> float:
        # A step needs a positive timeout; one already past its deadline stops at its first node.
        return max(deadline - time.monotonic(), 1e-6)

    if shapes:   # both graphs run at the --shape shapes (copies: OUT keeps its declared shapes)
        original, optimized = original.copy(), optimized.copy()
        apply_shape_overrides(original, shapes)
        apply_shape_overrides(optimized, {name: dims for name, dims in shapes.items()
                                          if find_input(original, name).name in optimized})
    candidates = [collect_feeds((), feeds_file)] if feeds_file else candidate_feeds(original, seed, shapes)
    failure = None
    try:
        for feeds in candidates:
            try:
                Session(original, threads=1).run(fetch_names, feeds, allow_dead=True, timeout=left())
            except StepTimeout:
                raise
            except DftoolError as exc:
                failure = failure or exc
                continue
            tolerances = fetch_tolerances([original, optimized], fetch_names, feeds, tolerance)
            return (differences(original, optimized, fetch_names, feeds, tolerances=tolerances, timeout=left),
                    describe(tolerances))
    except StepTimeout as exc:
        raise RuntimeFailure(f"--verify: running the graphs took longer than --timeout {timeout:g} s: {exc}",
                             hint="a loop that never ends? if the graph is just slow, raise it with "
                                  "--timeout SECONDS") from None
    what = feeds_file or "random feeds"
    reason = failure.one_line() if failure is not None else "no feeds to try"
    raise RuntimeFailure(f"--verify: the original graph itself fails on {what}: {reason}",
                         hint="give real inputs with --feeds FILE.npz")


@click.command("optimize")
@click.argument("input_path", metavar="IN", required=False)
@click.argument("output_path", metavar="OUT", required=False)
@click.option("--fetch", "fetches", multiple=True, metavar="T", help="Tensor whose name and value must survive (default: every graph output).")
@click.option("--keep", multiple=True, metavar="NODE", help="Node to keep as it is.")
@click.option("--passes", "only", multiple=True, metavar="LIST", help="Run only these passes (comma separated).")
@click.option("--skip", multiple=True, metavar="LIST", help="Skip these passes (comma separated).")
@click.option("--list-passes", is_flag=True, help="List the passes and exit.")
@click.option("--max-iterations", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--fold-max-bytes", type=click.IntRange(min=0), default=10 * 1024 * 1024, show_default=True,
              help="Largest constant that folding may create.")
@click.option("--dump-dir", metavar="DIR", help="Write the graph after each pass that changed it.")
@click.option("--verify", "verify_runs", is_flag=True, help="Run both graphs on random feeds; exit 1 if they differ.")
@click.option("--feeds", "feeds_file", metavar="FILE.npz", help="With --verify: feed these values instead of random ones.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, metavar="S",
              help="With --verify: the seed of the generated feeds.")
@click.option("--shape", "shape_overrides", multiple=True, metavar="NAME=DIMS",
              help="With --verify: run both graphs with placeholder NAME at this concrete shape (repeatable).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=DEFAULT_VERIFY_TIMEOUT,
              show_default=True, metavar="SECONDS",
              help="With --verify: stop running the graphs after this long (exit 1); a kernel already "
                   "running (e.g. a BLAS call) finishes first.")
@click.option("--verify-tolerance", "verify_tolerance", type=click.FloatRange(min=0), metavar="REL",
              help="With --verify: allow differences up to REL times each fetch's largest magnitude "
                   "(default: derived from the graph's float accumulation depth).")
@click.option("--strict-fp", is_flag=True, help="Skip rewrites that can change floating-point results.")
@graph_output_options
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report on stdout (needs OUT other than '-').")
@click.option("--report", metavar="FILE.json", help="Write the JSON report to a file.")
@signature_option
@common_options
def command(input_path, output_path, fetches, keep, only, skip, list_passes, max_iterations, fold_max_bytes,
            dump_dir, verify_runs, feeds_file, seed, shape_overrides, timeout, verify_tolerance, strict_fp, text, binary,
            as_json, report, signature):
    """Optimize IN and write OUT; never changes what the fetched tensors compute."""
    from graphtool import api
    from graphtool.costs import constant_bytes
    from graphtool.ir.queries import graph_outputs
    from graphtool.opt.base import registered_passes
    from graphtool.opt.manager import count_edges, select_passes

    if list_passes:
        classes = registered_passes()
        for name in select_passes(None, None):
            click.echo(f"{name:16} {classes[name].description}")
        return
    if not input_path or not output_path:
        raise UsageError("optimize needs IN and OUT (or --list-passes)")
    if only and skip:
        raise UsageError("--passes and --skip cannot be combined")
    text = prepare_graph_output(output_path, text=text, binary=binary, as_json=as_json)
    if report:
        graph_io.check_writable(report)
    passes = select_passes(_split(only), _split(skip))
    shapes = parse_shape_overrides(shape_overrides)
    if (shapes or seed) and not verify_runs:
        raise UsageError(f"{'--shape' if shapes else '--seed'} needs --verify (it sets what --verify feeds)")
    graph = load_graph(input_path, signature=signature)
    if shapes:   # a bad override is reported before the passes run
        apply_shape_overrides(graph.copy(), shapes)
    fetch_names = list(fetches) or [ref.name for node in graph_outputs(graph) for ref in node.outputs]
    fetch_refs = []
    for name in fetch_names:
        try:
            fetch_refs.append(graph.tensor(name))
        except UsageError as exc:
            raise UsageError(f"--fetch {name}: {exc}", hint=exc.hint) from None
    for name in keep:
        if name not in graph:
            raise UsageError(f"--keep {name}: no node named '{name}' in the graph",
                             hint=did_you_mean(name, (node.name for node in graph.nodes)))
    original = graph.copy() if verify_runs else None
    ops_before, nodes_before, edges_before = Counter(n.op for n in graph.nodes), len(graph), count_edges(graph)
    bytes_before = constant_bytes(graph)
    with stage("counting costs"):
        costs_before = _cost_figures(graph)
    with stage("optimizing"):
        graph, result = api.optimize(graph, fetches=fetch_refs, keep=keep, passes=passes, strict_fp=strict_fp,
                                     fold_max_bytes=fold_max_bytes, max_iterations=max_iterations,
                                     dump_dir=dump_dir, inplace=True, report=True)
    bytes_after = constant_bytes(graph)
    with stage("counting costs"):
        costs_after = _cost_figures(graph)

    mismatches, tolerance_text = [], ""
    if verify_runs:
        with stage("verifying (running both graphs)"):
            mismatches, tolerance_text = _verify(original, graph, fetch_names, feeds_file, verify_tolerance, timeout,
                                                 seed, shapes)
        if mismatches:
            raise RuntimeFailure("--verify: the optimized graph computes something else: " + "; ".join(mismatches[:3])
                                 + f" (tolerance {tolerance_text})",
                                 hint="rerun with --skip to find the pass, and please report it")
    save_graph(graph, output_path, text=text)

    if not settings.quiet:
        for run in result.runs:
            if run.changed or settings.verbose:
                stats = ", ".join(f"{k}={v}" for k, v in run.stats.items())
                info(f"{run.name:15} iter {run.iteration}: nodes {run.nodes_after - run.nodes_before:+d}, "
                     f"edges {run.edges_after - run.edges_before:+d}, {run.seconds * 1e3:.1f} ms  {stats}")
        show(console, _op_table(ops_before, Counter(n.op for n in graph.nodes)))
        show(console, "", _cost_table(costs_before, costs_after))
        for note in costs_after["notes"]:
            show(console, f"note (after): {note}")
        info(f"nodes {nodes_before} -> {len(graph)}, edges {edges_before} -> {count_edges(graph)}, "
             f"constants {bytes_before:,} -> {bytes_after:,} bytes, {result.iterations} iteration(s)"
             + (f", verified on {feeds_file or f'generated feeds (seed {seed})'} within {tolerance_text}"
                if verify_runs else ""))
    if as_json or report:
        emit_report({"command": "optimize", "graph": input_path, "output": output_path,
                     "nodes": {"before": nodes_before, "after": len(graph)},
                     "edges": {"before": edges_before, "after": count_edges(graph)},
                     "constant_bytes": {"before": bytes_before, "after": bytes_after},
                     "costs": {"before": costs_before, "after": costs_after},
                     "ops": {"before": dict(ops_before), "after": dict(Counter(n.op for n in graph.nodes))},
                     "iterations": result.iterations, "verified": verify_runs and not mismatches,
                     "verify_tolerance": tolerance_text or None,
                     "passes": [run.__dict__ for run in result.runs]},
                    as_json=as_json, report_path=report)
