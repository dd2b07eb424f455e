"""Averaging the per-batch inputs of the update ops (the gradients) across replicas.

allreduce: every replica reduces its gradients with CollectiveReduceV2(merge_op Add, final_op
Div) over the replica group, fused into buckets (buckets.py): per bucket and replica

    flat_j = Reshape(g_j, [-1]); all = ConcatV2(flat_1..k, 0); sum = CollectiveReduceV2(all, N, G, I_b)
    parts = SplitV(sum, [n_1..n_k], 0); g'_j = Reshape(parts:j, shape_j)

and its update ops read g'_j. One group key for the replica set; one instance key per bucket;
both Const inputs on each replica's device, as v2 collectives want. Keys start above any the
graph already uses.

ps: the single update op on the parameter server reads `RealDiv(AddN(g_0 .. g_{N-1}), N)`.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import int32, int64
from ..errors import InvalidGraphError
from ..ir import Graph, TensorRef
from ..ops.opaque import dtype_of
from ..shapes import has_rank
from .buckets import Bucket, Reduced, plan_buckets
from .clone import ReplicaCloner
from .structure import TrainingStructure


def averaged_tensors(structure: TrainingStructure) -> list[TensorRef]:
    """The distinct tensors the update ops average, in the order of the updates."""
    seen: dict[TensorRef, None] = {}
    for update in structure.updates:
        for slot in update.averaged:
            seen.setdefault(update.node.inputs[slot], None)
    return list(seen)


def used_collective_keys(graph: Graph) -> tuple[int, int]:
    """The largest group key and instance key of the collectives already in the graph (0 if none)."""
    group = instance = 0
    for node in graph:
        if not node.op.startswith("Collective"):
            continue
        if node.op.endswith("V2"):
            keys = []
            for slot in (2, 3) if node.op != "CollectiveBcastRecvV2" else (1, 2):
                producer = node.inputs[slot].node if slot < len(node.inputs) else None
                value = np.asarray(producer.attr("value")) if producer is not None and producer.op == "Const" else None
                keys.append(int(value) if value is not None and value.size == 1 else 0)
            group, instance = max(group, keys[0]), max(instance, keys[1])
        else:
            group = max(group, int(node.attr("group_key", 0)))
            instance = max(instance, int(node.attr("instance_key", 0)))
    return group, instance


def _static_shape(structure: TrainingStructure, ref: TensorRef) -> tuple[int, ...] | None:
    shape = structure.shapes.shape(ref)
    if not has_rank(shape) or not shape.fully_defined:
        return None
    return tuple(int(dim) for dim in shape.dims if dim is not None)


def allreduce(cloner: ReplicaCloner, structure: TrainingStructure, fuse_bytes: int) -> list[Bucket]:
    tensors = [Reduced(ref, dtype_of(ref).base, _static_shape(structure, ref)) for ref in averaged_tensors(structure)]
    buckets = plan_buckets(tensors, fuse_bytes)
    group_key, instance_base = used_collective_keys(structure.graph)
    emit = cloner.emit
    for replica, device in enumerate(cloner.devices.replicas):
        scope = "replicate/allreduce" if replica == 0 else f"{cloner.prefix}_{replica}/replicate/allreduce"
        size = emit.const(f"{scope}/group_size", cloner.count, int32, device=device)
        group = emit.const(f"{scope}/group_key", group_key + 1, int32, device=device)
        reduced: dict[TensorRef, TensorRef] = {}
        for index, bucket in enumerate(buckets):
            where = f"{scope}/bucket_{index}"
            instance = emit.const(f"{where}/instance_key", instance_base + 1 + index, int32, device=device)
            inputs = [cloner.tensor(member.key, replica) for member in bucket.members]
            if not bucket.fused:
                reduced[bucket.members[0].key] = _reduce(emit, where, inputs[0], bucket, size, group, instance, device)
                continue
            flat_shape = emit.const(f"{where}/flat_shape", [-1], int32, device=device)
            flats = [emit.node("Reshape", f"{where}/flatten", [tensor, flat_shape], device=device,
                               attrs={"T": bucket.dtype, "Tshape": int32}).output(0) for tensor in inputs]
            axis = emit.const(f"{where}/axis", 0, int32, device=device)
            joined = emit.node("ConcatV2", f"{where}/concat", [*flats, axis], device=device,
                               attrs={"N": len(flats), "T": bucket.dtype, "Tidx": int32}).output(0)
            total = _reduce(emit, where, joined, bucket, size, group, instance, device)
            sizes = emit.const(f"{where}/sizes", [m.elements for m in bucket.members], int64, device=device)
            parts = emit.node("SplitV", f"{where}/split", [total, sizes, axis], device=device,
                              attrs={"num_split": len(inputs), "T": bucket.dtype, "Tlen": int64})
            for j, member in enumerate(bucket.members):
                shape = emit.const(f"{where}/shape_{j}", np.asarray(member.shape, np.int64), int64, device=device)
                reduced[member.key] = emit.node("Reshape", f"{where}/unflatten", [parts.output(j), shape],
                                                device=device, attrs={"T": bucket.dtype, "Tshape": int64}).output(0)
        for update in structure.updates:
            for slot in update.averaged:
                cloner.copies[update.node][replica].set_input(slot, reduced[update.node.inputs[slot]])
    return buckets


def _reduce(emit, where: str, tensor: TensorRef, bucket: Bucket, size, group, instance, device: str) -> TensorRef:
    return emit.node("CollectiveReduceV2", f"{where}/all_reduce",
                     [tensor, size, group, instance], device=device,
                     attrs={"T": bucket.dtype, "merge_op": "Add", "final_op": "Div"}).output(0)


def parameter_server(cloner: ReplicaCloner, structure: TrainingStructure) -> int:
    """ps mode: each averaged tensor's mean on the parameter server; returns how many."""
    emit, device = cloner.emit, cloner.devices.shared
    means: dict[TensorRef, TensorRef] = {}
    for ref in averaged_tensors(structure):
        if ref.node not in cloner.replicated:
            raise InvalidGraphError(f"node '{ref.node.name}' feeds an update with per-batch values but is not "
                                    f"computed per replica")
        dtype = dtype_of(ref).base
        base = ref.node.name if ref.index == 0 else f"{ref.node.name}_{ref.index}"
        total = emit.node("AddN", f"{base}/replicate_sum", [cloner.tensor(ref, i) for i in range(cloner.count)],
                          device=device, attrs={"N": cloner.count, "T": dtype})
        divisor = emit.const(f"{base}/replicate_count", cloner.count, dtype, device=device)
        means[ref] = emit.node("RealDiv", f"{base}/replicate_mean", [total.output(0), divisor], device=device,
                               attrs={"T": dtype}).output(0)
    for update in structure.updates:
        for slot in update.averaged:
            cloner.single[update.node].set_input(slot, means[update.node.inputs[slot]])
    return len(means)
