"""Collectives on a cluster: every op (v2 and v1 forms) against numpy for group sizes 2 and 3 on
the session's `local:3` cluster and 4 and 8 on eight zero-CPU tasks joining its Ray instance (a
cluster task has one CPU device), every dtype, empty and odd-sized tensors, TensorFlow's recorded
fixtures, a `dftool run --cluster`; and their failures: members that disagree (shape, dtype, group
size), a member on an untaken branch, a collective's own timeout, a worker killed mid-step. Each
failure is one clean error naming the collective (node, group, instance) soon, never a hang.

One graph (one step) per group size holds many instances of the group; a step's instances run
concurrently, told apart by their instance keys."""
from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from graphtool.builder import GraphBuilder
from graphtool.errors import DftoolError
from graphtool.exec.session import Session
from graphtool.ir.export import to_graphdef
from tests.collective_graphs import (
    MERGES, Case, add_collective, cases_graph, expected, feeds_for, member_inputs, tolerance)

from .processes import Dftool

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

DTYPES = ("float16", "float32", "float64", "int32", "int64")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "collectives"
STEP_TIMEOUT = 60      # a backstop: a failing collective must fail well before it


def device(task: int, index: int = 0) -> str:
    return f"/job:worker/replica:0/task:{task}/device:CPU:{index}"


def members(n: int) -> tuple[str, ...]:
    """Tasks 0..n-1 of the cluster, listed in reverse: ranks follow canonical device order, not
    the order the graph lists its members in. (A cluster task has one CPU device, CPU:0: a device
    CPU:1 of a task is soft-placed onto CPU:0, so a group of 4 or 8 needs as many tasks.)"""
    return tuple(device(j) for j in range(n))[::-1]


@pytest.fixture(scope="module")
def cluster8(cluster3, tmp_path_factory):
    """Eight tasks of their own (reserving no CPU) joining `cluster3`'s Ray instance: groups of 4
    and 8 members without starting another Ray."""
    import ray

    from graphtool.cluster import open_cluster

    path = tmp_path_factory.mktemp("collectives") / "cluster8.json"
    path.write_text(json.dumps({"address": ray.get_runtime_context().gcs_address,
                                "jobs": {"worker": [{"cpus": 0}] * 8}}))
    cluster = open_cluster(str(path))
    try:
        yield cluster
    finally:
        cluster.close()


def acceptance_cases(n: int) -> list[Case]:
    """The instances of the group of `n` members run in one step: every kind in every dtype, every
    merge/final for float32, float64 and int32 (Add/Div and Min/Id for the others), odd-sized,
    scalar and empty tensors, the v1 forms. n = 8 runs a smaller set (one of each kind and form)."""
    devices, cases = members(n), []   # type: tuple[str, ...], list[Case]

    def add(kind, dtype, shape, **kw):
        key = len(cases) + 1
        cases.append(Case(kind, devices, dtype, shape, group_key=100 + n, instance_key=key, prefix=f"c{key}/", **kw))

    full = DTYPES if n < 8 else ("float32", "int64")
    for dtype in full:
        pairs = [(m, f) for m in MERGES for f in ("Id", "Div")] \
            if dtype in ("float32", "float64", "int32") and n < 8 else [("Add", "Div"), ("Min", "Id")]
        for merge, final in pairs:
            add("reduce", dtype, (7, 3), merge=merge, final=final)
        add("reduce", dtype, (5,), merge="Add", final="Div", v1=True)
        add("reduce", dtype, (), merge="Max", final="Id")
        add("reduce", dtype, (0, 3), merge="Add", final="Div")
        add("reduce_scatter", dtype, (3 * n, 5), merge="Add", final="Div")
        add("reduce_scatter", dtype, (n,), merge="Max", final="Id")
        add("reduce_scatter", dtype, (0,), merge="Add", final="Id")
        add("gather", dtype, (3, 5))
        add("gather", dtype, (1,), v1=True)
        add("gather", dtype, (0, 2))
        add("bcast", dtype, (4, 3), root=n - 1)
        add("bcast", dtype, (3,), root=1, v1=True)
        add("bcast", dtype, (0,), root=0)
        add("all_to_all", dtype, (3 * n, 2))
        add("all_to_all", dtype, (n,))
        add("all_to_all", dtype, (0, 4))
    return cases


