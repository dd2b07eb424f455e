"""Partitioning control flow that spans devices: per-device loop skeletons driven by the received
predicate, loops over 3 devices with parallel iterations, nested loops, conds across devices,
loops on untaken branches, and random placements of the fixtures' loops (run == original run)."""
import numpy as np
import pytest

from graphtool.builder import GraphBuilder
from graphtool.errors import InvalidGraphError
from graphtool.ir import Graph
from graphtool.partition import partition, split_by_device

from .helpers import placeholder, while_loop
from .partition_support import (assert_identical, cpu, fixture_feed_files, fixture_feeds, fixture_spec,
                                load_fixture, ops_of, place_groups_randomly, place_nodes_randomly, run, send_of)

FRAME = "loop/while_context"


def three_device_loop(parallel_iterations: int) -> Graph:
    """for i < n: y = tanh(1.5 x) on cpu:1; acc += sum(y) on cpu:2; i += 1 on cpu:0 (which holds
    the loop's own nodes and its LoopCond, as tf.while_loop places them)."""
    b = GraphBuilder()

    def body(i, x, acc):
        with b.device(cpu(1)):
            y = b.tanh(b.mul(x, 1.5))
        with b.device(cpu(2)):
            acc = b.add(acc, b.reduce_sum(y, 0))
        return [b.add(i, 1), y, acc]

    with b.device(cpu(0)):
        n, x = b.placeholder("int32", [], name="n"), b.placeholder("float32", [4], name="x")
        results = b.while_loop(lambda i, x, acc: b.less(i, n), body, [0, x, 0.0],
                               parallel_iterations=parallel_iterations, name="loop")
        for k, result in enumerate(results):
            b.identity(result, name=f"out{k}")
    return b.graph


OUTPUTS = ["out0", "out1", "out2"]


def loop_feeds(n: int) -> dict:
    return {"n": np.int32(n), "x": np.array([0.5, -1.0, 2.0, 0.25], np.float32)}


def skeleton_parts(graph: Graph, frame: str, label: str) -> dict:
    base = f"{frame}/_cloop_{label}"
    return {part: graph.node(f"{base}/{part}") for part in ("enter", "merge", "switch", "pivot", "next_iteration")}


# --- the skeleton -----------------------------------------------------------------------------------

def test_every_device_of_a_spanning_loop_gets_a_skeleton_driven_by_the_predicate():
    g = three_device_loop(parallel_iterations=4)
    report = partition(g)
    assert report.skeletons == {FRAME: [cpu(0), cpu(1), cpu(2)]}   # cpu:0 receives y: it needs one too
    loop_cond = g.node("loop/LoopCond")
    for index in (1, 2):
        parts = skeleton_parts(g, FRAME, f"cpu_{index}")
        enter, merge, switch = parts["enter"], parts["merge"], parts["switch"]
        assert enter.attr("frame_name") == FRAME and enter.attr("parallel_iterations") == 4
        assert enter.attr("is_constant") is False
        assert merge.inputs == (enter.output(0), parts["next_iteration"].output(0))
        pred = switch.inputs[1].node
        assert pred.op == "_Recv" and send_of(g, pred).inputs[0] == loop_cond.output(0)
        assert pred.control_inputs == (merge,)                     # received once per iteration
        assert parts["pivot"].inputs == (switch.output(1),)
        assert parts["next_iteration"].inputs == (parts["pivot"].output(0),)
        assert all(n.device == cpu(index) for n in parts.values())
    assert skeleton_parts(g, FRAME, "cpu_0")["switch"].inputs[1] == loop_cond.output(0)
    assert not [n for n in ops_of(g, "Exit") if "_cloop" in n.name]


