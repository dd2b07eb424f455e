"""The placer's cost model: device descriptions, measured costs, compute and transfer estimates.

Analytic estimate of one node on a device type (seconds):

    op_overhead + max(flops / flops_per_second, bytes / bytes_per_second)

FLOPs: 2·M·N·K for MatMul and BatchMatMul, 2·output·kh·kw·in_channels for convolutions (and
their backprops), one per output element otherwise. Bytes: every input and output read or written
once. Ops that only forward, feed or describe values (Const, Placeholder, Identity, control flow,
Shape, ...) cost the overhead only. Sizes come from inferred shapes; an unknown dimension counts
as UNKNOWN_DIM elements and a tensor of unknown rank as UNKNOWN_RANK_ELEMENTS elements.

Moving a tensor between two devices costs `latency + bytes / bandwidth` (zero on one device).
Between two devices of one task (one process: same job, replica and task) the link depends on
their types (host memory, PCIe); between devices of different tasks it is the network, whatever
the types: BUILTIN_NETWORK, or what the file's `network` says, or the link measured when a
cluster starts (`CostModel.with_network`).

Measured costs (`dftool place --cost-model FILE`, written by `dftool profile --cost-model-out`):

    {
      "schema": "dftool.cost_model/1",
      "nodes": {"dense/matmul": {"CPU": 0.0012, "GPU": 0.0001}},
      "ops": {"MatMul": {"CPU": 0.002}},
      "device_types": {"GPU": {"flops_per_second": 1e13, "bytes_per_second": 5e11,
                               "op_overhead_seconds": 1e-5}},
      "transfer": {"latency_seconds": 2e-5, "bytes_per_second": 1e10},
      "network": {"latency_seconds": 2e-4, "bytes_per_second": 1e9}
    }

Everything but "schema" is optional. `nodes` and `ops` give seconds per device type (CPU, GPU);
for a (node, device type) the node entry wins over the op entry, which wins over the analytic
estimate. `device_types` overrides fields of the built-in device descriptions, `transfer`
replaces the latency/bandwidth of every link inside a task and `network` that of the link between
tasks. A malformed file is an InvalidGraphError (exit 3)
naming it.

    >>> CostModel().device("GPU").flops_per_second > CostModel().device("CPU").flops_per_second
    True
"""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

from .. import dtypes
from ..errors import InvalidGraphError
from ..ir import Node, TensorRef
from .device_names import DeviceName, parse_device_name, same_task

SCHEMA = "dftool.cost_model/1"
DEVICE_TYPES = ("CPU", "GPU")
UNKNOWN_DIM = 32
UNKNOWN_RANK_ELEMENTS = 1024


@dataclass(frozen=True)
class DeviceDescription:
    """How fast one device type computes and reads/writes memory."""

    flops_per_second: float
    bytes_per_second: float
    op_overhead_seconds: float


@dataclass(frozen=True)
class Link:
    """A transfer between two devices."""

    latency_seconds: float
    bytes_per_second: float


# A few-core CPU and a mid-range GPU: orders of magnitude matter here, not exact figures. The GPU
# pays more per op (kernel launch), so tiny ops are no faster there.
BUILTIN_DEVICES = {
    "CPU": DeviceDescription(flops_per_second=5e10, bytes_per_second=2e10, op_overhead_seconds=2e-6),
    "GPU": DeviceDescription(flops_per_second=1e13, bytes_per_second=5e11, op_overhead_seconds=1e-5),
}
# Between two CPUs a transfer is a handoff in host memory; anything touching a GPU crosses PCIe.
BUILTIN_LINKS = {
    frozenset({"CPU"}): Link(latency_seconds=1e-5, bytes_per_second=2e10),
    frozenset({"CPU", "GPU"}): Link(latency_seconds=2e-5, bytes_per_second=1.2e10),
    frozenset({"GPU"}): Link(latency_seconds=2e-5, bytes_per_second=2.5e10),
}
# Between tasks: an RPC (or object-store) round trip and about 10 Gb/s Ethernet. A cluster measures
# its own at start-up and passes it in with CostModel.with_network.
BUILTIN_NETWORK = Link(latency_seconds=2e-4, bytes_per_second=1e9)

