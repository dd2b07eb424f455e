"""Collectives on the devices of one process: every op against numpy (and TensorFlow's recorded
outputs), the ring's chunking, loops, pruning, and every way a group can go wrong ending in one
clear error instead of a hang."""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from graphtool.builder import GraphBuilder
from graphtool.errors import InvalidGraphError, RuntimeFailure
from graphtool.exec.collective import algorithms
from graphtool.exec.session import Session
from graphtool.loader import load_graph
from tests.collective_graphs import (Case, add_collective, cases_graph, collective_graph, expected, feeds_for,
                                     member_inputs, tolerance)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "collectives"


def cpus(n: int) -> tuple[str, ...]:
    return tuple(f"/device:CPU:{i}" for i in range(n))


def run_case(case: Case, seed: int = 0, graph=None, timeout: float | None = 60):
    values = member_inputs(case, np.random.default_rng(seed))
    session = Session(graph if graph is not None else collective_graph(case))
    result = session.run(case.fetch_names(), feeds_for(case, values), timeout=timeout)
    return values, list(result.values)


def check(case: Case, seed: int = 0) -> None:
    values, outputs = run_case(case, seed)
    for got, want in zip(outputs, expected(case, values)):
        assert got.dtype == want.dtype and got.shape == want.shape, case.label
        np.testing.assert_allclose(got, want, **tolerance(case.dtype, case.size), err_msg=case.label)


# --- every collective, against numpy ------------------------------------------------------------

@pytest.mark.parametrize("n", [2, 3, 4, 8])
@pytest.mark.parametrize("merge,final", [("Add", "Id"), ("Add", "Div"), ("Mul", "Id"), ("Min", "Id"),
                                         ("Max", "Div")])
def test_reduce_equals_numpy(n, merge, final):
    for dtype in ("float16", "float32", "float64", "int32", "int64"):
        check(Case("reduce", cpus(n), dtype=dtype, shape=(7, 3), merge=merge, final=final))


@pytest.mark.parametrize("n", [2, 3, 4, 8])
@pytest.mark.parametrize("kind", ["reduce_scatter", "gather", "bcast", "all_to_all"])
def test_other_collectives_equal_numpy(kind, n):
    merges = [("Add", "Id"), ("Add", "Div"), ("Mul", "Id"), ("Min", "Id"), ("Max", "Div")] \
        if kind == "reduce_scatter" else [("Add", "Id")]
    for dtype in ("float16", "float32", "float64", "int32", "int64"):
        shape = (2 * n, 3) if kind in ("reduce_scatter", "all_to_all") else (3, 5)
        for merge, final in merges:
            check(Case(kind, cpus(n), dtype=dtype, shape=shape, merge=merge, final=final, root=n - 1))


@pytest.mark.parametrize("kind", ["reduce", "gather", "bcast"])
def test_v1_forms_equal_numpy(kind):
    for n in (2, 3, 4):
        check(Case(kind, cpus(n), dtype="float64", shape=(5,), v1=True, final="Div", root=1))


