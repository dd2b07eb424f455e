"""random_placement(): every draw honours the placer's constraints (requested devices, colocation
groups, kernels), on a cluster's devices too; different seeds give different placements, one seed
the same; and a random placement on cpu:0..2, partitioned and run by the local multi-device runtime,
gives exactly the values of a one-device run (loops, TensorArrays, variables included)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphtool import graph_io
from graphtool.errors import InvalidGraphError
from graphtool.exec.session import Session
from graphtool.ir import Graph, from_graphdef
from graphtool.partition import partition
from graphtool.placement import random_placement
from graphtool.placement.colocation import colocation_groups
from graphtool.placement.constraints import device_type, op_runs_on
from graphtool.placement.device_names import canonical_device_name, matches

from .helpers import REPO_ROOT, mlp_graph
from .partition_support import assert_identical, fixture_feeds, fixture_spec, load_fixture

STATEFUL = Path(__file__).resolve().parent / "fixtures" / "tf_stateful"
SAMPLES = REPO_ROOT / "sample_graphs"
LOCAL = ["cpu:0", "cpu:1", "cpu:2"]
CLUSTER = ["worker:0/cpu:0", "worker:1/cpu:0", "ps:0/cpu:0"]
PS = canonical_device_name("ps:0/cpu:0")
VARIABLE_OPS = ("VariableV2", "VarHandleOp")


def _sample(name: str) -> tuple[Graph, dict, list[str]]:
    graph = from_graphdef(graph_io.load_graphdef(str(SAMPLES / f"{name}.pb")), name)
    return graph, dict(np.load(SAMPLES / f"{name}.feeds.npz")), Session(graph).default_fetches()


def _stateful(name: str) -> Graph:
    return from_graphdef(graph_io.load_graphdef(str(STATEFUL / name / "graph.pb")), name)


def load_case(case: str) -> tuple[Graph, dict, list[str]]:
    kind, name = case.split(":")
    if kind == "sample":
        return _sample(name)
    return load_fixture(name), fixture_feeds(name), fixture_spec(name)["fetches"]


def class_graph() -> Graph:
    """mlp_graph with a `_class loc:@` colocation between two nodes that share no edge."""
    graph = mlp_graph()
    graph.node("dense/relu").set_attr("_class", ["loc:@logits"], "list(string)")
    return graph


def pin_variables_to_ps(graph: Graph) -> list[str]:
    """Every variable asks for /job:ps (the usual parameter-server layout); returns their names."""
    names = [n.name for n in graph.nodes if n.op in VARIABLE_OPS]
    for name in names:
        graph.node(name).device = "/job:ps"
    return names


# --- constraints ------------------------------------------------------------------------------------

def _graphs_with_constraints() -> dict[str, tuple[Graph, dict[str, str]]]:
    """Graphs with loops, TensorArrays, variables and `_class`, with no devices of their own but
    the requests added here (node -> requested device)."""
    graphs = {"tensor_array_ops": load_fixture("tensor_array_ops"), "nested_while": load_fixture("nested_while"),
              "train_loop": _sample("train_loop")[0], "ref_variables": _stateful("stateful_ref_embedding"),
              "resource_variables": _stateful("stateful_resource_embedding"), "class": class_graph()}
    cases = {}
    for name, graph in graphs.items():
        for node in graph.nodes:
            node.device = ""
        requests = {v: "/job:ps" for v in pin_variables_to_ps(graph)}
        loop_body = next((n for n in graph.nodes if n.op == "Enter"), None)
        if loop_body is not None:   # a loop's Enter on one worker task
            loop_body.device = requests[loop_body.name] = "/job:worker/task:1"
        if name == "class":
            graph.node("logits").device = requests["logits"] = "/job:worker/replica:0/task:0/device:CPU:0"
        cases[name] = (graph, requests)
    return cases


CONSTRAINED = _graphs_with_constraints()


@pytest.mark.parametrize("name", sorted(CONSTRAINED))
def test_every_draw_honours_requests_colocation_and_kernels(name):
    original, requests = CONSTRAINED[name]
    devices = [canonical_device_name(d) for d in CLUSTER]
    placements = set()
    for seed in range(25):
        graph = original.copy()
        report = random_placement(graph, CLUSTER, seed)
        assert report.softened == [], f"seed {seed}: {report.softened}"
        for node in graph.nodes:
            assert node.device in devices, (seed, node.name, node.device)
            assert op_runs_on(node.op, device_type(node.device)), (seed, node.name)
        for node_name, request in requests.items():
            assert matches(request, graph.node(node_name).device), (seed, node_name, graph.node(node_name).device)
        for group in colocation_groups(graph).groups:
            assert len({m.device for m in group.members}) == 1, (seed, [m.name for m in group.members])
        assert report.assignment == {n.name: n.device for n in graph.nodes}
        placements.add(tuple(sorted(report.assignment.items())))
    assert len(placements) > 1, "25 seeds drew one placement: nothing is random"


def test_variables_asking_for_ps_are_there_with_their_updates():
    graph = _stateful("stateful_ref_embedding")
    names = pin_variables_to_ps(graph)
    assert names
    random_placement(graph, CLUSTER, seed=1)
    groups = colocation_groups(graph)
    for name in names:
        assert {m.device for m in groups.group_of(graph.node(name)).members} == {PS}


def test_a_seed_gives_one_placement_and_seeds_differ():
    def drawn(seed: int) -> dict[str, str]:
        graph = load_fixture("dynamic_lstm")
        return random_placement(graph, LOCAL, seed).assignment

    assert drawn(7) == drawn(7)
    assert len({tuple(sorted(drawn(seed).items())) for seed in range(5)}) > 1


def test_the_report_says_which_nodes_were_drawn():
    graph = class_graph()
    graph.node("logits").device = "/device:CPU:1"
    report = random_placement(graph, LOCAL, seed=0)
    reasons = {n.name: n.reason for n in report.nodes}
    # dense/relu leads its group (it comes first), which logits' request pins to CPU:1.
    assert reasons["dense/relu"] == "constraint" and reasons["logits"] == "colocation"
    assert "random" in reasons.values()
    drawn = next(n for n in report.nodes if n.reason == "random")
    assert drawn.detail == "drawn at random (seed 0) among 3 allowed devices"
    assert report.to_json()["schema"] == "dftool.place/2" and report.total_cost > 0


def test_constraints_that_cannot_hold_fail_as_in_place():
    graph = mlp_graph()
    graph.node("logits").device = "/job:chief"
    with pytest.raises(InvalidGraphError, match="node 'logits' .* requests device '/job:chief'"):
        random_placement(graph, CLUSTER, seed=0, soft_placement=False)
    report = random_placement(graph, CLUSTER, seed=0)   # soft placement moves it, and says so
    assert [s.node for s in report.softened] == ["logits"]


# --- running ----------------------------------------------------------------------------------------

RUN_CASES = ["fixture:dynamic_lstm", "fixture:tensor_array_ops", "fixture:nested_while", "fixture:cond_in_while",
             "fixture:two_device", "fixture:gradref_while", "sample:train_loop", "sample:model_parallel_rnn",
             "sample:rnn"]


def _one_device_values(graph: Graph, feeds: dict, fetches: list[str]) -> list:
    copy = graph.copy()
    for node in copy.nodes:
        node.device = ""
    return Session(copy, threads=1).run(fetches, feeds, timeout=60, allow_dead=True).values


def _pin_a_node(graph: Graph) -> tuple[str, str] | None:
    """A user constraint for the run tests: the first loop Enter (else MatMul) on CPU:1."""
    node = next((n for n in graph.nodes if n.op == "Enter"), None) or next(
        (n for n in graph.nodes if n.op == "MatMul"), None)
    if node is None:
        return None
    node.device = "/device:CPU:1"
    return node.name, canonical_device_name("cpu:1")


@pytest.mark.parametrize("case", RUN_CASES)
def test_random_placements_run_to_the_one_device_values(case):
    graph, feeds, fetches = load_case(case)
    expected = _one_device_values(graph, feeds, fetches)
    pinned = _pin_a_node(graph)
    for seed in range(3):
        placed = graph.copy()
        random_placement(placed, LOCAL, seed)
        if pinned is not None:
            assert placed.node(pinned[0]).device == pinned[1]
        partition(placed)
        got = Session(placed, threads=1).run(fetches, feeds, timeout=30, allow_dead=True).values
        for name, want, value in zip(fetches, expected, got):
            assert (value is None) == (want is None), (case, seed, name)
        assert_identical([w for w in expected if w is not None], [v for v in got if v is not None],
                         [f for f, w in zip(fetches, expected) if w is not None])


@pytest.mark.parametrize("case", sorted(p.name for p in STATEFUL.glob("*") if (p / "case.json").exists()))
def test_random_placements_of_variables_replay_the_session_runs(case):
    """Variables (reference and resource) updated over several runs of one session: the same
    values at every run whether the graph runs on one device or randomly over three."""
    spec = json.loads((STATEFUL / case / "case.json").read_text())
    feeds = dict(np.load(STATEFUL / case / "feeds.npz"))

    def replay(graph: Graph) -> list:
        session = Session(graph, threads=1)
        return [session.run(run["fetches"], feeds, targets=run["targets"], timeout=60).values
                for run in spec["runs"]]

    expected = replay(_stateful(case))
    for seed in range(2):
        placed = _stateful(case)
        random_placement(placed, LOCAL, seed)
        partition(placed)
        for run, want, got in zip(spec["runs"], expected, replay(placed)):
            assert_identical(want, got, run["fetches"])


@pytest.mark.slow
@pytest.mark.parametrize("case", RUN_CASES)
def test_many_random_placements_run_to_the_one_device_values(case):
    graph, feeds, fetches = load_case(case)
    expected = _one_device_values(graph, feeds, fetches)
    for seed in range(3, 23):
        placed = graph.copy()
        random_placement(placed, LOCAL, seed)
        partition(placed)
        got = Session(placed, threads=1).run(fetches, feeds, timeout=30, allow_dead=True).values
        assert_identical([w for w in expected if w is not None], [v for v in got if v is not None],
                         [f for f, w in zip(fetches, expected) if w is not None])
