"""`dftool replicate`: a single-device training graph made synchronous data-parallel.

    graph, report = replicate(graph, ReplicateOptions(replicas=2, split=["x", "labels"]))

One module per concern: structure.py finds the split inputs, the per-batch computation, the
update ops and the losses; clone.py copies the per-replica nodes onto each device and slices the
split inputs; averaging.py averages the gradients (collective all-reduce in fusion buckets from
buckets.py, or a mean on a parameter server); fronts.py gives the original names of the loss and
of the targets their all-replica meaning; report.py says what was done.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Graph
from ..shapes import has_rank
from . import averaging
from .clone import ReplicaCloner, replicated_nodes
from .devices import MODES, ReplicaDevices, resolve_devices
from .fronts import add_fronts, choose_fronted
from .report import ReplicateReport
from .structure import TrainingStructure, find_structure

DEFAULT_FUSE_BYTES = 64 * 1024 * 1024     # Horovod's default fusion threshold


@dataclass
class ReplicateOptions:
    replicas: int
    split: list[str]
    devices: str | list[str] | None = None
    mode: str = "allreduce"
    fuse_bytes: int = DEFAULT_FUSE_BYTES
    losses: list[str] = field(default_factory=list)


def replicate(graph: Graph, options: ReplicateOptions) -> tuple[Graph, ReplicateReport]:
    """A new graph training `graph` on `options.replicas` devices; `graph` is left unchanged."""
    devices = resolve_devices(options.devices, options.replicas, options.mode)
    structure = find_structure(graph, options.split, options.replicas, options.losses)
    replicated = replicated_nodes(structure, options.mode)
    losses, sinks = choose_fronted(structure, replicated)
    cloner = ReplicaCloner(structure, options.mode, devices, set(losses) | set(sinks))
    cloner.create()
    add_fronts(cloner, losses, sinks)
    out = cloner.wire()
    buckets = []
    if options.mode == "allreduce":
        buckets = averaging.allreduce(cloner, structure, options.fuse_bytes)
    else:
        averaging.parameter_server(cloner, structure)
    out.verify()
    return out, _report(structure, cloner, devices, options, buckets, losses, sinks, len(out))


def _report(structure: TrainingStructure, cloner: ReplicaCloner, devices: ReplicaDevices, options: ReplicateOptions,
            buckets, losses, sinks, nodes_after: int) -> ReplicateReport:
    split = []
    for node in structure.splits:
        shape = structure.shapes.shape(node.output(0))
        batch = shape.dims[0] if has_rank(shape) and shape.rank else None
        split.append({"input": node.name, "batch": batch,
                      "per_replica": batch // options.replicas if batch is not None else None})
    updates = [{"node": u.node.name, "op": u.node.op, "averaged": [u.node.inputs[s].full_name for s in u.averaged]}
               for u in structure.updates]
    return ReplicateReport(
        mode=options.mode, replicas=options.replicas, devices=list(devices.replicas), shared_device=devices.shared,
        split=split, nodes_before=len(structure.graph), nodes_after=nodes_after,
        nodes_replicated=len(cloner.replicated), nodes_single=len(cloner.single),
        variables=[v.name for v in structure.variables if v in cloner.replicated or options.mode == "ps"],
        updates=updates, gradients_reduced=len(averaging.averaged_tensors(structure)),
        buckets=[{"dtype": b.dtype.name, "tensors": len(b.members), "bytes": b.nbytes} for b in buckets],
        losses=[node.name for node in losses], targets=[node.name for node in sinks],
        prefix=cloner.prefix, fuse_bytes=options.fuse_bytes)


__all__ = ["DEFAULT_FUSE_BYTES", "MODES", "ReplicateOptions", "ReplicateReport", "replicate"]
