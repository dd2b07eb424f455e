"""Collective test graphs and their numpy references, shared by the collective tests and benchmark.

`add_collective(b, kind, devices, ...)` adds one collective instance to a builder: one member per
device, member i fed by placeholder `{prefix}x{i}` (on device i) and read by `{prefix}out{i}` (an
Identity on device i). Several instances go in one graph with distinct prefixes and instance keys
(`collective_graph` builds a graph of one). `expected(case, inputs)` is what the members must output,
computed with numpy from the same description.

Kinds (TensorFlow's ops, v2 with Const keys unless `v1`):
    reduce           CollectiveReduceV2 (v1: CollectiveReduce), merge Add/Mul/Min/Max, final Id/Div
    reduce_scatter   CollectiveReduceScatterV2 (no v1 form)
    gather           CollectiveGatherV2 (v1: CollectiveGather): dim 0 concatenated in rank order
    bcast            CollectiveBcastSendV2 on the `root` member, CollectiveBcastRecvV2 on the others
                     (v1: CollectiveBcastSend / CollectiveBcastRecv)
    all_to_all       CollectiveAllToAllV2 (no v1 form): block k of dim 0 to rank k

Ranks are the members' devices in canonical order (task, then device type and index), whatever
order `devices` lists them in; the references rank them the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from graphtool.builder import GraphBuilder
from graphtool.ir import Graph
from graphtool.placement.device_names import device_order

KINDS = ("reduce", "reduce_scatter", "gather", "bcast", "all_to_all")
V1_KINDS = ("reduce", "gather", "bcast")
MERGES = ("Add", "Mul", "Min", "Max")
FINALS = ("Id", "Div")


@dataclass(frozen=True)
class Case:
    """One collective instance: what `add_collective` builds and `expected` computes."""

    kind: str
    devices: tuple[str, ...]
    dtype: str = "float32"
    shape: tuple[int, ...] = (4,)
    merge: str = "Add"
    final: str = "Id"
    v1: bool = False
    group_key: int = 1
    instance_key: int = 1
    root: int = 0                       # the member (index into `devices`) that broadcasts
    timeout_seconds: float = 0.0
    prefix: str = ""
    shapes: tuple[tuple[int, ...], ...] | None = field(default=None)   # per-member shapes (mismatch tests)
    dtypes: tuple[str, ...] | None = field(default=None)               # per-member dtypes (mismatch tests)
    group_size: int | None = None      # the group_size the members declare (default: how many there are)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown collective kind {self.kind!r} (kinds: {', '.join(KINDS)})")
        if self.v1 and self.kind not in V1_KINDS:
            raise ValueError(f"{self.kind} has no v1 form")

    @property
    def size(self) -> int:
        return len(self.devices)

    @property
    def declared_size(self) -> int:
        return self.group_size if self.group_size is not None else self.size

    def member_shape(self, i: int) -> tuple[int, ...]:
        return self.shapes[i] if self.shapes is not None else self.shape

    def member_dtype(self, i: int) -> str:
        return self.dtypes[i] if self.dtypes is not None else self.dtype

    @property
    def label(self) -> str:
        what = f"{self.kind}{'_v1' if self.v1 else ''}"
        if self.kind in ("reduce", "reduce_scatter"):
            what += f"_{self.merge}_{self.final}"
        return f"{what}_{self.dtype}_{'x'.join(map(str, self.shape)) or 'scalar'}_n{self.size}"

    def feed_names(self) -> list[str]:
        return [f"{self.prefix}x{i}" for i in range(self.size)]

    def fetch_names(self) -> list[str]:
        return [f"{self.prefix}out{i}" for i in range(self.size)]

    def op_names(self) -> list[str]:
        return [f"{self.prefix}member{i}" for i in range(self.size)]


def ranks(devices) -> list[int]:
    """rank of each member (by its index in `devices`): its device's place in canonical order."""
    order = sorted(range(len(devices)), key=lambda i: device_order(devices[i]))
    rank = [0] * len(devices)
    for r, i in enumerate(order):
        rank[i] = r
    return rank


# --- building --------------------------------------------------------------------------------------
def _member(b: GraphBuilder, case: Case, i: int, x):
    name = f"{case.prefix}member{i}"
    n = case.declared_size
    tuning = {"timeout_seconds": float(case.timeout_seconds)}
    dtype = case.member_dtype(i)
    if case.v1:
        key_attrs = {"group_size": n, "group_key": case.group_key, "instance_key": case.instance_key}
        if case.kind == "reduce":
            return b.op("CollectiveReduce", [x], name=name, merge_op=case.merge, final_op=case.final,
                        subdiv_offsets=[0], **key_attrs, **tuning)
        shape = list(case.member_shape(i))
        if case.kind == "gather":
            gathered = [shape[0] * n, *shape[1:]] if shape else shape
            return b.op("CollectiveGather", [x], name=name, shape=gathered, **key_attrs, **tuning)
        if i == case.root:
            return b.op("CollectiveBcastSend", [x], name=name, shape=shape, **key_attrs, **tuning)
        return b.op("CollectiveBcastRecv", [], name=name, T=dtype, shape=shape, **key_attrs, **tuning)
    # (the v2 ops but the broadcasts also take a list of ordering tokens: none here)
    keys = [b.const(np.int32(n), name=f"{name}/group_size"),
            b.const(np.int32(case.group_key), name=f"{name}/group_key"),
            b.const(np.int32(case.instance_key), name=f"{name}/instance_key")]
    if case.kind == "reduce":
        return b.op("CollectiveReduceV2", [x, *keys, []], name=name, merge_op=case.merge, final_op=case.final, **tuning)
    if case.kind == "reduce_scatter":
        return b.op("CollectiveReduceScatterV2", [x, *keys, []], name=name, merge_op=case.merge, final_op=case.final,
                    **tuning)
    if case.kind == "gather":
        return b.op("CollectiveGatherV2", [x, *keys, []], name=name, **tuning)
    if case.kind == "all_to_all":
        return b.op("CollectiveAllToAllV2", [x, *keys, []], name=name, **tuning)
    if i == case.root:
        return b.op("CollectiveBcastSendV2", [x, *keys], name=name, **tuning)
    received_shape = b.const(np.array(case.member_shape(i), np.int32), name=f"{name}/shape")
    return b.op("CollectiveBcastRecvV2", [*keys, received_shape], name=name, T=dtype, **tuning)