def run_cases(session: Session, cases: list[Case], seed: int):
    rng = np.random.default_rng(seed)
    values = {case.prefix: member_inputs(case, rng) for case in cases}
    feeds = {name: value for case in cases for name, value in feeds_for(case, values[case.prefix]).items()}
    fetches = [name for case in cases for name in case.fetch_names()]
    result = session.run(fetches, feeds, timeout=STEP_TIMEOUT)
    got = dict(zip(fetches, result.values))
    return values, got, result


def check_cases(cases: list[Case], values, got) -> None:
    for case in cases:
        for name, want in zip(case.fetch_names(), expected(case, values[case.prefix])):
            out = np.asarray(got[name])
            assert out.dtype == want.dtype and out.shape == want.shape, \
                (case.label, name, out.dtype, out.shape, want.dtype, want.shape)
            np.testing.assert_allclose(out, want, err_msg=f"{case.label} {name}", **tolerance(case.dtype, case.size))


# --- acceptance ------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_every_collective_equals_numpy_on_the_cluster(request, n):
    cluster = request.getfixturevalue("cluster3" if n <= 3 else "cluster8")
    cases = acceptance_cases(n)
    session = Session(cases_graph(cases), cluster=cluster)
    values, got, result = run_cases(session, cases, seed=n)
    check_cases(cases, values, got)
    assert set(members(n)) <= set(result.devices)
    # a second step (new inputs) through the same session: instances are per step
    values, got, _ = run_cases(session, cases, seed=100 + n)
    check_cases(cases, values, got)


def test_tensorflow_fixtures_run_on_the_cluster(cluster3):
    """TensorFlow's recorded collectives (tools/make_collective_fixtures.py, /device:CPU:k) with
    member k moved to a cluster task: TensorFlow's own outputs."""
    from graphtool.graph_io import load_graphdef
    from graphtool.ir import from_graphdef

    listed = json.loads((FIXTURES / "cases.json").read_text())["cases"]
    for entry in listed:
        if entry["group_size"] > 3:
            continue
        graph = from_graphdef(load_graphdef(str(FIXTURES / f"{entry['name']}.pb")))
        for node in graph.nodes:
            index = int(node.device.rsplit(":", 1)[1]) if node.device else 0
            node.device = device(index)
        feeds = dict(np.load(FIXTURES / f"{entry['name']}.feeds.npz"))
        want = np.load(FIXTURES / f"{entry['name']}.expected.npz")
        got = Session(graph, cluster=cluster3).run(entry["fetches"], feeds, timeout=STEP_TIMEOUT).values
        for name, value in zip(entry["fetches"], got):
            np.testing.assert_allclose(value, want[name], err_msg=f"{entry['name']} {name}",
                                       **tolerance(entry["dtype"], entry["group_size"]))


# --- failures --------------------------------------------------------------------------------------
def _fails(session: Session, fetches, feeds, pattern: str, within: float = 15.0, **run) -> str:
    started = time.monotonic()
    with pytest.raises(DftoolError, match=pattern) as caught:
        session.run(fetches, feeds, timeout=run.pop("timeout", STEP_TIMEOUT), **run)
    elapsed = time.monotonic() - started
    message = str(caught.value)
    assert "\n" not in message.strip() and "Traceback" not in message, message
    assert elapsed < within, f"took {elapsed:.1f} s to fail: {message}"
    return message


def _two(kind="reduce", **kw) -> Case:
    return Case(kind, (device(0), device(1)), group_key=7, instance_key=3, **kw)


def test_members_of_different_shapes_fail_naming_the_collective(cluster3):
    case = _two(shapes=((4,), (5,)))
    session = Session(cases_graph([case]), cluster=cluster3)
    feeds = {"x0": np.ones(4, np.float32), "x1": np.ones(5, np.float32)}
    message = _fails(session, case.fetch_names(), feeds, r"collective group 7 instance 3: the member on \S+ holds "
                                                         r"float32\[[45]\] but the one on \S+ holds float32\[[45]\]")
    assert "node 'member0' (CollectiveReduceV2)" in message or "node 'member1' (CollectiveReduceV2)" in message, message


