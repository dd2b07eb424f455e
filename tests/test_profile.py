"""Profiling from step statistics: the critical path (on statistics written here, with known
answers, and on real runs), summaries over steps, the versioned report and the measured cost
model that `place` reads."""
import json

import pytest

from graphtool.exec.session import Session
from graphtool.exec.step_stats import DeviceStats, NodeExecution, StepStats, TensorInfo, transfers
from graphtool.placement import place
from graphtool.placement.cost_model import CostModel
from graphtool.profiling import (PROFILE_SCHEMA, ProfileRun, Spread, cost_model, critical_path, median_step,
                                 profile_report, profile_steps, summarize)
from tests.exec.test_step_stats import mlp, sample

CPU0, CPU1 = "/job:localhost/replica:0/task:0/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:1"


def node(name, start, end, inputs=(), device=CPU0, **fields):
    return NodeExecution(name, fields.pop("op", "Op"), device, start, end, inputs=tuple(inputs), **fields)


def step(*executions, wall=None, origin=0) -> StepStats:
    stats = StepStats(origin_ns=origin)
    for execution in executions:
        stats.device(execution.device).absorb(DeviceStats(execution.device, [execution]))
    stats.wall_ns = wall if wall is not None else max(e.end_ns for e in executions)
    return stats


# --- the critical path on statistics with known answers ------------------------------------------

def test_the_critical_path_follows_the_longest_chain_of_a_dag():
    stats = step(node("a", 0, 10), node("b", 10, 30, ["a"]), node("c", 12, 20, ["a:1"]),
                 node("e", 0, 5), node("d", 40, 50, ["b", "^c"]), wall=60)
    path = critical_path(stats)
    assert path.names == ["a", "b", "d"]
    assert path.length_ns == 10 + 20 + 10 and path.wall_ns == 60
    assert path.fraction_of_step == pytest.approx(40 / 60)


def test_the_longest_chain_wins_over_the_input_that_arrived_last():
    # B2 finished last (it waited for a thread), but A is the work that bounds the step.
    stats = step(node("A", 0, 50), node("B1", 0, 5), node("B2", 52, 60, ["B1"]),
                 node("join", 60, 70, ["A", "B2"]))
    path = critical_path(stats)
    assert path.names == ["A", "join"] and path.length_ns == 60
    assert [s.contribution_ns for s in path.steps] == [50, 10]


def test_equal_chains_prefer_the_input_whose_producer_finished_last():
    stats = step(node("p", 0, 10), node("q", 5, 15), node("r", 20, 25, ["p", "q"]))
    assert critical_path(stats).names == ["q", "r"]


def test_loop_iterations_chain_through_next_iteration_and_merge():
    loop = dict(frame="loop", frame_id=1)
    stats = step(
        node("enter", 0, 1, ["init"]), node("init", 0, 0),
        node("merge", 1, 2, ["enter", "next"], iteration=0, **loop),
        node("body", 2, 10, ["merge"], iteration=0, **loop),
        node("next", 10, 11, ["body"], iteration=0, **loop),
        node("merge", 11, 12, ["enter", "next"], iteration=1, **loop),
        node("body", 12, 20, ["merge"], iteration=1, **loop),
        node("next", 20, 21, ["body"], iteration=1, **loop),
        node("merge", 21, 22, ["enter", "next"], iteration=2, **loop),
        node("exit", 22, 23, ["merge"], iteration=2, **loop))
    path = critical_path(stats)
    assert [(s.execution.name, s.execution.iteration) for s in path.steps] == [
        ("init", 0), ("enter", 0), ("merge", 0), ("body", 0), ("next", 0), ("merge", 1), ("body", 1),
        ("next", 1), ("merge", 2), ("exit", 2)]
    assert path.length_ns == 23


def test_a_recv_counts_only_from_when_its_value_was_sent():
    key = (CPU0, CPU1, "edge_x", ())
    stats = step(node("x", 0, 10), node("send", 10, 11, ["x"], op="_Send", rendezvous=key),
                 node("recv", 0, 15, [], device=CPU1, op="_Recv", rendezvous=key),
                 node("y", 15, 25, ["recv"], device=CPU1))
    path = critical_path(stats)
    assert path.names == ["x", "send", "recv", "y"]
    assert [s.contribution_ns for s in path.steps] == [10, 1, 4, 10]
    assert path.length_ns == 25 == stats.wall_ns


