"""`dftool profile GRAPH`: run a graph N times after warm-up and report where time and memory go
(see docs/commands.md). The numbers come from the executor's step statistics (graphtool/exec/step_stats.py),
summarized by graphtool/profiling/; this module only renders them."""
from __future__ import annotations

import json
import time

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from graphtool import graph_io
from graphtool.exec.trace import write_trace
from graphtool.placement.device_names import short_device_name
from graphtool.profiling import cost_model, flops_per_node, profile_report, profile_steps, summarize

from .common import common_options, console, emit_report, info, settings
from .output import notice, result_console, results_shown, show, take_stdout
from .run_cmd import execution_options, open_session

# A profile that has run this long without finishing gets a progress bar.
_PROGRESS_AFTER_S = 0.5
DEFAULT_REPEAT = 10
# --max-time's bound on the steps: each measured step's statistics are kept for the medians.
TIME_BOXED_REPEAT = 1000


@click.command("profile")
@click.argument("graph")
@execution_options
@click.option("--repeat", type=click.IntRange(min=1), metavar="N",
              help=f"Measured steps (default {DEFAULT_REPEAT}; with --max-time, the most: default {TIME_BOXED_REPEAT}).")
@click.option("--max-time", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Stop measuring once this many seconds of measured steps have run (at least one step runs).")
@click.option("--warmup", type=click.IntRange(min=0), default=2, show_default=True, metavar="N",
              help="Steps run first and not measured.")
@click.option("--trace", metavar="FILE.json",
              help="Write the timeline of the median step (Chrome trace/Perfetto; .json.gz: gzipped).")
@click.option("--cost-model-out", metavar="FILE", help="Write measured per-node costs for `place --cost-model`.")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True, metavar="N",
              help="Rows in the top-node tables.")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report on stdout.")
@click.option("--report", metavar="FILE.json", help="Write the JSON report to a file.")
@common_options
def command(graph, feed_pairs, feeds_file, fetches, device, threads, timeout, repeat, max_time, warmup, trace,
            cost_model_out, top, as_json, report, signature, jit, jit_cache, cast_feeds, cluster_spec, compress,
            random_feeds, seed, shape_overrides):
    """Run GRAPH --repeat times after --warmup steps; report time (median and spread over the
    steps) and memory per op type and per node, peak memory per device, transfers per edge (on a
    cluster: network bytes and time), the critical path and loop iterations (tables on stdout; on
    stderr with --json). The first run (plan building, compiling) is timed apart."""
    if repeat is None:
        repeat = TIME_BOXED_REPEAT if max_time is not None else DEFAULT_REPEAT
    if as_json:
        take_stdout()
    for path in (trace, cost_model_out, report):
        if path:
            graph_io.check_writable(path)
    session, feeds, fetch_list = open_session(graph, feed_pairs, feeds_file, fetches, device, threads,
                                              signature=signature, jit=jit, jit_cache=jit_cache,
                                              cast_feeds=cast_feeds, cluster_spec=cluster_spec, compress=compress,
                                              random_feeds=random_feeds, seed=seed, shapes=shape_overrides)
    with _ProgressBar(warmup + repeat, time_boxed=max_time is not None) as progress:
        # Default fetches on an untaken cond branch are dead, not an error (as in `run`).
        steps = profile_steps(session, fetch_list, feeds, repeat=repeat, warmup=warmup, timeout=timeout,
                              allow_dead=not fetches, max_time=max_time, on_step=progress.advance)
    summary = summarize(steps)
    flops, why_none = flops_per_node(session.graph, feeds)
    if why_none:
        notice(f"no FLOP figures: {why_none}")
    document = profile_report(summary, graph=graph, repeat=len(steps), warmup=warmup, top=top, flops_per_node=flops)
    if session.jit_report is not None:
        document["jit"] = session.jit_report.to_json()
    # Files first: if one cannot be written, the error is all that is printed.
    if trace:
        write_trace(summary.representative, trace, metadata={"graph": graph, "step": "median of the measured steps"})
    if cost_model_out:
        graph_io.write_atomic(cost_model_out, (json.dumps(cost_model(summary), indent=2) + "\n").encode())
    if as_json or report:
        emit_report({"command": "profile", **document}, as_json=as_json, report_path=report)
    for warning in document["warnings"]:
        notice(f"warning: {warning}")
    if results_shown():
        render(document, top)
        if session.jit_report is not None:
            show(result_console(), "", *session.jit_report.lines(max(1, settings.verbose)))
    for path, what in ((trace, "trace of the median step"), (cost_model_out, "cost model"), (report, "report")):
        if path:
            info(f"wrote the {what} to {path}")


