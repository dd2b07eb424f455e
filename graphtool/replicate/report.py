"""What `dftool replicate` did, for the text output and the JSON report (dftool.replicate/1)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..placement.device_names import short_device_name


@dataclass
class ReplicateReport:
    mode: str
    replicas: int
    devices: list[str]
    shared_device: str
    split: list[dict]                     # {"input", "batch"}
    nodes_before: int
    nodes_after: int
    nodes_replicated: int
    nodes_single: int
    variables: list[str]
    updates: list[dict]                   # {"node", "op", "averaged": [tensor, ...]}
    gradients_reduced: int
    buckets: list[dict] = field(default_factory=list)   # {"dtype", "tensors", "bytes"}
    losses: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    prefix: str = "replica"
    fuse_bytes: int = 0

    @property
    def fused_buckets(self) -> list[dict]:
        return [bucket for bucket in self.buckets if bucket["tensors"] > 1]

    def to_dict(self) -> dict:
        fused = self.fused_buckets
        return {
            "mode": self.mode, "replicas": self.replicas,
            "devices": self.devices, "shared_device": self.shared_device,
            "replica_prefix": self.prefix,
            "split": self.split,
            "nodes": {"before": self.nodes_before, "after": self.nodes_after,
                      "replicated": self.nodes_replicated, "single": self.nodes_single},
            "variables": len(self.variables),
            "updates": self.updates,
            "gradients_reduced": self.gradients_reduced,
            "fusion": {"fuse_bytes": self.fuse_bytes, "reductions": len(self.buckets),
                       "fused_buckets": len(fused), "fused_tensors": sum(b["tensors"] for b in fused),
                       "fused_bytes": sum(b["bytes"] or 0 for b in fused), "buckets": self.buckets},
            "losses": self.losses, "targets": self.targets,
        }

    def summary(self) -> str:
        devices = ", ".join(short_device_name(d) for d in self.devices)
        text = (f"{self.replicas} replica(s) on {devices} ({self.mode}): {self.nodes_replicated} nodes replicated, "
                f"{self.nodes_single} single, {self.nodes_before} -> {self.nodes_after} nodes; "
                f"{self.gradients_reduced} gradient(s) averaged")
        split = ", ".join(item["input"] + (f" ({item['batch']} -> {item['per_replica']} per replica)"
                                             if item["batch"] is not None else "") for item in self.split)
        if self.mode == "allreduce":
            fused = self.fused_buckets
            text += (f" in {len(self.buckets)} all-reduce(s) per replica, {len(fused)} fused bucket(s) of "
                     f"{sum(b['tensors'] for b in fused)} tensor(s), {sum(b['bytes'] or 0 for b in fused)} bytes")
        else:
            text += f" on the parameter server {short_device_name(self.shared_device)}"
        return f"{text}; split: {split}"