def test_a_recv_waiting_before_its_send_began_does_not_start_a_chain():
    # On a cluster the receiving task can begin the step (and wait) before the sending task has
    # begun: that wait is not the Recv's work; the chain that produced the value is the path.
    key = (CPU0, CPU1, "edge_x", ())
    stats = step(node("x", 5, 10), node("send", 10, 11, ["x"], op="_Send", rendezvous=key),
                 node("recv", 0, 15, [], device=CPU1, op="_Recv", rendezvous=key),
                 node("y", 15, 25, ["recv"], device=CPU1))
    path = critical_path(stats)
    assert path.names == ["x", "send", "recv", "y"]
    assert [s.contribution_ns for s in path.steps] == [5, 1, 4, 10]


def test_an_empty_step_has_an_empty_critical_path():
    path = critical_path(StepStats(origin_ns=0))
    assert path.steps == [] and path.length_ns == 0 and path.fraction_of_step == 0.0


# --- the critical path of real runs ---------------------------------------------------------------

def assert_consistent(stats: StepStats) -> None:
    path = critical_path(stats)
    assert path.steps, "a step that ran nodes has a critical path"
    # Any execution alone is a chain; a _Recv's alone counts from when its _Send began.
    sent_at = {id(t.recv): t.send.start_ns for t in transfers(stats)}
    longest = max(n.end_ns - max(n.start_ns, sent_at.get(id(n), n.start_ns)) for n in stats.nodes)
    assert longest <= path.length_ns <= stats.wall_ns
    for before, after in zip(path.steps, path.steps[1:]):
        fed = before.execution.name in after.execution.input_node_names() or (
            after.execution.op == "_Recv" and before.execution.rendezvous == after.execution.rendezvous)
        assert fed, (before.execution.name, after.execution.name)
        assert before.execution.end_ns <= after.execution.end_ns


@pytest.mark.parametrize("name", ["mlp", "rnn", "multi_device"])
def test_the_critical_path_of_a_real_run_is_consistent_with_the_step(name):
    graph, feeds = sample(name)
    session = Session(graph, threads=2)
    fetches = session.default_fetches()
    session.run(fetches, feeds)
    assert_consistent(session.run(fetches, feeds, trace=True).step_stats)


# --- summaries, report, cost model -----------------------------------------------------------------

def two_steps():
    first = step(node("a", 0, 10, op="MatMul", allocated_bytes=400), node("b", 10, 20, ["a"], op="Relu"),
                 node("c", 20, 60, ["b"], op="MatMul", allocated_bytes=100))
    second = step(node("a", 0, 30, op="MatMul", allocated_bytes=400), node("b", 30, 40, ["a"], op="Relu"),
                  node("c", 40, 60, ["b"], op="MatMul", allocated_bytes=100))
    return [first, second]


def test_a_summary_averages_per_step_and_ranks_ops_and_nodes():
    summary = summarize(two_steps())
    assert [(r.op, r.nodes, r.calls, r.time_ns) for r in summary.ops] == [("MatMul", 2, 2, 50), ("Relu", 1, 1, 10)]
    assert [r.percent for r in summary.ops] == pytest.approx([100 * 50 / 60, 100 * 10 / 60])
    assert [r.cumulative_percent for r in summary.ops] == pytest.approx([100 * 50 / 60, 100])
    assert [r.name for r in summary.nodes] == ["c", "a", "b"]
    assert [r.name for r in summary.top_nodes_by_memory(2)] == ["a", "c"]
    assert summary.step_times.all_ns == [60, 60] and summary.nodes_executed == 3


def test_the_median_step_stands_for_the_run():
    steps = [step(node("a", 0, wall)) for wall in (50, 10, 30)]
    assert median_step(steps).wall_ns == 30
    assert median_step([]) is None


