"""Summaries of several recorded steps: time and memory per op type and per node, peak memory
per device, step times, loop iterations and the critical path of a representative step.

Times per op or node are per step (the mean over the steps) and summed over executions: a node
in a loop body adds every iteration. Percentages are of the summed node time (busy time; with a
thread pool it can exceed the wall time). Per op or node, `allocated_bytes` are the bytes of the
buffers it brought into use per step ("memory" in the tables; outputs that only alias an input,
such as Identity's or Switch's, allocate nothing), and `output_bytes` those of every output it
produced, aliases included, as TensorFlow's benchmark_model reports them. Peak memory is the most
bytes in use at once on a device (step_stats.py says what counts). Transfers between devices
and tasks are summed per edge by transfers.py.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from ..exec.step_stats import StepStats
from .critical_path import CriticalPath, critical_path
from .transfers import EdgeRow, TransferTotals, edge_rows, network_totals


@dataclass
class OpRow:
    """One op type: executions per step, time per step, its share, and bytes per step."""

    op: str
    nodes: int              # distinct nodes of this type that ran
    calls: float            # executions per step
    time_ns: float          # summed duration per step
    output_bytes: float
    allocated_bytes: float
    percent: float = 0.0
    cumulative_percent: float = 0.0


@dataclass
class NodeRow:
    """One node: like OpRow, plus its device and its largest single output."""

    name: str
    op: str
    device: str
    calls: float
    time_ns: float
    output_bytes: float
    allocated_bytes: float
    largest_output_bytes: int
    percent: float = 0.0


@dataclass
class StepTimes:
    """Wall times of the measured steps, in nanoseconds."""

    all_ns: list[int]

    @property
    def mean_ns(self) -> float:
        return statistics.fmean(self.all_ns) if self.all_ns else 0.0

    @property
    def median_ns(self) -> float:
        return statistics.median(self.all_ns) if self.all_ns else 0.0

    @property
    def min_ns(self) -> int:
        return min(self.all_ns, default=0)

    @property
    def max_ns(self) -> int:
        return max(self.all_ns, default=0)


@dataclass
class ProfileSummary:
    steps: list[StepStats]
    step_times: StepTimes
    ops: list[OpRow]
    nodes: list[NodeRow]
    peak_bytes: dict[str, int]
    iterations: dict[str, int]
    nodes_executed: float
    representative: StepStats | None
    critical_path: CriticalPath | None = None
    devices: list[str] = field(default_factory=list)
    edges: list[EdgeRow] = field(default_factory=list)            # transfers per edge (transfers.py)
    network: TransferTotals = field(default_factory=TransferTotals)  # ... over the edges between tasks

    def top_nodes_by_time(self, count: int) -> list[NodeRow]:
        return self.nodes[:count]

    def top_nodes_by_memory(self, count: int) -> list[NodeRow]:
        return sorted(self.nodes, key=lambda row: (-row.allocated_bytes, -row.output_bytes, row.name))[:count]


def summarize(steps: list[StepStats]) -> ProfileSummary:
    """Aggregate the measured steps (at least one for a critical path)."""
    count = max(1, len(steps))
    nodes = _node_rows(steps, count)
    ops = _op_rows(nodes)
    edges = edge_rows(steps)
    representative = median_step(steps)
    peaks: dict[str, int] = {}
    for step in steps:
        for device, peak in step.peak_bytes.items():
            peaks[device] = max(peaks.get(device, 0), peak)
    return ProfileSummary(
        steps=steps, step_times=StepTimes([s.wall_ns for s in steps]), ops=ops, nodes=nodes,
        peak_bytes=peaks, iterations=representative.iterations if representative else {},
        nodes_executed=sum(s.nodes_executed for s in steps) / count, representative=representative,
        critical_path=critical_path(representative) if representative else None,
        devices=sorted({d for s in steps for d in s.devices}), edges=edges, network=network_totals(edges))


def median_step(steps: list[StepStats]) -> StepStats | None:
    """The step whose wall time is the median: the one to draw and to find a critical path in,
    so that a single slow (or lucky) step does not stand for the run."""
    if not steps:
        return None
    ranked = sorted(steps, key=lambda s: s.wall_ns)
    return ranked[(len(ranked) - 1) // 2]


def _node_rows(steps: list[StepStats], count: int) -> list[NodeRow]:
    rows: dict[tuple[str, str], NodeRow] = {}
    for step in steps:
        for execution in step.nodes:
            key = (execution.device, execution.name)
            row = rows.get(key)
            if row is None:
                row = rows[key] = NodeRow(execution.name, execution.op, execution.device, 0, 0, 0, 0, 0)
            row.calls += 1
            row.time_ns += execution.duration_ns
            row.output_bytes += execution.output_bytes
            row.allocated_bytes += execution.allocated_bytes
            row.largest_output_bytes = max([row.largest_output_bytes]
                                           + [i.bytes for i in execution.outputs if i is not None])
    total = sum(row.time_ns for row in rows.values()) or 1
    for row in rows.values():
        row.calls /= count
        row.time_ns /= count
        row.output_bytes /= count
        row.allocated_bytes /= count
        row.percent = 100.0 * row.time_ns * count / total
    return sorted(rows.values(), key=lambda row: (-row.time_ns, row.name))


def _op_rows(nodes: list[NodeRow]) -> list[OpRow]:
    rows: dict[str, OpRow] = {}
    for node in nodes:
        row = rows.setdefault(node.op, OpRow(node.op, 0, 0, 0, 0, 0))
        row.nodes += 1
        row.calls += node.calls
        row.time_ns += node.time_ns
        row.output_bytes += node.output_bytes
        row.allocated_bytes += node.allocated_bytes
        row.percent += node.percent
    ordered = sorted(rows.values(), key=lambda row: (-row.time_ns, row.op))
    running = 0.0
    for row in ordered:
        running += row.percent
        row.cumulative_percent = min(100.0, running)
    return ordered
