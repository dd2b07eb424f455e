"""Helpers for the partition tests: fixtures, placements by rule, runs and structural views."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from graphtool import graph_io
from graphtool.exec.session import Session
from graphtool.ir import Graph, Node, from_graphdef
from graphtool.placement.colocation import colocation_groups

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tf"
DEVICES = ["cpu:0", "cpu:1", "cpu:2"]
TRANSFER_OPS = ("_Send", "_Recv")


def cpu(index: int) -> str:
    return f"/job:localhost/replica:0/task:0/device:CPU:{index}"


# --- fixtures -------------------------------------------------------------------------------------

def fixture_names() -> list[str]:
    return sorted(path.parent.name for path in FIXTURES.glob("*/case.json"))


def fixture_spec(case: str) -> dict:
    return json.loads((FIXTURES / case / "case.json").read_text())


def load_fixture(case: str) -> Graph:
    return from_graphdef(graph_io.load_graphdef(str(FIXTURES / case / "graph.pb")), case)


def fixture_feeds(case: str, feeds_file: str = "feeds.npz") -> dict[str, np.ndarray]:
    return dict(np.load(FIXTURES / case / feeds_file))


def fixture_feed_files(case: str) -> list[str]:
    return ["feeds.npz"] + [run["feeds"] for run in fixture_spec(case).get("extra_runs", [])]


# --- placements -----------------------------------------------------------------------------------

def place_groups_randomly(graph: Graph, seed: int, devices=DEVICES) -> None:
    """A random placement honouring the placer's constraints: each colocation group (reference
    and resource edges, a loop variable's Merge/Switch/NextIteration) on one random device."""
    rng = np.random.default_rng(seed)
    for group in colocation_groups(graph).groups:
        device = devices[rng.integers(len(devices))]
        for node in group.members:
            node.device = device


def place_nodes_randomly(graph: Graph, seed: int, devices=DEVICES) -> None:
    """Every node on a random device: loop plumbing scattered too (no TensorArray/Stack/variable
    in the graph, since those must share a device with their users)."""
    rng = np.random.default_rng(seed)
    for node in graph.nodes:
        node.device = devices[rng.integers(len(devices))]


def place_round_robin(graph: Graph, devices=DEVICES) -> None:
    """Node k in topological order on device k mod len(devices)."""
    for index, node in enumerate(graph.topological_order()):
        node.device = devices[index % len(devices)]


# --- running --------------------------------------------------------------------------------------

def run(graph: Graph, fetches: list[str], feeds: dict, threads: int = 1) -> list:
    return Session(graph, threads=threads).run(fetches, feeds, timeout=60).values


def assert_identical(expected: list, actual: list, fetches: list[str]) -> None:
    """Exactly the same values (NaN equal to NaN), dtypes and shapes."""
    for name, want, got in zip(fetches, expected, actual):
        assert got.dtype == want.dtype and got.shape == want.shape, name
        if want.dtype.kind in "OSU":
            assert [bytes(v) for v in want.ravel()] == [bytes(v) for v in got.ravel()], name
        else:
            assert np.array_equal(want, got, equal_nan=want.dtype.kind in "fc"), name


# --- structure ------------------------------------------------------------------------------------

def ops_of(graph: Graph, op: str) -> list[Node]:
    return [n for n in graph.nodes if n.op == op]


def send_of(graph: Graph, recv: Node) -> Node:
    """The `_Send` a `_Recv` receives from (same tensor_name and devices)."""
    key = [recv.attr(a) for a in ("tensor_name", "send_device", "recv_device")]
    sends = [s for s in ops_of(graph, "_Send") if [s.attr(a) for a in ("tensor_name", "send_device",
                                                                      "recv_device")] == key]
    assert len(sends) == 1, f"{recv.name}: {len(sends)} matching sends"
    return sends[0]


def edges(graph: Graph) -> tuple[set, set]:
    """Data edges {(consumer, slot, 'producer:k')} and control edges {(consumer, producer)}."""
    data = {(n.name, slot, f"{ref.node.name}:{ref.index}") for n in graph.nodes for slot, ref in enumerate(n.inputs)}
    control = {(n.name, c.name) for n in graph.nodes for c in n.control_inputs}
    return data, control


def recovered_edges(graph: Graph, names: set[str]) -> tuple[set, set]:
    """The edges among the nodes called `names` (those before partitioning), looking through
    what partitioning added: transfers, compression Casts, control-edge Consts and Identities,
    copies of Enter/NextIteration nodes ('X/_on_cpu_1' stands for X), and the liveness gates
    of Enters and skeleton anchors of transfers (which are new control edges, not cut ones)."""
    def original(node: Node) -> str:
        return node.name if node.name in names else node.name.rsplit("/_on_", 1)[0]

    def data_source(ref) -> str:
        node = ref.node
        if node.op == "_Recv":
            return data_source(send_of(graph, node).inputs[0])
        if node.op == "Cast" and node.name not in names:
            return data_source(node.inputs[0])
        return f"{original(node)}:{ref.index}"

    def control_source(node: Node) -> str | None:
        if node.name in names:
            return node.name
        if "/_ctrl_on_" in node.name:
            dummy = send_of(graph, node.inputs[0].node).inputs[0].node
            return control_source(dummy.control_inputs[0])
        return None if "/_cloop" in node.name else original(node)

    kept = [n for n in graph.nodes if n.name in names or original(n) in names]
    data = {(original(n), slot, data_source(ref)) for n in kept for slot, ref in enumerate(n.inputs)}
    control = {(original(n), control_source(c)) for n in kept for c in n.control_inputs}
    return data, {edge for edge in control if edge[1] is not None}