def test_members_of_different_dtypes_fail_naming_the_collective(cluster3):
    case = _two(dtypes=("float32", "float64"))
    session = Session(cases_graph([case]), cluster=cluster3)
    feeds = {"x0": np.ones(4, np.float32), "x1": np.ones(4, np.float64)}
    _fails(session, case.fetch_names(), feeds, r"^collective group 7 instance 3: 'member0' on \S+task:0\S+ is a reduce of "
                                               r"float32 \(Add, Id\) but 'member1' on \S+task:1\S+ is a reduce of float64", within=5)


def test_a_group_size_that_is_not_the_member_count_is_refused_before_the_step(cluster3):
    case = _two(group_size=3)
    session = Session(cases_graph([case]), cluster=cluster3)
    feeds = {"x0": np.ones(4, np.float32), "x1": np.ones(4, np.float32)}
    _fails(session, case.fetch_names(), feeds, r"^collective group 7 has group_size 3, but its members run on 2 "
                                               r"device\(s\): \S+task:0\S+, \S+task:1\S+ \(node 'member0'\)", within=5)


def test_fetching_one_member_runs_the_whole_instance(cluster3):
    """Fetching member 0's output alone still runs member 1 (the step takes in every member of a
    needed instance, with what it needs): the full result; and member 1's unfed input is a clean
    error naming it, not a wait for a member that never comes."""
    case = _two()
    session = Session(cases_graph([case]), cluster=cluster3)
    feeds = {"x0": np.ones(4, np.float32), "x1": np.full(4, 2, np.float32)}
    np.testing.assert_array_equal(session.run(["out0"], feeds, timeout=STEP_TIMEOUT).values[0], np.full(4, 3, np.float32))
    _fails(session, ["out0"], {"x0": np.ones(4, np.float32)}, r"^missing feed for placeholder 'x1'", within=5)


def test_a_member_on_an_untaken_branch_fails_the_step_not_hangs(cluster3):
    """Member 1's input is the untaken side of a Switch: it is dead, so member 1 never runs."""
    case = _two()
    b = GraphBuilder()
    with b.device(device(1)):
        pred = b.placeholder("bool", [], name="pred")
        x1 = b.placeholder("float32", [4], name="x1_in")
        untaken = b.op("Switch", [x1, pred], name="switch")[0]   # output_false: dead when pred is true
    add_collective(b, case, inputs=[None, untaken])
    session = Session(b.graph, cluster=cluster3)
    feeds = {"x0": np.ones(4, np.float32), "x1_in": np.ones(4, np.float32), "pred": np.bool_(True)}
    _fails(session, ["out0", "out1"], feeds, r"node 'member[01]' \(CollectiveReduceV2\) failed .*collective group 7 "
                                             r"instance 3: the member on \S+task:1\S+ has a dead input \(a cond branch not "
                                             r"taken\) but the one on \S+task:0\S+ runs", within=10, allow_dead=True)
    # the other way round both members run
    feeds["pred"] = np.bool_(False)
    values = session.run(["out0", "out1"], feeds, timeout=STEP_TIMEOUT, allow_dead=True).values
    np.testing.assert_array_equal(values[0], np.full(4, 2, np.float32))


def _slow_member_graph(case: Case, slow: int):
    """`case`'s members with member `slow`'s input made by a while loop of `n` (fed) iterations on
    its own device: its peers wait in the collective for as long as the loop runs."""
    b = GraphBuilder()
    with b.device(case.devices[slow]):
        n = b.placeholder("int32", [], name="n")
        x = b.placeholder("float32", [4], name="slow_x")

        def body(i, v):
            return b.add(i, b.const(np.int32(1))), b.mul(v, b.const(np.float32(1)))
        _, late = b.while_loop(lambda i, v: b.less(i, n), body, [b.const(np.int32(0)), x], parallel_iterations=1)
    inputs = [None] * case.size
    inputs[slow] = late
    add_collective(b, case, inputs=inputs)
    return b.graph


