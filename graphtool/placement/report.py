"""What `place()` reports: per-node decisions, softened constraints and the estimated cost.

`PlacementReport.to_json()` is the body of the `dftool place --json` report ("dftool.place/2",
docs/schemas/place.schema.json; the command adds `command`, `graph` and `output`):

    {"schema": "dftool.place/2", "devices": [full names], "soft_placement": bool,
     "cost_model": "<built-in>" or the file,
     "estimated_cost_seconds": float, "transfer_seconds": float,
     "per_device": [{"device", "nodes", "compute_seconds"}],
     "softened": [{"node", "requested", "chosen", "why"}],
     "opaque": [names of nodes whose op dftool does not know: placed without a kernel check],
     "nodes": [{"name", "op", "device", "reason", "detail"[, "candidates"]}]}

`reason` is one of constraint (a requested device allowed only this one), kernel (the only
device with kernels), colocation (placed with its group's first node), cheapest (lowest estimated
cost), consumer (a cheap op placed next to its consumers) or random (random_placement() drew it
among the allowed devices). With --explain each group's first
node lists its candidates: {"device", "compute", "transfer", "parallel_credit", "total"} seconds.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

SCHEMA = "dftool.place/2"


@dataclass
class Candidate:
    """One device considered for a group, with its cost breakdown (seconds)."""

    device: str
    compute: float
    transfer: float
    parallel_credit: float = 0.0

    @property
    def total(self) -> float:
        return self.compute + self.transfer - self.parallel_credit

    def to_json(self) -> dict:
        return {"device": self.device, "compute": self.compute, "transfer": self.transfer,
                "parallel_credit": self.parallel_credit, "total": self.total}


@dataclass
class NodePlacement:
    name: str
    op: str
    device: str
    reason: str
    detail: str
    candidates: list[Candidate] = field(default_factory=list)

    def to_json(self) -> dict:
        entry: dict[str, object] = {"name": self.name, "op": self.op, "device": self.device,
                                    "reason": self.reason, "detail": self.detail}
        if self.candidates:
            entry["candidates"] = [c.to_json() for c in self.candidates]
        return entry


@dataclass
class Softened:
    """A requested device that soft placement did not honour."""

    node: str
    requested: str
    chosen: str
    why: str


@dataclass
class PlacementReport:
    devices: list[str]
    nodes: list[NodePlacement]                 # graph order
    softened: list[Softened]
    device_load: dict[str, float]              # compute seconds per device
    transfer_seconds: float
    opaque: list[str] = field(default_factory=list)   # unknown ops: placed without a kernel check
    soft_placement: bool = True
    cost_model: str = "<built-in>"
    explain: bool = False

    @property
    def assignment(self) -> dict[str, str]:
        """Node name -> full device name."""
        return {n.name: n.device for n in self.nodes}

    @property
    def total_cost(self) -> float:
        """Estimated step time: the busiest device's compute plus every transfer."""
        return max(self.device_load.values(), default=0.0) + self.transfer_seconds

    def nodes_per_device(self) -> dict[str, int]:
        counts = Counter(n.device for n in self.nodes)
        return {device: counts.get(device, 0) for device in self.devices}

    def to_json(self) -> dict:
        counts = self.nodes_per_device()
        return {
            "schema": SCHEMA,
            "devices": self.devices,
            "soft_placement": self.soft_placement,
            "cost_model": self.cost_model,
            "estimated_cost_seconds": self.total_cost,
            "transfer_seconds": self.transfer_seconds,
            "per_device": [{"device": d, "nodes": counts[d], "compute_seconds": self.device_load.get(d, 0.0)}
                           for d in self.devices],
            "softened": [vars(s) for s in self.softened],
            "opaque": self.opaque,
            "nodes": [n.to_json() for n in self.nodes],
        }