class _ProgressBar:
    """A rich progress bar on stderr for profiles that take a while: it appears once the profile
    has run for _PROGRESS_AFTER_S (short profiles do not flicker), only on a terminal and
    not with -q (logs and pipes get no control codes)."""

    def __init__(self, total: int, time_boxed: bool = False):
        self.total = total
        self.time_boxed = time_boxed   # --max-time: the step count is only a bound, so no M/N nor ETA
        self.done = 0
        self.enabled = console.is_terminal and not settings.quiet
        self.started = time.monotonic()
        self._progress: Progress | None = None

    def __enter__(self) -> "_ProgressBar":
        return self

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self) -> None:
        self.done += 1
        if self._progress is None and self.enabled and self.done < self.total \
                and time.monotonic() - self.started >= _PROGRESS_AFTER_S:
            columns = (TextColumn("profiling"), BarColumn(), TextColumn("{task.completed} steps"), TimeElapsedColumn()) \
                if self.time_boxed else (TextColumn("profiling"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
            self._progress = Progress(*columns, console=console, transient=True)
            self._task = self._progress.add_task("steps", total=None if self.time_boxed else self.total,
                                                 completed=self.done)
            self._progress.start()
        elif self._progress is not None:
            self._progress.update(self._task, completed=self.done)


# --- tables -----------------------------------------------------------------------------------

def format_bytes(count: float) -> str:
    """1536 -> '1.5 KiB'."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(count) < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} GiB"


def _table(title: str, columns: list[str], rows: list[list], left: int = 1) -> Table:
    """A table whose first `left` columns are text and the rest numbers (right-aligned)."""
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for index, column in enumerate(columns):
        table.add_column(column, justify="left" if index < left else "right", overflow="fold")
    for row in rows:
        table.add_row(*(str(cell) for cell in row))
    return table


def _spread(entry: dict) -> str:
    """'±4%': half the interquartile range of the per-step times, relative to the median."""
    return f"±{entry['spread_percent']:.0f}%"


def _gflops(entry: dict) -> str:
    """Achieved GFLOP/s, '-' where the op does no arithmetic or its FLOPs are unknown."""
    rate = entry.get("gflops_per_s")
    return "-" if rate is None else f"{rate:.3g}" if rate < 1000 else f"{rate:.0f}"


def format_flops(count: float) -> str:
    """39000 -> '39 KFLOP', 4.5e9 -> '4.5 GFLOP'."""
    for unit, scale in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("KFLOP", 1e3)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{count:.0f} FLOP"


def _op_table(document: dict) -> Table:
    return _table("time per op type (per step; median over the steps, ± half the interquartile range)",
                  ["op", "nodes", "calls", "median ms", "±", "%", "cum %", "GFLOP/s", "memory"],
                  [[o["op"], o["nodes"], f"{o['calls']:g}", f"{o['median_ms']:.3f}", _spread(o), f"{o['percent']:.1f}",
                    f"{o['cumulative_percent']:.1f}", _gflops(o), format_bytes(o["allocated_bytes"])]
                   for o in document["ops"]])


def _node_tables(document: dict, top: int) -> list[Table]:
    nodes = {n["name"]: n for n in document["nodes"]}

    def row(node):
        return [node["name"], node["op"], short_device_name(node["device"]), f"{node['calls']:g}",
                f"{node['median_ms']:.3f}", _spread(node), f"{node['percent']:.1f}", format_bytes(node["allocated_bytes"])]
    columns = ["node", "op", "device", "calls", "median ms", "±", "%", "memory"]
    return [_table(f"top {top} nodes by time", columns, [row(nodes[n]) for n in document["top_by_time"]], 3),
            _table(f"top {top} nodes by memory", columns, [row(nodes[n]) for n in document["top_by_memory"]], 3)]


def _critical_path_table(document: dict, top: int) -> Table | None:
    path = document["critical_path"]
    if not path or not path["nodes"]:
        return None
    # The chain in order, but only its `top` largest contributions: loops make it long.
    largest = sorted(range(len(path["nodes"])), key=lambda i: -path["nodes"][i]["contribution_ms"])[:top]
    rows = []
    for index in sorted(largest):
        node = path["nodes"][index]
        where = f"{node['frame']}:{node['iteration']}" if node["frame"] else ""
        rows.append([index + 1, node["name"], node["op"], short_device_name(node["device"]), where,
                     f"{node['contribution_ms']:.3f}"])
    title = (f"critical path: {path['length_ms']:.3f} ms of a {path['step_time_ms']:.3f} ms step "
             f"({100 * path['fraction_of_step']:.0f}%), {len(path['nodes'])} nodes; the {len(rows)} longest")
    return _table(title, ["#", "node", "op", "device", "loop:iteration", "ms"], rows, 5)


def _transfer_table(document: dict, top: int) -> Table | None:
    """The `top` edges that cost the most transfer time per step (the report has them all)."""
    edges = document["transfers"]["edges"]
    if not edges:
        return None
    rows = [[e["tensor"], short_device_name(e["from"]), short_device_name(e["to"]), "yes" if e["across_tasks"] else "",
             f"{e['count']:g}", format_bytes(e["bytes"]), f"{e['time_ms']:.3f}", f"{e['latency_ms']:.3f}"]
            for e in edges[:top]]
    shown = f"; the {len(rows)} slowest of {len(edges)}" if len(edges) > len(rows) else ""
    return _table(f"transfers per edge (per step{shown})",
                  ["tensor", "from", "to", "network", "count", "bytes", "ms", "ms each"], rows, 4)


def _network_line(document: dict) -> str | None:
    network = document["transfers"]["network"]
    if not network["count"]:
        return None
    return (f"network (between tasks), per step: {network['count']:g} transfer(s), "
            f"{format_bytes(network['bytes'])}, {network['time_ms']:.3f} ms of transfer latency (summed)")


def render(document: dict, top: int) -> None:
    """The human-readable profile (stdout, or stderr when --json has stdout)."""
    times = document["step_time_ms"]
    console = result_console()
    stopped = " (--max-time reached)" if document["stopped_by"] == "max_time" else ""
    show(console, f"{document['graph']}: {document['repeat']} measured step(s){stopped} after {document['warmup']} "
                  f"warm-up; step time median {times['median']:.3f} ms ±{times['spread_percent']:.0f}%, "
                  f"mean {times['mean']:.3f} ms, min {times['min']:.3f} ms, max {times['max']:.3f} ms; "
                  f"{document['nodes_executed']:g} node executions per step")
    if document["flops_per_step"]:
        rate = document["flops_per_step"] / (times["median"] * 1e6) if times["median"] > 0 else 0.0
        show(console, f"work: {format_flops(document['flops_per_step'])} per step, {rate:.3g} GFLOP/s "
                      f"achieved in the median step")
    if document["first_run_ms"] is not None:
        later = document["warmup_ms"][1:]
        show(console, f"first run {document['first_run_ms']:.3f} ms (building the plan, compiling, first "
                      f"allocations; not in the figures below" + (")" if document["warmup"] else
                                                                   ": --warmup 0 puts it in them)")
             + (f"; other warm-up steps {', '.join(f'{t:.3f}' for t in later)} ms" if later else ""))
    tables = [_op_table(document), *_node_tables(document, top),
              _table("peak memory", ["device", "peak"],
                     [[short_device_name(d), format_bytes(b)] for d, b in document["memory"]["peak_bytes"].items()])]
    if document["loop_iterations"]:
        tables.append(_table("loop iterations", ["frame", "iterations"],
                             [[frame, count] for frame, count in document["loop_iterations"].items()]))
    for table in (_transfer_table(document, top), _critical_path_table(document, top)):
        if table is not None:
            tables.append(table)
    for table in tables:
        show(console, "", table)
    network = _network_line(document)
    if network is not None:
        show(console, "", network)
