"""Summaries of several recorded steps: time and memory per op type and per node, peak memory
per device, step times, loop iterations and the critical path of a representative step.

Times per op or node are per step and summed over executions: a node in a loop body adds every
iteration. Each has the mean over the steps (`time_ns`) and, since a busy machine makes a few
steps slow, the median with its spread (`spread`: the steps' times per step, summarized by
`Spread`), which the tables show. Percentages are of the summed node time (busy time; with a
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
class Spread:
    """How one quantity's per-step values (nanoseconds) are distributed over the measured steps:
    median, quartiles, extremes. The half interquartile range relative to the median is the
    "±%" the tables print: unlike max/min it ignores the odd step a busy machine slows."""

    median_ns: float = 0.0
    p25_ns: float = 0.0
    p75_ns: float = 0.0
    min_ns: float = 0.0
    max_ns: float = 0.0

    @classmethod
    def of(cls, values: list[float]) -> "Spread":
        if not values:
            return cls()
        ordered = sorted(values)
        return cls(median_ns=statistics.median(ordered), p25_ns=_quantile(ordered, 0.25),
                   p75_ns=_quantile(ordered, 0.75), min_ns=ordered[0], max_ns=ordered[-1])

    @property
    def relative(self) -> float:
        """Half the interquartile range over the median (0.04: ±4%); 0 for a zero median."""
        return (self.p75_ns - self.p25_ns) / 2 / self.median_ns if self.median_ns > 0 else 0.0


def _quantile(ordered: list[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default)."""
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


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
    spread: Spread = field(default_factory=Spread)  # of its time per step over the measured steps


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
    spread: Spread = field(default_factory=Spread)  # of its time per step over the measured steps
    per_step_ns: list[float] = field(default_factory=list, repr=False)


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

    @property
    def ratio(self) -> float:
        """Slowest over fastest step (1.0 for fewer than two steps)."""
        return self.max_ns / self.min_ns if len(self.all_ns) > 1 and self.min_ns > 0 else 1.0

    @property
    def spread(self) -> Spread:
        return Spread.of([float(t) for t in self.all_ns])


@dataclass
class ProfileRun:
    """What `profile_steps` ran: the measured steps' statistics, and apart from them the first run
    (building the step's plan, JIT compiles, first-touch allocations, BLAS start-up) and the other
    warm-up steps, which no per-step figure includes."""

    steps: list[StepStats]
    first_run_ns: int | None = None        # wall time of the very first session.run, None if measured
    warmup_ns: list[int] = field(default_factory=list)   # every warm-up step, the first run included
    stopped_by: str = "repeat"             # "repeat": all --repeat steps ran; "max_time": time ran out

    def __len__(self) -> int:
        return len(self.steps)


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
    first_run_ns: int | None = None    # see ProfileRun
    warmup_ns: list[int] = field(default_factory=list)
    stopped_by: str = "repeat"

    def top_nodes_by_time(self, count: int) -> list[NodeRow]:
        """The nodes with the largest median time per step."""
        return self.nodes[:count]

    def top_nodes_by_memory(self, count: int) -> list[NodeRow]:
        return sorted(self.nodes, key=lambda row: (-row.allocated_bytes, -row.output_bytes, row.name))[:count]


def summarize(measured: ProfileRun | list[StepStats]) -> ProfileSummary:
    """Aggregate the measured steps (at least one for a critical path)."""
    run = measured if isinstance(measured, ProfileRun) else ProfileRun(steps=list(measured))
    steps = run.steps
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
        devices=sorted({d for s in steps for d in s.devices}), edges=edges, network=network_totals(edges),
        first_run_ns=run.first_run_ns, warmup_ns=list(run.warmup_ns), stopped_by=run.stopped_by)


def median_step(steps: list[StepStats]) -> StepStats | None:
    """The step whose wall time is the median: the one to draw and to find a critical path in,
    so that a single slow (or lucky) step does not stand for the run."""
    if not steps:
        return None
    ranked = sorted(steps, key=lambda s: s.wall_ns)
    return ranked[(len(ranked) - 1) // 2]


def _node_rows(steps: list[StepStats], count: int) -> list[NodeRow]:
    rows: dict[tuple[str, str], NodeRow] = {}
    for index, step in enumerate(steps):
        for execution in step.nodes:
            key = (execution.device, execution.name)
            row = rows.get(key)
            if row is None:
                row = rows[key] = NodeRow(execution.name, execution.op, execution.device, 0, 0, 0, 0, 0)
            row.calls += 1
            row.time_ns += execution.duration_ns
            if len(row.per_step_ns) < index + 1:
                row.per_step_ns.extend([0.0] * (index + 1 - len(row.per_step_ns)))
            row.per_step_ns[index] += execution.duration_ns
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
        # A step that did not run the node (a cond branch not taken) spent 0 ns on it.
        row.per_step_ns.extend([0.0] * (len(steps) - len(row.per_step_ns)))
        row.spread = Spread.of(row.per_step_ns)
    return sorted(rows.values(), key=lambda row: (-row.spread.median_ns, -row.time_ns, row.name))


def _op_rows(nodes: list[NodeRow]) -> list[OpRow]:
    rows: dict[str, OpRow] = {}
    per_step: dict[str, list[float]] = {}
    for node in nodes:
        row = rows.setdefault(node.op, OpRow(node.op, 0, 0, 0, 0, 0))
        times = per_step.setdefault(node.op, [0.0] * len(node.per_step_ns))
        for index, value in enumerate(node.per_step_ns):
            times[index] += value
        row.nodes += 1
        row.calls += node.calls
        row.time_ns += node.time_ns
        row.output_bytes += node.output_bytes
        row.allocated_bytes += node.allocated_bytes
        row.percent += node.percent
    for op, row in rows.items():
        row.spread = Spread.of(per_step[op])
    ordered = sorted(rows.values(), key=lambda row: (-row.spread.median_ns, -row.time_ns, row.op))
    running = 0.0
    for row in ordered:
        running += row.percent
        row.cumulative_percent = min(100.0, running)
    return ordered
