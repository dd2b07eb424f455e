"""partition(): device names, Send/Recv pairs and their attrs, Recv dedup, control-edge transfer,
compression, split_by_device, and run(partition(place(g))) == run(g) on every fixture and sample."""
import numpy as np
import pytest

from graphtool import dtypes, graph_io
from graphtool.errors import InvalidGraphError, UsageError
from graphtool.ir import Graph, from_graphdef
from graphtool.ir.queries import graph_outputs
from graphtool.partition import partition, split_by_device
from graphtool.placement import place
from graphtool.shape_inference import infer_shapes
from graphtool.shapes import Shape

from .helpers import REPO_ROOT, const, op, placeholder
from .partition_support import (DEVICES, assert_identical, cpu, edges, fixture_feeds, fixture_names,
                                fixture_spec, load_fixture, ops_of, place_groups_randomly, recovered_edges, run,
                                send_of)


def fan_out_graph() -> Graph:
    """x (cpu:0) -> a = x*2 (cpu:0) -> b = a+1, c = a*a (cpu:1), d = relu(a) (cpu:2); e = b+c (cpu:1)."""
    g = Graph()
    x = placeholder(g, "x", [2, 3])
    two = const(g, "two", 2.0)
    a = op(g, "Mul", "a", x, two)
    one = const(g, "one", 1.0)
    b, c = op(g, "Add", "b", a, one), op(g, "Mul", "c", a, a)
    op(g, "Relu", "d", a)
    op(g, "AddV2", "e", b, c)
    for name in ("x", "two", "a"):
        g.node(name).device = "cpu:0"
    for name in ("one", "b", "c", "e"):
        g.node(name).device = "cpu:1"
    g.node("d").device = "cpu:2"
    return g


FAN_OUT_FEEDS = {"x": np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5}


# --- devices -------------------------------------------------------------------------------------

def test_every_node_needs_a_device():
    g = fan_out_graph()
    g.node("c").device = ""
    with pytest.raises(InvalidGraphError, match=r"node 'c' \(Mul\) has no device") as caught:
        partition(g)
    assert caught.value.exit_code == 3 and "run dftool place first" in caught.value.one_line()


@pytest.mark.parametrize("device", ["gpu", "/device:CPU:*", "cpu:x"])
def test_a_device_that_names_no_single_device_is_rejected(device):
    g = fan_out_graph()
    g.node("b").device = device
    with pytest.raises(InvalidGraphError, match="node 'b'") as caught:
        partition(g)
    assert "run dftool place first" in caught.value.one_line()


def test_short_and_partial_names_are_made_canonical():
    g = fan_out_graph()
    g.node("one").device = "/device:CPU:1"
    g.node("b").device = "/job:localhost/replica:0/task:0/device:CPU:1"
    report = partition(g)
    assert {n.device for n in g.nodes} == {cpu(0), cpu(1), cpu(2)}
    assert [d.label for d in report.devices] == ["cpu_0", "cpu_1", "cpu_2"]
    # one, b, c, e all live on CPU:1 whatever the spelling: only a crosses devices.
    assert {send.inputs[0].node.name for send in ops_of(g, "_Send")} == {"a"}


def test_a_graph_on_one_device_is_left_alone():
    g = fan_out_graph()
    for node in g.nodes:
        node.device = "cpu:0"
    before = edges(g)
    report = partition(g)
    assert report.sends == 0 and report.skeletons == {} and edges(g) == before


# --- data edges -----------------------------------------------------------------------------------

def test_one_recv_per_tensor_and_destination_device():
    g = fan_out_graph()
    report = partition(g)
    recvs = ops_of(g, "_Recv")
    assert report.sends == report.recvs == len(recvs) == len(ops_of(g, "_Send")) == 2
    on_cpu1 = g.node("a/_recv_on_cpu_1")
    assert g.node("b").inputs[0].node is on_cpu1 and g.node("c").inputs == (on_cpu1.output(0),) * 2
    assert g.node("d").inputs[0].node is g.node("a/_recv_on_cpu_2")
    assert [part.recvs for part in report.devices] == [0, 1, 1]
    assert [part.sends for part in report.devices] == [2, 0, 0]


def test_send_and_recv_carry_tensorflows_attrs():
    g = fan_out_graph()
    partition(g)
    recv = g.node("a/_recv_on_cpu_1")
    send = send_of(g, recv)
    assert send.name == "a/_send_to_cpu_1" and send.device == cpu(0) and recv.device == cpu(1)
    for node in (send, recv):
        assert node.attr("tensor_name") == "edge_0_a"
        assert node.attr("send_device") == cpu(0) and node.attr("recv_device") == cpu(1)
        assert node.attr("send_device_incarnation") == 1
        assert node.attr("client_terminated") is False
    assert send.attr("T") is dtypes.float32 and recv.attr("tensor_type") is dtypes.float32
    # The sent tensor's shape rides along, so shape inference still knows it after the cut.
    assert recv.attr("_output_shapes") == [Shape([2, 3])]
    assert infer_shapes(g).shape(g.node("e").output(0)) == Shape([2, 3])