def test_timeout_seconds_expiring_fails_naming_the_collective(cluster3):
    case = _two(timeout_seconds=1.0)
    session = Session(_slow_member_graph(case, slow=1), cluster=cluster3)
    feeds = {"x0": np.ones(4, np.float32), "slow_x": np.ones(4, np.float32), "n": np.int32(3)}
    # with a quick peer the step completes within the collective's timeout (and the signature is
    # registered on the workers: the next step's time is the collective's wait)
    values = session.run(case.fetch_names(), feeds, timeout=STEP_TIMEOUT).values
    np.testing.assert_array_equal(values[1], np.full(4, 2, np.float32))
    feeds["n"] = np.int32(10**8)
    _fails(session, case.fetch_names(), feeds, r"node 'member0' \(CollectiveReduceV2\) failed .*collective group 7 "
                                               r"instance 3 timed out after 1 s \(timeout_seconds\) waiting for "
                                               r"\S+task:1/device:CPU:0", within=1 + 4)
    # and the session goes on working
    feeds["n"] = np.int32(2)
    np.testing.assert_array_equal(session.run(case.fetch_names(), feeds, timeout=STEP_TIMEOUT).values[0],
                                  np.full(4, 2, np.float32))


@pytest.mark.parametrize("slow", [2, 1], ids=["victim-computing", "victim-in-the-collective"])
def test_a_worker_killed_while_its_peers_wait_in_the_collective(cluster3, slow):
    """worker:2 is killed mid-step: while it computes its member's input (its peers wait in the
    collective), or while it waits in the collective itself for worker:1's member."""
    case = Case("reduce", (device(0), device(1), device(2)), group_key=9, instance_key=slow)
    session = Session(_slow_member_graph(case, slow=slow), cluster=cluster3)
    feeds = {f"x{i}": np.ones(4, np.float32) for i in range(3) if i != slow}
    feeds["slow_x"] = np.ones(4, np.float32)
    assert session.run(case.fetch_names(), {**feeds, "n": np.int32(2)}, timeout=STEP_TIMEOUT).values[0][0] == 3
    victim = next(t for t in cluster3.tasks if t.task.index == 2)
    killer = threading.Timer(2.0, os.kill, (victim.pid, signal.SIGKILL))
    killer.start()
    try:
        message = _fails(session, case.fetch_names(), {**feeds, "n": np.int32(10**8)},
                         rf"task worker:2 .*pid {victim.pid}.* lost", within=2 + 10)
    finally:
        killer.cancel()
    assert f"collective group 9 instance {slow}" in message, message
    # the next step runs on a fresh worker:2
    assert session.run(case.fetch_names(), {**feeds, "n": np.int32(2)}, timeout=STEP_TIMEOUT).values[2][0] == 3


# --- through the CLI -------------------------------------------------------------------------------
def test_dftool_run_with_cluster_runs_collectives(join_spec, tmp_path):
    """`dftool run G --cluster SPEC`: the members on worker:0 and worker:1 give numpy's values."""
    pair = (device(1), device(0))
    cases = [Case("reduce", pair, "float64", (3, 2), merge="Add", final="Div", group_key=5, instance_key=1, prefix="r/"),
             Case("gather", pair, "int32", (2,), v1=True, group_key=5, instance_key=2, prefix="g/"),
             Case("all_to_all", pair, "float32", (4,), group_key=5, instance_key=3, prefix="a/")]
    rng = np.random.default_rng(5)
    values = {case.prefix: member_inputs(case, rng) for case in cases}
    (tmp_path / "g.pb").write_bytes(to_graphdef(cases_graph(cases)).SerializeToString())
    np.savez(tmp_path / "feeds.npz", **{k: v for case in cases for k, v in feeds_for(case, values[case.prefix]).items()})
    fetches = [name for case in cases for name in case.fetch_names()]
    run = Dftool("run", str(tmp_path / "g.pb"), "--feeds", str(tmp_path / "feeds.npz"), "--cluster", str(join_spec),
                 "--output", str(tmp_path / "out.npz"), *[arg for name in fetches for arg in ("--fetch", name)])
    try:
        code, _, _ = run.finish(timeout=120)
    finally:
        run.kill()
    assert code == 0, run.lines
    got = np.load(tmp_path / "out.npz")
    check_cases(cases, values, {name: got[name] for name in fetches})