def test_every_transfer_inside_the_loop_hangs_from_its_devices_skeleton():
    g = three_device_loop(parallel_iterations=4)
    report = partition(g)
    inside = [t for t in report.transfers if t.frame == FRAME]
    assert inside
    for transfer in inside:
        for node in (transfer.recv, transfer.send):
            anchor = skeleton_parts(g, FRAME, f"cpu_{node.device.rsplit(':', 1)[1]}")["merge"]
            assert anchor in node.control_inputs, node.name
    # One predicate Recv per device, shared by every Switch there that reads it.
    for index in (1, 2):
        preds = [t for t in inside if t.carries == "loop/LoopCond" and t.recv.device == cpu(index)]
        assert len(preds) == 1


def test_each_device_sees_one_consistent_frame():
    g = three_device_loop(parallel_iterations=4)
    partition(g)
    for device, part in split_by_device(g).items():
        info = part.frames()
        assert not info.problems
        assert set(info.frames) == {"", FRAME}, device
        assert info.frames[FRAME].parallel_iterations == 4


def test_real_enters_wait_for_the_loops_liveness_token():
    g = three_device_loop(parallel_iterations=4)
    partition(g)
    enters = [n for n in ops_of(g, "Enter") if "_cloop" not in n.name]
    assert enters
    for enter in enters:
        gates = [c for c in enter.control_inputs if "_cloop_live_on_" in c.name]
        assert len(gates) == 1 and gates[0].device == enter.device


@pytest.mark.parametrize("parallel_iterations", [1, 4])
@pytest.mark.parametrize("n", [0, 1, 7])
def test_a_loop_over_three_devices_computes_the_same(parallel_iterations, n):
    g = three_device_loop(parallel_iterations)
    expected = run(g.copy(), OUTPUTS, loop_feeds(n))
    partition(g)
    assert_identical(expected, run(g, OUTPUTS, loop_feeds(n), threads=2), OUTPUTS)


def test_loop_plumbing_moves_to_its_consumers():
    g = three_device_loop(parallel_iterations=2)
    g.node("loop/Merge_1").device = cpu(1)       # x's Merge with its body: its Enter must follow
    g.node("loop/Switch_1").device = cpu(1)
    report = partition(g)
    assert "loop/Enter_1" in report.relocation.moved and g.node("loop/Enter_1").device == cpu(1)
    assert g.node("loop/NextIteration_1").device == cpu(1)
    expected = run(three_device_loop(2), OUTPUTS, loop_feeds(5))
    assert_identical(expected, run(g, OUTPUTS, loop_feeds(5)), OUTPUTS)


def test_a_loop_across_devices_needs_its_loopcond():
    g = Graph()
    exit_node = while_loop(g, placeholder(g, "start", []), prefix="w")
    switch, cond = g.node("w/Switch"), g.node("w/LoopCond")
    switch.set_input(1, cond.inputs[0])
    g.remove_node(cond)
    for node in g.nodes:
        node.device = "cpu:1" if node.name == "w/mul" else "cpu:0"
    assert exit_node.device == "cpu:0"
    with pytest.raises(InvalidGraphError, match="frame 'w/ctx' spans devices .* but has no LoopCond"):
        partition(g)


# --- nested loops ---------------------------------------------------------------------------------

def nested_loops() -> Graph:
    """for i < n (cpu:0): { j = 0; s = x; for j < i+1 (inner cond on cpu:2): s = s*0.5 + j (cpu:1) };
    total += sum(s) (cpu:2); both loops with 3 parallel iterations."""
    b = GraphBuilder()

    def inner_body(j, s):
        with b.device(cpu(1)):
            s = b.add(b.mul(s, 0.5), b.cast(j, "float32"))
        return [b.add(j, 1), s]

    def outer_body(i, total):
        with b.device(cpu(2)):
            limit = b.add(i, 1)
        _, s = b.while_loop(lambda j, s: b.less(j, limit), inner_body, [0, x], parallel_iterations=3,
                            name="inner")
        with b.device(cpu(2)):
            total = b.add(total, b.reduce_sum(s, 0))
        return [b.add(i, 1), total]

    with b.device(cpu(0)):
        n, x = b.placeholder("int32", [], name="n"), b.placeholder("float32", [3], name="x")
        i, total = b.while_loop(lambda i, t: b.less(i, n), outer_body, [0, 0.0], parallel_iterations=3,
                                name="outer")
        b.identity(i, name="iterations")
        b.identity(total, name="total")
    return b.graph