# Ops that do no arithmetic: sources, forwarding, control flow and shape metadata.
_OVERHEAD_ONLY_OPS = frozenset({
    "Const", "HostConst", "Placeholder", "PlaceholderV2", "PlaceholderWithDefault", "_Arg", "_Retval",
    "Identity", "IdentityN", "StopGradient", "PreventGradient", "NoOp", "Enter", "RefEnter", "Exit",
    "RefExit", "Merge", "RefMerge", "Switch", "RefSwitch", "NextIteration", "RefNextIteration",
    "LoopCond", "ControlTrigger", "Shape", "ShapeN", "Rank", "Size", "VariableV2", "VarHandleOp",
    "_Send", "_Recv", "_HostSend", "_HostRecv",
})
OVERHEAD_ONLY_OPS = _OVERHEAD_ONLY_OPS   # graphtool/costs.py builds on the same list
_MATMUL_OPS = frozenset({"MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "_FusedMatMul"})
_CONV_OPS = frozenset({"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "_FusedConv2D",
                       "DepthwiseConv2dNative"})


class CostModel:
    """Device descriptions, links and measured per-node / per-op costs (see the module doc)."""

    def __init__(self, devices: dict[str, DeviceDescription] | None = None, transfer: Link | None = None,
                 node_costs: dict | None = None, op_costs: dict | None = None, source: str = "<built-in>",
                 network: Link | None = None):
        self.devices = {**BUILTIN_DEVICES, **(devices or {})}
        self.transfer_override = transfer
        self.network = network or BUILTIN_NETWORK
        self.node_costs: dict[str, dict[str, float]] = node_costs or {}
        self.op_costs: dict[str, dict[str, float]] = op_costs or {}
        self.source = source

    def with_network(self, network: Link) -> "CostModel":
        """A copy of this model whose link between tasks is `network` (e.g. measured when a cluster
        starts); this one is left as it is."""
        return CostModel(self.devices, self.transfer_override, self.node_costs, self.op_costs, self.source,
                         network=network)

    def device(self, device_type: str) -> DeviceDescription:
        return self.devices[device_type]

    def link(self, type_a: str, type_b: str) -> Link:
        """The link between two devices of these types in one task."""
        return self.transfer_override or BUILTIN_LINKS[frozenset({type_a, type_b})]

    def link_between(self, src: str | DeviceName, dst: str | DeviceName) -> Link:
        """The link between two devices by name: the network between tasks, else by their types."""
        first = (src if isinstance(src, DeviceName) else parse_device_name(src)).completed()
        second = (dst if isinstance(dst, DeviceName) else parse_device_name(dst)).completed()
        if (first.job, first.replica, first.task) != (second.job, second.replica, second.task):
            return self.network
        assert first.type is not None and second.type is not None   # completed() fills every field
        return self.link(first.type, second.type)

    def measured(self, node: Node, device_type: str) -> float | None:
        """The measured cost of `node` on `device_type`, if the file gives one."""
        for table, key in ((self.node_costs, node.name), (self.op_costs, node.op)):
            seconds = table.get(key, {}).get(device_type)
            if seconds is not None:
                return seconds
        return None

    # --- reading a file ---------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str) -> "CostModel":
        """Read a cost-model JSON file; InvalidGraphError (exit 3) names the file on any problem."""
        from ..graph_io import read_bounded

        try:
            with open(path, "rb") as handle:  # bounded: `--cost-model /dev/zero` must not fill memory
                data = json.loads(read_bounded(handle, f"cost model '{path}'").decode("utf-8"))
        except FileNotFoundError:
            raise InvalidGraphError(f"cost model '{path}': no such file") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InvalidGraphError(f"cost model '{path}': not a readable JSON file ({exc})") from None
        return cls.from_json(data, path)

    @classmethod
    def from_json(cls, data, source: str = "<cost model>") -> "CostModel":
        def fail(problem: str):
            raise InvalidGraphError(f"cost model '{source}': {problem}",
                                    hint=f'expected {{"schema": "{SCHEMA}", "nodes": {{NAME: {{"CPU": seconds}}}}}}')

        if not isinstance(data, dict):
            fail("the top level must be a JSON object")
        if data.get("schema") != SCHEMA:
            fail(f"schema is {data.get('schema')!r}, expected {SCHEMA!r}")
        unknown = sorted(set(data) - {"schema", "nodes", "ops", "device_types", "transfer", "network"})
        if unknown:
            fail(f"unknown key {unknown[0]!r}")
        return cls(devices=_device_overrides(data.get("device_types", {}), fail),
                   transfer=_link_override(data.get("transfer"), "transfer", fail),
                   node_costs=_cost_table(data.get("nodes", {}), "nodes", fail),
                   op_costs=_cost_table(data.get("ops", {}), "ops", fail), source=source,
                   network=_link_override(data.get("network"), "network", fail))


def _seconds(value, where: str, fail) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        fail(f"{where} must be a non-negative number of seconds, got {value!r}")
    return float(value)


def _device_type(key, where: str, fail) -> str:
    if not isinstance(key, str) or key.upper() not in DEVICE_TYPES:
        fail(f"{where}: unknown device type {key!r} (expected one of {', '.join(DEVICE_TYPES)})")
    return key.upper()


def _cost_table(table, name: str, fail) -> dict[str, dict[str, float]]:
    if not isinstance(table, dict):
        fail(f"'{name}' must be an object of {{name: {{device type: seconds}}}}")
    parsed = {}
    for key, costs in table.items():
        if not isinstance(costs, dict):
            fail(f"{name}['{key}'] must be an object of {{device type: seconds}}")
        parsed[key] = {_device_type(t, f"{name}['{key}']", fail): _seconds(s, f"{name}['{key}']['{t}']", fail)
                       for t, s in costs.items()}
    return parsed


def _device_overrides(table, fail) -> dict[str, DeviceDescription]:
    if not isinstance(table, dict):
        fail("'device_types' must be an object of {device type: description}")
    allowed = {f.name for f in fields(DeviceDescription)}
    overrides = {}
    for key, values in table.items():
        device_type = _device_type(key, "device_types", fail)
        if not isinstance(values, dict) or set(values) - allowed:
            fail(f"device_types['{key}'] may only set {', '.join(sorted(allowed))}")
        checked = {k: _seconds(v, f"device_types['{key}']['{k}']", fail) for k, v in values.items()}
        if any(checked.get(k) == 0 for k in ("flops_per_second", "bytes_per_second")):
            fail(f"device_types['{key}']: speeds must be positive")
        overrides[device_type] = replace(BUILTIN_DEVICES[device_type], **checked)
    return overrides


def _link_override(values, key: str, fail) -> Link | None:
    if values is None:
        return None
    allowed = {f.name for f in fields(Link)}
    if not isinstance(values, dict) or set(values) != allowed:
        fail(f"'{key}' must set exactly {', '.join(sorted(allowed))}")
    link = Link(**{k: _seconds(v, f"{key}['{k}']", fail) for k, v in values.items()})
    if link.bytes_per_second == 0:
        fail(f"{key} bytes_per_second must be positive")
    return link


# --- estimates for one graph ----------------------------------------------------------------------

class CostEstimator:
    """Compute and transfer times for the nodes of one graph under a CostModel, from its shapes."""

    def __init__(self, model: CostModel, shapes):
        self.model = model
        self.shapes = shapes
        self._compute: dict[tuple[Node, str], float] = {}
        self._bytes: dict[TensorRef, int] = {}
        self._links: dict[tuple, Link] = {}

    def compute(self, node: Node, device_type: str) -> float:
        """Seconds `node` takes on a device of `device_type` (measured, else estimated)."""
        key = (node, device_type)
        if key not in self._compute:
            measured = self.model.measured(node, device_type)
            self._compute[key] = measured if measured is not None else self._estimate(node, device_type)
        return self._compute[key]

    def _estimate(self, node: Node, device_type: str) -> float:
        device = self.model.device(device_type)
        if node.op in _OVERHEAD_ONLY_OPS:
            return device.op_overhead_seconds
        moved = sum(self.tensor_bytes(ref) for ref in node.inputs) + sum(self.tensor_bytes(r) for r in node.outputs)
        work = max(self.flops(node) / device.flops_per_second, moved / device.bytes_per_second)
        return device.op_overhead_seconds + work

    def flops(self, node: Node) -> float:
        """Floating-point operations of one execution of `node` (see the module doc)."""
        if node.op in _MATMUL_OPS and len(node.inputs) >= 2:
            return self._matmul_flops(node)
        if node.op in _CONV_OPS and len(node.inputs) >= 2:
            return self._conv_flops(node)
        return float(sum(self.elements(ref) for ref in node.outputs))

    def _matmul_flops(self, node: Node) -> float:
        # Output [..., M, N] with contraction K: the last dim of `a` (its second-to-last if transposed).
        a = self._dims(node.inputs[0])
        transposed = bool(node.attr("transpose_a", False) or node.attr("adj_x", False))
        k = (a[-2] if transposed else a[-1]) if len(a) >= 2 else UNKNOWN_DIM
        return 2.0 * k * sum(self.elements(ref) for ref in node.outputs[:1])

    def _conv_flops(self, node: Node) -> float:
        # Every element of the larger activation does kh*kw*in_channels multiply-adds.
        filter_dims = self._dims(node.inputs[1]) if node.op != "Conv2DBackpropFilter" else self._dims(node.outputs[0])
        window = math.prod(filter_dims[:3]) if len(filter_dims) == 4 else UNKNOWN_DIM
        activations = max(self.elements(node.outputs[0]), self.elements(node.inputs[-1]))
        return 2.0 * window * activations

    def _dims(self, ref: TensorRef) -> list[int]:
        dims = self.shapes.shape(ref).dims
        return [UNKNOWN_DIM if d is None else d for d in dims] if dims is not None else []

    def elements(self, ref: TensorRef) -> int:
        """Element count of a tensor, with unknown sizes estimated (see the module doc)."""
        dims = self.shapes.shape(ref).dims
        if dims is None:
            return UNKNOWN_RANK_ELEMENTS
        return math.prod(UNKNOWN_DIM if d is None else d for d in dims)

    def tensor_bytes(self, ref: TensorRef) -> int:
        if ref not in self._bytes:
            dtype = self.shapes.dtype(ref)
            self._bytes[ref] = self.elements(ref) * (4 if dtype is dtypes.INVALID else dtype.itemsize)
        return self._bytes[ref]

    def transfer(self, nbytes: float, src: str | DeviceName, dst: str | DeviceName) -> float:
        """Seconds to move `nbytes` between two different devices (names, full or partial: a
        missing field counts as canonical_device_name fills it; a bare type such as 'GPU' is a
        device of this task). Devices of different tasks are joined by the network."""
        key = (src, dst)
        link = self._links.get(key)
        if link is None:
            link = self._links[key] = self.model.link_between(src, dst)
        return link.latency_seconds + nbytes / link.bytes_per_second

    def min_latency(self, devices: Sequence[str] = ()) -> float:
        """The cheapest possible transfer: ops cheaper than this are 'cheap' to the placer. Inside
        a task, the cheapest link of any two device types; between two of `devices` in different
        tasks, the network. So a list of one device per task makes the network the yardstick."""
        types = list(self.model.devices)
        local = min(self.model.link(a, b).latency_seconds for a in types for b in types)
        pairs = [(a, b) for a in devices for b in devices if a != b]
        if not pairs:
            return local
        return min(local if same_task(a, b) else self.model.network.latency_seconds for a, b in pairs)