def add_collective(b: GraphBuilder, case: Case, inputs=None) -> list:
    """Add `case`'s members to `b`; returns the output tensors `{prefix}out{i}`. `inputs[i]`, when
    given, replaces placeholder `{prefix}x{i}` as member i's input (e.g. a tensor made on the
    device, or a dead branch)."""
    outs = []
    for i, device in enumerate(case.devices):
        with b.device(device):
            if inputs is not None and inputs[i] is not None:
                x = inputs[i]
            else:
                x = b.placeholder(case.member_dtype(i), list(case.member_shape(i)), name=f"{case.prefix}x{i}")
            outs.append(b.identity(_member(b, case, i, x), name=f"{case.prefix}out{i}"))
    return outs


def collective_graph(case: Case) -> Graph:
    """A graph of one collective instance (see `add_collective`)."""
    b = GraphBuilder()
    add_collective(b, case)
    return b.graph


def cases_graph(cases) -> Graph:
    """A graph of several instances (their prefixes and instance keys must differ)."""
    b = GraphBuilder()
    for case in cases:
        add_collective(b, case)
    return b.graph


# --- inputs and references -------------------------------------------------------------------------
def member_inputs(case: Case, rng: np.random.Generator) -> list[np.ndarray]:
    """Seeded inputs that keep every merge exact or nearly so: small integers (a product of up to 8
    of them fits int32), floats near 1 for Mul, signed floats otherwise."""
    values = []
    for i in range(case.size):
        shape, dtype = case.member_shape(i), np.dtype(case.member_dtype(i))
        if np.issubdtype(dtype, np.integer):
            low, high = (-3, 4) if case.merge == "Mul" else (-50, 51)
            values.append(rng.integers(low, high, size=shape).astype(dtype))
        elif case.merge == "Mul":
            values.append(rng.uniform(0.5, 1.5, size=shape).astype(dtype))
        else:
            values.append(rng.standard_normal(shape).astype(dtype))
    return values


def feeds_for(case: Case, values: list[np.ndarray]) -> dict[str, np.ndarray]:
    return dict(zip(case.feed_names(), values))


_MERGE = {"Add": np.add, "Mul": np.multiply, "Min": np.minimum, "Max": np.maximum}


def reduced(values: list[np.ndarray], merge: str, final: str) -> np.ndarray:
    """TensorFlow's reduction: merge all members (in float64 for floats, then rounded to the dtype
    once, the tolerance covering a ring's order of additions), then Div by the group size
    (integers truncate toward zero, as TensorFlow's integer division in collectives)."""
    dtype = values[0].dtype
    wide = np.float64 if np.issubdtype(dtype, np.floating) else np.int64
    total: np.ndarray = values[0].astype(wide)
    for value in values[1:]:
        total = _MERGE[merge](total, value.astype(wide))
    if final == "Div":
        n = len(values)
        total = total / n if np.issubdtype(dtype, np.floating) else np.trunc(total / n).astype(np.int64)
    return total.astype(dtype)


def expected(case: Case, values: list[np.ndarray]) -> list[np.ndarray]:
    """Each member's output (indexed like `case.devices`)."""
    n, rank = case.size, ranks(case.devices)
    by_rank = [values[rank.index(r)] for r in range(n)]
    if case.kind == "reduce":
        out = reduced(values, case.merge, case.final)
        return [out] * n
    if case.kind == "reduce_scatter":
        blocks = np.split(reduced(values, case.merge, case.final), n, axis=0)
        return [blocks[rank[i]] for i in range(n)]
    if case.kind == "gather":
        out = np.concatenate(by_rank, axis=0)
        return [out] * n
    if case.kind == "bcast":
        return [values[case.root]] * n
    sent = [np.split(value, n, axis=0) for value in by_rank]      # all_to_all: sent[k][r] from rank k to r
    return [np.concatenate([sent[k][rank[i]] for k in range(n)], axis=0) for i in range(n)]


def tolerance(dtype: str, size: int) -> dict:
    """assert_allclose tolerances for a reduction of `size` members in `dtype` (0 for integers)."""
    eps = {"float16": 2.0 ** -10, "float32": 2.0 ** -23, "float64": 2.0 ** -52}.get(dtype)
    if eps is None:
        return {"rtol": 0, "atol": 0}
    return {"rtol": 4 * size * eps, "atol": 4 * size * eps}