def test_transfers_are_summed_per_edge_and_the_edges_between_tasks_are_the_network():
    worker = "/job:worker/replica:0/task:{}/device:CPU:0".format
    loop_key = [(worker(0), worker(1), "edge_h", (("loop", i),)) for i in range(2)]
    local_key = (CPU0, CPU1, "edge_x", ())
    four = (TensorInfo("float32", (4,), 16),)

    def one_step(delay):
        # A loop's value crosses tasks twice (iterations 0 and 1); x crosses two local devices once.
        return step(node("h", 0, 10, device=worker(0)),
                    node("send_h", 10, 11, ["h"], device=worker(0), op="_Send", rendezvous=loop_key[0]),
                    node("recv_h", 0, 20 + delay, device=worker(1), op="_Recv", outputs=four, rendezvous=loop_key[0]),
                    node("send_h", 30, 31, ["h"], device=worker(0), op="_Send", rendezvous=loop_key[1]),
                    node("recv_h", 25, 40 + delay, device=worker(1), op="_Recv", outputs=four, rendezvous=loop_key[1]),
                    node("x", 0, 1), node("send_x", 1, 2, ["x:1"], op="_Send", rendezvous=local_key),
                    node("recv_x", 0, 5, device=CPU1, op="_Recv", outputs=four, rendezvous=local_key))
    summary = summarize([one_step(0), one_step(4)])
    edges = [(e.tensor, e.across_tasks, e.count, e.bytes, e.time_ns, e.latency_ns) for e in summary.edges]
    # Per step: (20 - 10) + (40 - 30) ns, then (24 - 10) + (44 - 30): 24 on average, 12 per transfer.
    assert edges == [("h:0", True, 2, 32, 24, 12), ("x:1", False, 1, 16, 4, 4)]
    assert (summary.network.count, summary.network.bytes, summary.network.time_ns) == (2, 32, 24)
    report = profile_report(summary, graph="g", repeat=2, warmup=0)["transfers"]
    assert report["edges"][0] == {"tensor": "h:0", "from": worker(0), "to": worker(1), "across_tasks": True,
                                  "count": 2, "bytes": 32, "time_ms": 24e-6, "latency_ms": 12e-6}
    assert report["network"] == {"count": 2, "bytes": 32, "time_ms": 24e-6}


def test_profiling_a_session_gives_a_versioned_json_report():
    graph, feeds = sample("while_loop")
    session = Session(graph, threads=2)
    calls = []
    steps = profile_steps(session, session.default_fetches(), feeds, repeat=3, warmup=2,
                          on_step=lambda: calls.append(1))
    assert len(steps) == 3 and len(calls) == 5
    document = profile_report(summarize(steps), graph="while_loop.pb", repeat=3, warmup=2, top=3)
    assert json.loads(json.dumps(document)) == document
    assert document["schema"] == PROFILE_SCHEMA and document["repeat"] == 3
    assert document["loop_iterations"] == {"double/while_context": 3, "accumulate/while_context": 6}
    assert len(document["top_by_time"]) == len(document["top_by_memory"]) == 3
    assert document["nodes_executed"] == steps.steps[0].nodes_executed
    assert sum(o["calls"] for o in document["ops"]) == document["nodes_executed"]
    path = document["critical_path"]
    assert 0 < path["length_ms"] <= path["step_time_ms"] and path["nodes"]
    (device,) = document["devices"]
    assert document["memory"]["peak_bytes"][device] > 0


def test_the_measured_cost_model_round_trips_into_place(tmp_path):
    graph, feeds = mlp()
    session = Session(graph, threads=1)
    summary = summarize(profile_steps(session, ["probs"], feeds, repeat=3, warmup=1))
    costs = cost_model(summary)
    assert costs["schema"] == "dftool.cost_model/1"
    assert set(costs["nodes"]) == {n.name for n in graph.nodes}
    assert costs["ops"]["MatMul"]["CPU"] == pytest.approx((costs["nodes"]["mm1"]["CPU"] + costs["nodes"]["mm2"]["CPU"]) / 2)
    path = tmp_path / "costs.json"
    path.write_text(json.dumps(costs))
    model = CostModel.load(str(path))
    fresh, _ = mlp()
    report = place(fresh, ["cpu:0"], cost_model=model)
    assert report.cost_model == str(path)
    assert report.device_load[CPU0] == pytest.approx(sum(c["CPU"] for c in costs["nodes"].values()))
    matmul = fresh.get("mm1")
    assert model.measured(matmul, "CPU") == costs["nodes"]["mm1"]["CPU"] > 0