@pytest.mark.parametrize("shape", [(0,), (0, 4), (1,), (13,), (3, 1, 7)])
def test_empty_and_odd_sized_tensors(shape):
    for n in (2, 3, 8):
        check(Case("reduce", cpus(n), shape=shape))
        check(Case("gather", cpus(n), shape=shape if shape else (1,)))
        check(Case("bcast", cpus(n), shape=shape, root=n // 2))
    for kind in ("all_to_all", "reduce_scatter"):   # dim 0 must split evenly: 0 rows, or n odd rows
        check(Case(kind, cpus(3), shape=(0, 4)))
        check(Case(kind, cpus(3), shape=(3, 5)))


def test_a_group_of_one_returns_its_input():
    for kind in ("reduce", "gather", "bcast", "all_to_all", "reduce_scatter"):
        check(Case(kind, cpus(1), shape=(4, 2), final="Div"))


def test_ranks_follow_device_order_not_listing_order():
    devices = ("/device:CPU:2", "/device:CPU:0", "/device:CPU:1")
    for kind in ("gather", "all_to_all", "reduce_scatter"):
        check(Case(kind, devices, shape=(6, 2)))


def test_large_tensors_travel_in_pipelined_chunks(monkeypatch):
    # 64 chunks per segment: chunks of one segment are in flight on several members at once.
    monkeypatch.setattr(algorithms, "CHUNK_BYTES", 1024)
    for kind, shape in (("reduce", (3001, 7)), ("gather", (1000, 7)), ("bcast", (4096, 4)),
                        ("reduce_scatter", (4000, 4))):
        check(Case(kind, cpus(4), dtype="float64", shape=shape))


def test_tensorflow_fixtures():
    cases = json.loads((FIXTURES / "cases.json").read_text())["cases"]
    assert len(cases) >= 29
    for case in cases:
        name = case["name"]
        feeds = dict(np.load(FIXTURES / f"{name}.feeds.npz"))
        want = np.load(FIXTURES / f"{name}.expected.npz")
        result = Session(load_graph(str(FIXTURES / f"{name}.pb"))).run(case["fetches"], feeds, timeout=60)
        for fetch, got in zip(case["fetches"], result.values):
            assert got.dtype == want[fetch].dtype, name
            np.testing.assert_allclose(got, want[fetch], rtol=1e-6, err_msg=name)


def test_many_instances_run_concurrently_in_one_step():
    devices = cpus(4)
    cases = [Case("reduce", devices, shape=(50,), instance_key=k, prefix=f"r{k}/") for k in range(6)]
    cases += [Case("gather", devices, shape=(3,), instance_key=10 + k, prefix=f"g{k}/") for k in range(3)]
    graph = cases_graph(cases)
    rng = np.random.default_rng(3)
    feeds, values = {}, {}
    for case in cases:
        values[case] = member_inputs(case, rng)
        feeds.update(feeds_for(case, values[case]))
    fetches = [name for case in cases for name in case.fetch_names()]
    session = Session(graph)
    for _ in range(3):   # and again: every step has its own rendezvous
        outputs = iter(session.run(fetches, feeds, timeout=60).values)
        for case in cases:
            for want in expected(case, values[case]):
                np.testing.assert_allclose(next(outputs), want, **tolerance(case.dtype, case.size))


def test_a_collective_in_a_while_loop_runs_once_per_iteration():
    """Each iteration is its own instance run (the rendezvous keys carry the frame and
    iteration): x_{k+1} = mean over members of (x_k + member index)."""
    b = GraphBuilder()
    outs = []
    n = 3
    for i, device in enumerate(cpus(n)):
        with b.device(device):
            start = b.const(np.float64([float(i)]))
            keys = [b.const(np.int32(n)), b.const(np.int32(5)), b.const(np.int32(9))]

            def body(k, x, i=i, keys=keys):
                shifted = b.add(x, b.const(np.float64([float(i)])))
                mean = b.op("CollectiveReduceV2", [shifted, *keys, []], merge_op="Add", final_op="Div")
                return b.add(k, b.const(np.int32(1))), mean

            _, x = b.while_loop(lambda k, x: b.less(k, b.const(np.int32(4))), body, [b.const(np.int32(0)), start],
                                parallel_iterations=2)
            outs.append(b.identity(x, name=f"out{i}"))
    values = Session(b.graph).run([f"out{i}" for i in range(n)], {}, timeout=60).values
    x = np.arange(n, dtype=np.float64)
    for _ in range(4):
        x = np.full(n, np.mean(x + np.arange(n)))
    for got in values:
        np.testing.assert_allclose(got, [x[0]])


def test_fetching_one_member_runs_the_whole_instance():
    case = Case("reduce", cpus(3), shape=(4,))
    values = member_inputs(case, np.random.default_rng(1))
    result = Session(collective_graph(case)).run(["out1"], feeds_for(case, values), timeout=60)
    np.testing.assert_allclose(result.values[0], expected(case, values)[1], rtol=1e-6)


def test_members_all_dead_give_a_dead_output_and_a_mixed_group_fails():
    def graph(live_members: tuple[bool, ...]):
        b = GraphBuilder()
        case = Case("reduce", cpus(len(live_members)), shape=(2,))
        inputs = []
        for i, live in enumerate(live_members):
            with b.device(case.devices[i]):
                x = b.placeholder("float32", [2], name=f"x{i}")
                pred = b.const(np.bool_(live))
                inputs.append(b.op("Switch", [x, pred])[1])   # the true side: dead unless live
        outs = add_collective(b, case, inputs)
        with b.device(case.devices[0]):
            b.op("Merge", [[outs[0], b.const(np.float32([-1, -1]))]], name="merged")
        return b.graph, case

    feeds = {f"x{i}": np.ones(2, np.float32) for i in range(3)}
    all_dead, _ = graph((False, False, False))
    merged = Session(all_dead).run(["merged:0"], feeds, timeout=60).values[0]
    np.testing.assert_array_equal(merged, [-1, -1])      # the dead output took the Merge's other side
    mixed, _ = graph((True, False, True))
    with pytest.raises(RuntimeFailure, match=r"collective group 1 instance 1: the member on .*CPU:1 has a dead "
                                             r"input .* every member must run, or none"):
        Session(mixed).run(["out0", "out2"], feeds, timeout=60)


# --- what the graph shows is refused before anything runs ----------------------------------------

def test_a_group_missing_a_member_is_refused_before_the_step():
    case = Case("reduce", cpus(2), group_size=3)
    with pytest.raises(InvalidGraphError, match=r"collective group 1 has group_size 3, but its members run on 2 "
                                                r"device\(s\)"):
        run_case(case)


def test_two_members_on_one_device_are_refused():
    case = Case("reduce", ("/device:CPU:0", "/device:CPU:0", "/device:CPU:1"), group_size=2)
    with pytest.raises(InvalidGraphError, match=r"'member0' and 'member1' both run on .*CPU:0"):
        run_case(case)


def test_members_that_disagree_on_the_op_or_dtype_are_refused():
    with pytest.raises(InvalidGraphError, match=r"is a reduce of float32 \(Add, Id\) but .* is a reduce of float64"):
        run_case(Case("reduce", cpus(2), dtypes=("float32", "float64")))
    b = GraphBuilder()
    add_collective(b, Case("reduce", cpus(1), group_size=2))
    add_collective(b, Case("gather", ("/device:CPU:1",), prefix="g", group_size=2))
    with pytest.raises(InvalidGraphError, match=r"a reduce of float32 \(Add, Id\) but .* is a gather of float32"):
        Session(b.graph).run(["out0", "gout0"], {"x0": np.ones(4, np.float32), "gx0": np.ones(4, np.float32)})


def test_a_broadcast_needs_exactly_one_sender():
    b = GraphBuilder()
    for i, device in enumerate(cpus(2)):
        with b.device(device):
            keys = [b.const(np.int32(2)), b.const(np.int32(1)), b.const(np.int32(1))]
            b.identity(b.op("CollectiveBcastRecvV2", [*keys, b.const(np.int32([2]))], T="float32"), name=f"out{i}")
    with pytest.raises(InvalidGraphError, match="a broadcast needs exactly one CollectiveBcastSend; no member sends"):
        Session(b.graph).run(["out0", "out1"], {})


def test_keys_must_be_constants():
    b = GraphBuilder()
    with b.device("/device:CPU:0"):
        key = b.placeholder("int32", [], name="key")
        x = b.placeholder("float32", [2], name="x")
        b.op("CollectiveReduceV2", [x, b.const(np.int32(1)), key, b.const(np.int32(1)), []], merge_op="Add",
             final_op="Id", name="reduce")
    with pytest.raises(InvalidGraphError, match=r"node 'reduce' \(CollectiveReduceV2\): its group_key \(input 2\) "
                                                r"comes from 'key' \(Placeholder\), not a constant"):
        Session(b.graph).run(["reduce"], {"key": np.int32(1), "x": np.ones(2, np.float32)})


# --- what only the step shows fails it, naming the collective --------------------------------------

def test_members_holding_different_shapes_fail_the_step():
    case = Case("reduce", cpus(3), shapes=((4,), (4,), (5,)))
    with pytest.raises(RuntimeFailure, match=r"collective group 1 instance 1: the member on .*CPU:\d holds "
                                             r"float32\[\d\] but the one on .*CPU:\d holds float32\[\d\]"):
        run_case(case)


def test_a_broadcast_receiver_expecting_another_shape_fails_the_step():
    case = Case("bcast", cpus(2), shapes=((3,), (4,)))
    with pytest.raises(RuntimeFailure, match=r"holds float32\[3\] but the one on .* holds float32\[4\]|"
                                             r"holds float32\[4\] but the one on .* holds float32\[3\]"):
        run_case(case)


def test_an_all_to_all_that_does_not_split_evenly_fails():
    with pytest.raises(RuntimeFailure, match=r"dim 0 of 5, which cannot be split into 2 equal blocks"):
        run_case(Case("all_to_all", cpus(2), shape=(5,)))


def test_a_member_that_never_runs_ends_the_step_with_an_error_not_a_hang():
    """Member 1 waits on a Recv nobody sends: every device ends up waiting, the rendezvous sees
    it, and the error names the collective's missing pieces."""
    b = GraphBuilder()
    case = Case("reduce", cpus(2), shape=(3,))
    with b.device(case.devices[1]):
        never = b.op("_Recv", [], tensor_type="float32", tensor_name="nobody", send_device="/device:CPU:0",
                     send_device_incarnation=1, recv_device=case.devices[1], name="never")
    with b.device(case.devices[0]):
        x0 = b.placeholder("float32", [3], name="x0")
    add_collective(b, case, [x0, never])
    start = time.monotonic()
    with pytest.raises(RuntimeFailure, match=r"cannot finish: no device sends .*(collective group 1 instance 1|"
                                             r"tensor 'nobody')"):
        Session(b.graph).run(["out0"], {"x0": np.ones(3, np.float32)}, timeout=60)
    assert time.monotonic() - start < 20


def test_timeout_seconds_bounds_the_wait():
    """Member 1 is slow (a chain of matrix products), not stuck: member 0 gives up after its
    timeout_seconds, as TensorFlow's collectives do, naming what it waited for."""
    b = GraphBuilder()
    case = Case("reduce", cpus(2), shape=(400, 400), timeout_seconds=0.01)
    with b.device(case.devices[1]):
        slow = b.placeholder("float32", [400, 400], name="x1")
        for _ in range(30):
            slow = b.matmul(slow, slow)
    add_collective(b, case, [None, slow])
    feeds = {f"x{i}": np.eye(400, dtype=np.float32) for i in range(2)}
    with pytest.raises(RuntimeFailure, match=r"collective group 1 instance 1 timed out after 0.01 s "
                                             r"\(timeout_seconds\) waiting for .*CPU:1"):
        Session(b.graph).run(["out0", "out1"], feeds, timeout=60)


def test_members_on_gpus_reduce_through_host_memory():
    """On the GPU test double: inputs leave each device through to_host and results come back
    through to_device, as transfers do."""
    gpus = tuple(f"/device:GPU:{i}" for i in range(3))
    for case in (Case("reduce", gpus, shape=(6, 2), final="Div"), Case("all_to_all", gpus, shape=(6, 2)),
                 Case("bcast", gpus, shape=(5,), root=2)):
        values = member_inputs(case, np.random.default_rng(5))
        session = Session(collective_graph(case), device="fakegpu")
        result = session.run(case.fetch_names(), feeds_for(case, values), timeout=60)
        assert [d.rsplit("/device:", 1)[1] for d in result.devices] == ["GPU:0", "GPU:1", "GPU:2"]
        for got, want in zip(result.values, expected(case, values)):
            np.testing.assert_allclose(got, want, **tolerance(case.dtype, case.size))


def test_ordering_tokens_only_order():
    """v2 ops take resource handles as ordering tokens (TensorFlow's automatic control
    dependencies); they add edges, not values."""
    b = GraphBuilder()
    outs = []
    for i, device in enumerate(cpus(2)):
        with b.device(device):
            token = b.op("VarHandleOp", [], dtype="float32", shape=[], shared_name=f"v{i}", name=f"token{i}")
            x = b.placeholder("float32", [3], name=f"x{i}")
            keys = [b.const(np.int32(2)), b.const(np.int32(4)), b.const(np.int32(2))]
            reduced = b.op("CollectiveReduceV2", [x, *keys, [token]], merge_op="Add", final_op="Id")
            outs.append(b.identity(reduced, name=f"out{i}"))
    feeds = {"x0": np.float32([1, 2, 3]), "x1": np.float32([10, 20, 30])}
    for got in Session(b.graph).run(["out0", "out1"], feeds, timeout=60).values:
        np.testing.assert_array_equal(got, [11, 22, 33])


def test_a_failed_member_stops_a_peer_busy_in_a_loop():
    """Member 1's input comes from a loop of 10^8 iterations; member 0 times out. The step ends
    within seconds: the busy device notices the aborted rendezvous at its next loop iteration."""
    b = GraphBuilder()
    case = Case("reduce", cpus(2), shape=(), timeout_seconds=0.5)
    with b.device(case.devices[1]):
        _, spun = b.while_loop(lambda i, x: b.less(i, b.const(np.int32(10 ** 8))),
                               lambda i, x: (b.add(i, b.const(np.int32(1))), b.add(x, b.const(np.float32(1)))),
                               [b.const(np.int32(0)), b.const(np.float32(0))], parallel_iterations=1)
    add_collective(b, case, [None, spun])
    start = time.monotonic()
    with pytest.raises(RuntimeFailure, match=r"timed out after 0.5 s"):
        Session(b.graph).run(["out0", "out1"], {"x0": np.float32(1)}, timeout=120)
    assert time.monotonic() - start < 15


def test_a_member_asking_for_a_device_that_is_not_here_is_not_moved():
    """Soft placement would put both GPU members on the CPU, one group short of a device: the
    member's request is refused by name instead."""
    case = Case("reduce", ("/device:CPU:0", "/device:GPU:3"), shape=(2,))
    with pytest.raises(InvalidGraphError, match=r"node 'member1' \(CollectiveReduceV2\) requests device "
                                                r"'/device:GPU:3', but"):
        run_case(case)