def test_inner_skeletons_live_inside_the_outer_skeleton_of_their_device():
    g = nested_loops()
    report = partition(g)
    outer, inner = "outer/while_context", "outer/inner/while_context"
    assert set(report.skeletons) == {outer, inner}
    for device, part in split_by_device(g).items():
        info = part.frames()
        assert not info.problems
        if inner in info.frames:
            assert info.frames[inner].parent.name == outer, device
    # The inner skeleton on cpu:1 is entered with the inner loop's liveness token, received in
    # the outer frame by a Recv that hangs from cpu:1's outer skeleton.
    live = skeleton_parts(g, inner, "cpu_1")["enter"].inputs[0].node
    recv = live.inputs[0].node
    assert recv.op == "_Recv" and recv.control_inputs == (skeleton_parts(g, outer, "cpu_1")["merge"],)


@pytest.mark.parametrize("n", [0, 1, 4])
def test_nested_loops_across_devices_compute_the_same(n):
    feeds = {"n": np.int32(n), "x": np.array([1.0, -2.0, 8.0], np.float32)}
    g = nested_loops()
    expected = run(g.copy(), ["iterations", "total"], feeds)
    partition(g)
    assert_identical(expected, run(g, ["iterations", "total"], feeds, threads=2), ["iterations", "total"])


# --- conds ------------------------------------------------------------------------------------------

def cond_across_devices(loop_in_true_branch: bool = False) -> Graph:
    """pred on cpu:0 picks the true branch (cpu:1; a loop on cpu:1 and cpu:2 when asked) or the
    false branch (cpu:2); the Merge is on cpu:0."""
    b = GraphBuilder()

    def true_fn():
        with b.device(cpu(1)):
            if not loop_in_true_branch:
                return b.mul(x, 3.0)
            def body(k, v):
                with b.device(cpu(2)):
                    v = b.add(v, 1.0)
                return [b.add(k, 1), v]
            return b.while_loop(lambda k, v: b.less(k, 3), body, [0, x], name="loop")[1]

    def false_fn():
        with b.device(cpu(2)):
            return b.sub(x, 1.0)

    with b.device(cpu(0)):
        p, x = b.placeholder("bool", [], name="p"), b.placeholder("float32", [2], name="x")
        b.identity(b.cond(p, true_fn, false_fn), name="y")
    return b.graph


@pytest.mark.parametrize("loop_in_true_branch", [False, True])
@pytest.mark.parametrize("pred", [True, False])
def test_a_cond_across_devices_sends_dead_values_as_dead(loop_in_true_branch, pred):
    feeds = {"p": np.bool_(pred), "x": np.array([1.5, -4.0], np.float32)}
    g = cond_across_devices(loop_in_true_branch)
    expected = run(g.copy(), ["y"], feeds)
    report = partition(g)
    assert bool(report.skeletons) == loop_in_true_branch    # a cond alone needs no skeleton
    assert_identical(expected, run(g, ["y"], feeds, threads=2), ["y"])


# --- random placements of the fixtures' loops --------------------------------------------------------

# fixture -> how many random placements (the slow ones fewer; test_partition.py adds one more each)
LOOP_FIXTURES = {"while_loop": 3, "nested_while": 3, "while_in_cond": 3, "cond_in_while": 3, "while_double": 2,
                 "dynamic_lstm": 2}
STATEFUL_LOOP_FIXTURES = ["grad_while", "grad_nested_while", "tensor_array_ops", "train_loop"]