# --- medians, spread, first run, time box ---------------------------------------------------------

def test_a_spread_is_the_median_the_quartiles_and_the_extremes():
    spread = Spread.of([40.0, 10.0, 20.0, 30.0, 1000.0])
    assert (spread.median_ns, spread.p25_ns, spread.p75_ns, spread.min_ns, spread.max_ns) == (30, 20, 40, 10, 1000)
    assert spread.relative == pytest.approx((40 - 20) / 2 / 30)   # the one slow step does not count
    assert Spread.of([]).relative == 0.0 and Spread.of([5.0]).median_ns == 5.0


def test_per_op_and_per_node_times_are_medians_over_the_steps():
    # "a" is slow in one step of three (a busy machine); "b" runs in two steps only (a cond branch).
    steps = [step(node("a", 0, 10, op="MatMul"), node("b", 10, 14, ["a"], op="Relu")),
             step(node("a", 0, 100, op="MatMul")),
             step(node("a", 0, 12, op="MatMul"), node("b", 12, 18, ["a"], op="Relu"))]
    summary = summarize(steps)
    a, b = (next(r for r in summary.nodes if r.name == name) for name in "ab")
    assert (a.spread.median_ns, a.spread.min_ns, a.spread.max_ns) == (12, 10, 100)
    assert a.time_ns == pytest.approx(122 / 3)                      # the mean stays in avg_ms
    assert (b.spread.median_ns, b.spread.min_ns) == (4, 0)           # 0 ns in the step that skipped it
    report = profile_report(summary, graph="g", repeat=3, warmup=0)
    matmul = next(o for o in report["ops"] if o["op"] == "MatMul")
    assert (matmul["median_ms"], matmul["min_ms"], matmul["max_ms"]) == (12e-6, 10e-6, 100e-6)
    assert matmul["spread_percent"] == pytest.approx(100 * (56 - 11) / 2 / 12, abs=0.01)
    assert report["step_time_ms"]["median"] == 18e-6


def test_steps_varying_more_than_twice_are_warned_about():
    steady = [step(node("a", 0, t)) for t in (10, 12, 19)]
    assert profile_report(summarize(steady), graph="g", repeat=3, warmup=2)["warnings"] == []
    noisy = ProfileRun(steps=[step(node("a", 0, t)) for t in (10, 12, 25)], first_run_ns=90, warmup_ns=[])
    (warning, first_run) = profile_report(summarize(noisy), graph="g", repeat=3, warmup=0)["warnings"]
    assert warning.startswith("step times vary 2.5x (min 0.000 ms, max 0.000 ms)")
    assert first_run.startswith("--warmup 0: the first measured step includes the first run")


def test_the_first_run_is_timed_apart_and_max_time_stops_measuring():
    graph, feeds = mlp()
    session = Session(graph, threads=1)
    run = profile_steps(session, ["probs"], feeds, repeat=50, warmup=2)
    assert len(run) == 50 and run.stopped_by == "repeat" and len(run.warmup_ns) == 2
    assert run.first_run_ns == run.warmup_ns[0] > 0
    fresh = Session(mlp()[0], threads=1)
    boxed = profile_steps(fresh, ["probs"], feeds, repeat=50, warmup=1, max_time=1e-9)
    assert len(boxed) == 1 and boxed.stopped_by == "max_time"   # at least one measured step runs
    document = profile_report(summarize(boxed), graph="mlp", repeat=len(boxed), warmup=1)
    assert document["stopped_by"] == "max_time" and document["first_run_ms"] == pytest.approx(boxed.first_run_ns / 1e6)
    # Building the plan makes the first run the slowest by far.
    assert document["first_run_ms"] > document["step_time_ms"]["max"]
