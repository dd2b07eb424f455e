"""Profiling a session (N traced steps after warm-up) and the documents made from the result:
the `--report` JSON ("dftool.profile/2") and the measured cost model (`--cost-model-out`).

The report schema is versioned: fields are only ever added within "dftool.profile/2"; a change
to the meaning or type of a field bumps the version (docs/schemas/profile.schema.json). Times are
milliseconds, sizes bytes. Counts and sizes are integers: per step, the mean over the measured
steps rounded (steps on the same feeds run the same nodes, so the mean is exact unless a loop's
trip count changes from step to step); version 1 gave them as floats.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from ..errors import DftoolError
from ..exec.step_stats import StepStats
from ..placement.cost_model import SCHEMA as COST_MODEL_SCHEMA
from ..placement.device_names import parse_device_name
from .summary import NodeRow, ProfileRun, ProfileSummary, Spread

PROFILE_SCHEMA = "dftool.profile/2"
DEFAULT_TOP = 10
# Steps whose slowest takes this many times the fastest: the figures are not to be trusted as they are.
NOISY_RATIO = 2.0


def profile_steps(session, fetches: list[str], feeds: dict, *, repeat: int, warmup: int,
                  timeout: float | None = None, allow_dead: bool = False, max_time: float | None = None,
                  on_step: Callable[[], None] | None = None) -> ProfileRun:
    """Run `warmup` steps (caches, the thread pool, BLAS and the recorder itself warm up), then
    up to `repeat` measured ones, stopping early once `max_time` seconds of measured steps have
    passed (at least one always runs: benchmark_model's time-boxed mode). Every step is traced,
    so the first measured one does not pay for warming up the recording. The first run's wall
    time is kept apart (with warmup 0 it is also the first measured step). `on_step` is called
    after every step (progress bars)."""
    run = ProfileRun(steps=[])
    measuring_since = None
    for index in range(warmup + repeat):
        started = time.perf_counter_ns()
        result = session.run(fetches, feeds, timeout=timeout, allow_dead=allow_dead, trace=True)
        elapsed = time.perf_counter_ns() - started
        if index == 0:
            run.first_run_ns = elapsed
        if index < warmup:
            run.warmup_ns.append(elapsed)
        else:
            if measuring_since is None:
                measuring_since = started
            run.steps.append(result.step_stats)
        if on_step is not None:
            on_step()
        if max_time is not None and measuring_since is not None \
                and time.perf_counter_ns() - measuring_since >= max_time * 1e9 and index + 1 < warmup + repeat:
            run.stopped_by = "max_time"
            break
    return run


def _ms(ns: float) -> float:
    return round(ns / 1e6, 6)


def _count(mean: float) -> int:
    """A per-step count or size (a mean over the measured steps) as the integer it nearly always is."""
    return int(round(mean))


def profile_report(summary: ProfileSummary, *, graph: str, repeat: int, warmup: int,
                   top: int = DEFAULT_TOP, flops_per_node: dict[str, int | None] | None = None) -> dict:
    """Everything the profile found, as the JSON document `--report` writes. With
    `flops_per_node` (one execution of each node, graphtool.costs.node_costs), ops and nodes also
    get their FLOPs per step and the GFLOP/s achieved in their median time."""
    times = summary.step_times
    work = _Work(summary, flops_per_node or {})
    return {
        "schema": PROFILE_SCHEMA,
        "graph": graph,
        "repeat": repeat,
        "warmup": warmup,
        "devices": summary.devices,
        "step_time_ms": {"mean": _ms(times.mean_ns), "median": _ms(times.median_ns),
                         "min": _ms(times.min_ns), "max": _ms(times.max_ns),
                         "spread_percent": round(100 * times.spread.relative, 2),
                         "all": [_ms(t) for t in times.all_ns]},
        "first_run_ms": None if summary.first_run_ns is None else _ms(summary.first_run_ns),
        "warmup_ms": [_ms(t) for t in summary.warmup_ns],
        "stopped_by": summary.stopped_by,
        "warnings": profile_warnings(summary, warmup),
        "nodes_executed": _count(summary.nodes_executed),
        "loop_iterations": summary.iterations,
        "ops": [{"op": row.op, "nodes": row.nodes, "calls": _count(row.calls), "avg_ms": _ms(row.time_ns),
                 **_spread_entry(row.spread), **work.entry(work.op_flops.get(row.op), row.spread.median_ns),
                 "percent": round(row.percent, 4), "cumulative_percent": round(row.cumulative_percent, 4),
                 "allocated_bytes": _count(row.allocated_bytes), "output_bytes": _count(row.output_bytes)}
                for row in summary.ops],
        "nodes": [{**_node_entry(row), **work.entry(work.node_flops.get((row.device, row.name)), row.spread.median_ns)}
                  for row in summary.nodes],
        "flops_per_step": work.total,
        "top_by_time": [row.name for row in summary.top_nodes_by_time(top)],
        "top_by_memory": [row.name for row in summary.top_nodes_by_memory(top)],
        "memory": {"peak_bytes": summary.peak_bytes},
        "critical_path": _critical_path_entry(summary),
        "transfers": _transfers_entry(summary),
    }


def _transfers_entry(summary: ProfileSummary) -> dict:
    network = summary.network
    return {
        "edges": [{"tensor": row.tensor, "from": row.send_device, "to": row.recv_device,
                   "across_tasks": row.across_tasks, "count": _count(row.count), "bytes": _count(row.bytes),
                   "time_ms": _ms(row.time_ns), "latency_ms": _ms(row.latency_ns)} for row in summary.edges],
        "network": {"count": _count(network.count), "bytes": _count(network.bytes), "time_ms": _ms(network.time_ns)},
    }


def flops_per_node(graph, feeds: dict) -> tuple[dict[str, int | None], str | None]:
    """FLOPs of one execution of each node of `graph` (the graph a session ran) at the fed
    shapes, graphtool/costs.py counting; and why there are none when shape inference cannot
    follow the graph (the profile stands without them)."""
    from ..costs import flops_by_node, node_costs

    try:
        costs = node_costs(graph, feed_shapes={name: list(np.shape(value)) for name, value in feeds.items()})
    except DftoolError as exc:
        return {}, exc.one_line()
    return flops_by_node(costs.values()), None


class _Work:
    """FLOPs per step of each measured node (its FLOPs per execution times its executions per
    step: a loop body's every iteration) and op type (the sum of its nodes whose FLOPs are
    known), and the total; None where no estimate exists (a function call, an unknown rank)."""

    def __init__(self, summary: ProfileSummary, flops_per_node: dict[str, int | None]):
        self.node_flops: dict[tuple[str, str], float | None] = {}
        self.op_flops: dict[str, float | None] = {}
        for row in summary.nodes:
            each = flops_per_node.get(row.name)
            flops = None if each is None else each * row.calls
            self.node_flops[row.device, row.name] = flops
            if flops is not None:
                self.op_flops[row.op] = (self.op_flops.get(row.op) or 0) + flops
            else:
                self.op_flops.setdefault(row.op, None)
        known = [f for f in self.node_flops.values() if f is not None]
        self.total = int(round(sum(known))) if known else None

    @staticmethod
    def entry(flops: float | None, median_ns: float) -> dict:
        """FLOPs per step and GFLOP/s in the median time (FLOPs per nanosecond); None when the
        FLOPs are unknown or zero (data movement, sources) or no time was measured."""
        rate = flops / median_ns if flops and median_ns > 0 else None
        return {"flops": None if flops is None else int(round(flops)),
                "gflops_per_s": None if rate is None else round(rate, 4)}


def profile_warnings(summary: ProfileSummary, warmup: int) -> list[str]:
    """What makes the figures less trustworthy than they look, one sentence each."""
    warnings = []
    times = summary.step_times
    if times.ratio > NOISY_RATIO:
        warnings.append(f"step times vary {times.ratio:.1f}x (min {_ms(times.min_ns):.3f} ms, max "
                        f"{_ms(times.max_ns):.3f} ms): the machine is busy or the work varies from step "
                        f"to step; medians are shown, and more --repeat steps steady them")
    if warmup == 0 and summary.first_run_ns is not None and len(times.all_ns) > 0:
        warnings.append("--warmup 0: the first measured step includes the first run's one-off work "
                        "(building the plan, compiling, first allocations)")
    return warnings


def _spread_entry(spread: Spread) -> dict:
    return {"median_ms": _ms(spread.median_ns), "min_ms": _ms(spread.min_ns), "max_ms": _ms(spread.max_ns),
            "spread_percent": round(100 * spread.relative, 2)}


def _node_entry(row: NodeRow) -> dict:
    return {"name": row.name, "op": row.op, "device": row.device, "calls": _count(row.calls),
            "avg_ms": _ms(row.time_ns), **_spread_entry(row.spread), "percent": round(row.percent, 4),
            "allocated_bytes": _count(row.allocated_bytes), "output_bytes": _count(row.output_bytes),
            "largest_output_bytes": int(row.largest_output_bytes)}


def _critical_path_entry(summary: ProfileSummary) -> dict | None:
    path = summary.critical_path
    if path is None:
        return None
    return {
        "length_ms": _ms(path.length_ns),
        "step_time_ms": _ms(path.wall_ns),
        "fraction_of_step": round(path.fraction_of_step, 6),
        "nodes": [{"name": s.execution.name, "op": s.execution.op, "device": s.execution.device,
                   "frame": s.execution.frame, "iteration": s.execution.iteration,
                   "start_ms": _ms(s.execution.start_ns), "duration_ms": _ms(s.execution.duration_ns),
                   "contribution_ms": _ms(s.contribution_ns)} for s in path.steps],
    }


def cost_model(summary: ProfileSummary) -> dict:
    """Measured costs in seconds per step, by node and by op type, each keyed by the type of the
    device it ran on. A node's cost is its summed execution time in one step (every iteration of
    a loop body); an op's is the mean cost of its nodes, the estimate for nodes not measured."""
    nodes: dict[str, dict[str, float]] = {}
    per_op: dict[str, dict[str, list[float]]] = {}
    for row in summary.nodes:
        device_type = parse_device_name(row.device).completed().type
        assert device_type is not None   # completed() fills every field
        seconds = row.time_ns / 1e9
        nodes.setdefault(row.name, {})[device_type] = seconds
        per_op.setdefault(row.op, {}).setdefault(device_type, []).append(seconds)
    ops = {op: {device: sum(costs) / len(costs) for device, costs in by_device.items()}
           for op, by_device in per_op.items()}
    return {"schema": COST_MODEL_SCHEMA, "nodes": nodes, "ops": ops}