def _check_fixture(case: str, place, seeds: range) -> None:
    spec = fixture_spec(case)
    for feeds_file in fixture_feed_files(case):
        feeds = fixture_feeds(case, feeds_file)
        expected = run(load_fixture(case), spec["fetches"], feeds)
        for seed in seeds:
            g = load_fixture(case)
            place(g, seed)
            partition(g)
            assert_identical(expected, run(g, spec["fetches"], feeds, threads=2), spec["fetches"])


@pytest.mark.parametrize("case", LOOP_FIXTURES)
def test_any_placement_of_a_loop_computes_the_same(case):
    """Every node on a random device, loop plumbing included."""
    _check_fixture(case, place_nodes_randomly, range(LOOP_FIXTURES[case]))


@pytest.mark.parametrize("case", STATEFUL_LOOP_FIXTURES)
def test_random_constrained_placements_of_stateful_loops_compute_the_same(case):
    """TensorArrays, Stacks and variables stay with their users (colocation groups)."""
    _check_fixture(case, place_groups_randomly, range(100, 101))


def test_the_model_parallel_sample_pipelines_across_eight_devices():
    """The paper's 8-layer RNN, one layer per device, 32 parallel iterations."""
    from graphtool import graph_io
    from graphtool.ir import from_graphdef

    from .helpers import REPO_ROOT

    path = REPO_ROOT / "sample_graphs" / "model_parallel_rnn.pb"
    g = from_graphdef(graph_io.load_graphdef(str(path)), "model_parallel_rnn")
    feeds = dict(np.load(REPO_ROOT / "sample_graphs" / "model_parallel_rnn.feeds.npz"))
    single = g.copy()
    for node in single.nodes:
        node.device = ""
    expected = run(single, ["final_state", "top_sum"], feeds)
    report = partition(g)
    assert len(report.devices) == 8 and list(report.skeletons) == ["rnn/while_context"]
    assert len(report.skeletons["rnn/while_context"]) == 8
    assert_identical(expected, run(g, ["final_state", "top_sum"], feeds), ["final_state", "top_sum"])


def sending_only_loop() -> Graph:
    """acc += 2w per iteration, where 2w is worked out on cpu:1 from a loop constant: cpu:1 only
    sends inside the loop and has no loop variable of its own."""
    b = GraphBuilder()

    def body(i, acc):
        with b.device(cpu(1)):
            doubled = b.add(w, w)
        return [b.add(i, 1), b.add(acc, doubled)]

    with b.device(cpu(0)):
        n, w = b.placeholder("int32", [], name="n"), b.placeholder("float32", [2], name="w")
        _, acc = b.while_loop(lambda i, acc: b.less(i, n), body, [0, b.zeros([2])], name="loop")
        b.identity(acc, name="acc")
    # Like tf.while_loop, the builder makes a node fed by loop constants only wait for the loop's
    # pivot; without that edge the node runs in each iteration all the same (a loop constant
    # reaches every iteration), and cpu:1 receives nothing inside the loop.
    doubled = b.graph.node("loop/AddV2")
    doubled.remove_control_input(b.graph.node("loop/Identity"))
    return b.graph


def test_a_device_that_only_sends_in_a_loop_still_iterates_when_pruned():
    """Pruning from the fetches follows a needed Recv to its Send and on along inputs; cpu:1's
    skeleton comes along only because its Sends hang from it (else cpu:1 would run iteration 0
    only, and cpu:0 would wait for 2w in iteration 1 for ever)."""
    g = sending_only_loop()
    feeds = {"n": np.int32(5), "w": np.array([1.5, -0.25], np.float32)}
    expected = run(g.copy(), ["acc"], feeds)
    report = partition(g)
    assert cpu(1) in report.skeletons[FRAME]
    assert not [t for t in report.transfers if t.frame == FRAME and t.recv.device == cpu(1)
                and t.carries != "loop/LoopCond"]
    assert_identical(expected, run(g, ["acc"], feeds, threads=2), ["acc"])
    assert expected[0].tolist() == [15.0, -2.5]