def test_a_non_zero_port_is_named_and_sent_as_such():
    g = Graph()
    x = placeholder(g, "x", [4])
    split = g.add_node("Split", "split", inputs=[const(g, "axis", 0, dtypes.int32).output(0), x.output(0)],
                       attrs={"num_split": 2, "T": dtypes.float32})
    op(g, "Neg", "neg", split.output(1))
    for node in g.nodes:
        node.device = "cpu:1" if node.name == "neg" else "cpu:0"
    partition(g)
    recv = g.node("split/_recv_1_on_cpu_1")
    assert recv.attr("tensor_name") == "edge_0_split:1"
    assert send_of(g, recv).inputs[0] == g.node("split").output(1)
    values = run(g, ["neg"], {"x": np.arange(4, dtype=np.float32)})
    assert values[0].tolist() == [-2.0, -3.0]


def test_removing_the_transfers_gives_back_the_original_edges():
    g = load_fixture("grad_lstm")
    place_groups_randomly(g, seed=3)
    names, before = {n.name for n in g.nodes}, edges(g)
    report = partition(g, compress="bf16")
    assert report.sends > 10
    assert recovered_edges(g, names) == before


# --- control edges --------------------------------------------------------------------------------

def control_graph() -> Graph:
    """p (cpu:0) must run before q and r (cpu:1) and s (cpu:2): control edges only."""
    g = Graph()
    x = placeholder(g, "x", [])
    p = op(g, "Neg", "p", x)
    for name in ("q", "r", "s"):
        op(g, "Identity", name, const(g, f"{name}/c", 3.0)).add_control_input(p)
    g.node("x").device = g.node("p").device = "cpu:0"
    for name in ("q", "r", "q/c", "r/c"):
        g.node(name).device = "cpu:1"
    g.node("s").device = g.node("s/c").device = "cpu:2"
    return g


def test_control_edges_travel_as_a_tiny_tensor_once_per_device():
    g = control_graph()
    report = partition(g)
    assert report.control_edges == 3
    assert report.sends == 2 and all(t.is_control for t in report.transfers)
    gate = g.node("p/_ctrl_on_cpu_1")
    assert g.node("q").control_inputs == (gate,) and g.node("r").control_inputs == (gate,)
    assert gate.op == "Identity" and gate.device == cpu(1)
    dummy = send_of(g, gate.inputs[0].node).inputs[0].node
    assert dummy.op == "Const" and dummy.device == cpu(0) and dummy.control_inputs == (g.node("p"),)
    assert dummy.attr("value").shape == (0,)
    assert report.transfers[0].tensor_name == "edge_0_^p"
    assert run(g, ["q", "s"], {"x": np.float32(1)}) == [3.0, 3.0]


def test_a_dead_control_source_makes_its_remote_consumer_dead():
    """On one device a node with a dead control input is dead; across devices too (the Identity
    after the Recv carries the sender's deadness, the Recv's own control edges would not)."""
    g = Graph()
    pred, x = placeholder(g, "pred", [], dtypes.bool_), placeholder(g, "x", [])
    switch = op(g, "Switch", "switch", x, pred)
    taken = op(g, "Identity", "taken", switch.output(1))
    remote = op(g, "Identity", "remote", const(g, "c", 5.0))
    remote.add_control_input(taken)
    op(g, "Merge", "merge", switch.output(0), remote, N=2)
    for node in g.nodes:
        node.device = "cpu:1" if node.name in ("remote", "c", "merge") else "cpu:0"
    feeds = {"pred": np.bool_(False), "x": np.float32(7)}
    expected = run(g.copy(), ["merge"], feeds)
    partition(g)
    assert run(g, ["merge"], feeds) == expected == [7.0]
    assert run(g, ["merge"], {**feeds, "pred": np.bool_(True)}) == [5.0]


# --- compression ----------------------------------------------------------------------------------

def mixed_dtype_graph() -> Graph:
    """x (float32) and n (int32) on cpu:0, both used on cpu:1."""
    g = Graph()
    x, n = placeholder(g, "x", [64]), placeholder(g, "n", [64], dtypes.int32)
    op(g, "Identity", "y", x)
    op(g, "Identity", "m", n, dtype=dtypes.int32)
    g.node("x").device = g.node("n").device = "cpu:0"
    g.node("y").device = g.node("m").device = "cpu:1"
    return g


@pytest.mark.parametrize("mode, narrow", [("bf16", dtypes.bfloat16), ("fp16", dtypes.float16)])
def test_compression_casts_float32_only(mode, narrow):
    g = mixed_dtype_graph()
    report = partition(g, compress=mode)
    narrowed = g.node(f"x/_to_{mode}")
    assert narrowed.attr("DstT") is narrow and narrowed.device == cpu(0) and narrowed.attr("Truncate") is False
    widened = g.node("y").inputs[0].node
    assert widened.op == "Cast" and widened.attr("DstT") is dtypes.float32 and widened.device == cpu(1)
    assert send_of(g, widened.inputs[0].node).inputs[0].node is narrowed
    assert g.node("m").inputs[0].node.op == "_Recv"          # int32 travels as it is
    assert report.bytes() == {"sent": 64 * 2 + 64 * 4, "uncompressed": 64 * 4 * 2, "saved": 64 * 2,
                              "transfers_of_unknown_size": 0}


