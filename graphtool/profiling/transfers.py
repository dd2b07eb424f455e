"""Transfers per edge over several steps: the bytes and the time that moving tensors between
devices cost, which `dftool profile` reports (on a cluster: the network).

An edge is a tensor going from one device to another: (tensor, sending device, receiving
device), the tensor being what its _Send was given (`y:0`; a Cast's output where --compress
narrowed it). Per edge and per step (the mean over the steps), `count` values crossed it (a
loop's edge once per iteration), `bytes` were received, and `time_ns` is their summed latency,
each from the _Send's start to the _Recv's end (step_stats.Transfer). Transfers overlap, so
summed times, like summed node times, can exceed the step's wall time. `network` sums the edges
between tasks, which on a cluster cross process or machine boundaries.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..exec.step_stats import StepStats, transfers


@dataclass
class EdgeRow:
    """One edge: transfers, bytes and summed latency per step."""

    tensor: str
    send_device: str
    recv_device: str
    across_tasks: bool
    count: float
    bytes: float
    time_ns: float

    @property
    def latency_ns(self) -> float:
        """Mean latency of one transfer."""
        return self.time_ns / self.count if self.count else 0.0


@dataclass
class TransferTotals:
    """Transfers, bytes and summed latency per step over some edges."""

    count: float = 0.0
    bytes: float = 0.0
    time_ns: float = 0.0


def edge_rows(steps: list[StepStats]) -> list[EdgeRow]:
    """Every edge that moved a value in the steps, the most time per step first."""
    rows: dict[tuple[str, str, str], EdgeRow] = {}
    for step in steps:
        for transfer in transfers(step):
            key = (transfer.tensor, transfer.send_device, transfer.recv_device)
            row = rows.get(key)
            if row is None:
                row = rows[key] = EdgeRow(*key, transfer.across_tasks, 0, 0, 0)
            row.count += 1
            row.bytes += transfer.bytes
            row.time_ns += transfer.latency_ns
    count = max(1, len(steps))
    for row in rows.values():
        row.count /= count
        row.bytes /= count
        row.time_ns /= count
    return sorted(rows.values(), key=lambda row: (-row.time_ns, row.tensor, row.send_device, row.recv_device))


def network_totals(rows: list[EdgeRow]) -> TransferTotals:
    """The sums over the edges between tasks."""
    totals = TransferTotals()
    for row in rows:
        if row.across_tasks:
            totals.count += row.count
            totals.bytes += row.bytes
            totals.time_ns += row.time_ns
    return totals