@pytest.mark.parametrize("mode, bound", [("bf16", 2.0 ** -8), ("fp16", 2.0 ** -11)])
def test_compressed_round_trip_stays_within_the_rounding_bound(mode, bound):
    g = mixed_dtype_graph()
    partition(g, compress=mode)
    rng = np.random.default_rng(0)
    # Normal-range magnitudes of float16 (2^-14 .. 2^15), both signs; bfloat16 covers them too.
    x = (rng.choice([-1, 1], 64) * 2.0 ** rng.uniform(-14, 15, 64)).astype(np.float32)
    n = np.arange(64, dtype=np.int32) * 1000003
    y, m = run(g, ["y", "m"], {"x": x, "n": n})
    assert y.dtype == np.float32 and np.array_equal(m, n)
    relative = np.abs(y - x) / np.abs(x)
    assert relative.max() <= bound
    assert relative.max() > bound / 64            # it is lossy: the bound is not vacuous


def test_an_unknown_compression_mode_is_a_usage_error():
    g = fan_out_graph()
    with pytest.raises(UsageError, match="--compress mode 'int8'"):
        partition(g, compress="int8")
    assert not ops_of(g, "_Send")


# --- references, idempotence, splitting -------------------------------------------------------------

def test_a_reference_edge_cannot_cross_devices():
    g = Graph()
    var = g.add_node("VariableV2", "v", attrs={"dtype": dtypes.float32, "shape": Shape([])}, device="cpu:0")
    g.add_node("Assign", "assign", inputs=[var.output(0), const(g, "c", 1.0).output(0)],
               attrs={"T": dtypes.float32}, device="cpu:1")
    g.node("c").device = "cpu:1"
    with pytest.raises(InvalidGraphError, match="'assign' .* needs a reference to 'v'"):
        partition(g)


def test_partitioning_twice_changes_nothing():
    g = load_fixture("nested_while")
    place_groups_randomly(g, seed=1)
    partition(g)
    before = edges(g)
    report = partition(g)
    assert report.sends == 0 and edges(g) == before


def test_split_by_device_gives_one_valid_graph_per_device():
    g = load_fixture("dynamic_lstm")
    place_groups_randomly(g, seed=0)
    partition(g)
    parts = split_by_device(g)
    assert sorted(parts) == sorted({n.device for n in g.nodes})
    assert sum(len(part) for part in parts.values()) == len(g)
    for device, part in parts.items():
        part.verify()
        assert {n.device for n in part.nodes} == {device}


def test_split_by_device_refuses_an_unpartitioned_graph():
    with pytest.raises(InvalidGraphError, match="'a' -> 'b' crosses") as caught:
        split_by_device(fan_out_graph())
    assert "run dftool partition first" in caught.value.one_line()


def test_run_of_the_partitioned_fan_out_graph_is_identical():
    g = fan_out_graph()
    expected = run(g.copy(), ["d", "e"], FAN_OUT_FEEDS)
    partition(g)
    assert_identical(expected, run(g, ["d", "e"], FAN_OUT_FEEDS, threads=2), ["d", "e"])


# --- acceptance: every fixture, placed by the placer and at random -------------------------------------

@pytest.mark.parametrize("case", fixture_names())
def test_fixture_runs_identically_after_place_and_partition(case):
    spec = fixture_spec(case)
    feeds = fixture_feeds(case)
    expected = run(load_fixture(case), spec["fetches"], feeds)
    placed = load_fixture(case)
    place(placed, DEVICES)
    partition(placed)
    assert_identical(expected, run(placed, spec["fetches"], feeds, threads=2), spec["fetches"])
    shuffled = load_fixture(case)
    place_groups_randomly(shuffled, seed=sum(map(ord, case)))
    partition(shuffled)
    assert_identical(expected, run(shuffled, spec["fetches"], feeds), spec["fetches"])


SAMPLES = REPO_ROOT / "sample_graphs"


@pytest.mark.parametrize("name", sorted(path.stem for path in SAMPLES.glob("*.pb")))
def test_sample_graph_runs_identically_after_place_and_partition(name):
    graph = from_graphdef(graph_io.load_graphdef(str(SAMPLES / f"{name}.pb")), name)
    feeds = dict(np.load(SAMPLES / f"{name}.feeds.npz"))
    fetches = [ref.name for node in graph_outputs(graph) for ref in node.outputs]
    single = graph.copy()
    for node in single.nodes:
        node.device = ""
    expected = run(single, fetches, feeds)
    place(graph, DEVICES)
    partition(graph)
    assert_identical(expected, run(graph, fetches, feeds, threads=2), fetches)
