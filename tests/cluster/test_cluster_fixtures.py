"""Acceptance: every TF fixture and sample graph, placed across the three tasks of `local:3` by the
cost model and at random (constraints honoured), gives exactly the values of a local run."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphtool import graph_io
from graphtool.exec.session import Session
from graphtool.ir import from_graphdef
from graphtool.ir.queries import graph_outputs
from graphtool.placement.colocation import colocation_groups

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

TESTS = Path(__file__).resolve().parent.parent
FIXTURES = TESTS / "fixtures"
SAMPLES = TESTS.parent / "sample_graphs"
SIMPLE_FAMILIES = ("tf", "tf2", "functional")


def _cases(family: str) -> list[str]:
    return sorted(p.parent.name for p in (FIXTURES / family).glob("*/case.json"))


def _load(path: Path, name: str):
    return from_graphdef(graph_io.load_graphdef(str(path)), name)


def _random_placement(graph, devices: list[str], seed: int) -> None:
    """Each colocation group (reference/resource edges, loop plumbing, TensorArrays) on one
    random task."""
    rng = np.random.default_rng(seed)
    for group in colocation_groups(graph).groups:
        device = devices[rng.integers(len(devices))]
        for node in group.members:
            node.device = device


def _assert_identical(expected: list, actual: list, names: list[str]) -> None:
    for name, want, got in zip(names, expected, actual):
        if want is None or got is None:
            assert want is None and got is None, name
            continue
        want, got = np.asarray(want), np.asarray(got)
        assert got.dtype == want.dtype and got.shape == want.shape, name
        if want.dtype == object:
            assert want.tolist() == got.tolist(), name
        else:
            np.testing.assert_array_equal(got, want, err_msg=name)


def _run_both_ways(cluster, graph_factory, run, seed: int) -> None:
    """`run(session)` -> values, locally and on the cluster (cost model, then random placement)."""
    expected = run(Session(graph_factory()))
    on_cluster = run(Session(graph_factory(), cluster=cluster))
    _assert_identical(expected, on_cluster, [str(i) for i in range(len(expected))])
    shuffled = graph_factory()
    _random_placement(shuffled, cluster.device_names, seed)
    _assert_identical(expected, run(Session(shuffled, cluster=cluster)), [str(i) for i in range(len(expected))])


@pytest.mark.parametrize("family,case", [(f, c) for f in SIMPLE_FAMILIES for c in _cases(f)])
def test_fixture_on_three_tasks_matches_a_local_run(cluster3, family, case):
    spec = json.loads((FIXTURES / family / case / "case.json").read_text())
    feeds = dict(np.load(FIXTURES / family / case / "feeds.npz"))
    fetches = spec["fetches"]

    def run(session):
        return session.run(fetches, feeds, timeout=120).values

    _run_both_ways(cluster3, lambda: _load(FIXTURES / family / case / "graph.pb", case), run, sum(map(ord, case)))


@pytest.mark.parametrize("case", _cases("training"))
def test_training_fixture_on_three_tasks_matches_a_local_run(cluster3, case):
    """Variables live on the workers across the runs of one session: init, train steps, read."""
    spec = json.loads((FIXTURES / "training" / case / "case.json").read_text())

    def run(session):
        session.run([], {}, targets=[spec["init"]], timeout=120)
        for _ in range(spec["steps"]):
            session.run([], {}, targets=[spec["train"]], timeout=120)
        return session.run(spec["fetches"], {}, timeout=120).values

    _run_both_ways(cluster3, lambda: _load(FIXTURES / "training" / case / "graph.pb", case), run, sum(map(ord, case)))


@pytest.mark.parametrize("name", sorted(p.stem for p in SAMPLES.glob("*.pb")))
def test_sample_graph_on_three_tasks_matches_a_local_run(cluster3, name):
    feeds = dict(np.load(SAMPLES / f"{name}.feeds.npz"))
    graph = _load(SAMPLES / f"{name}.pb", name)
    fetches = [ref.name for node in graph_outputs(graph) for ref in node.outputs]

    def run(session):
        return session.run(fetches, feeds, timeout=120).values

    _run_both_ways(cluster3, lambda: _load(SAMPLES / f"{name}.pb", name), run, sum(map(ord, name)))


def _saved_model_cases() -> list[tuple[str, str]]:
    root = FIXTURES / "saved_models"
    return sorted((model.name, signature.name) for model in root.iterdir() if model.is_dir()
                  for signature in model.iterdir() if (signature / "feeds.npz").exists())


@pytest.mark.parametrize("model,signature", _saved_model_cases())
def test_saved_model_on_three_tasks_matches_a_local_run(cluster3, model, signature):
    from graphtool.loader import load_graph

    directory = FIXTURES / "saved_models" / model
    feeds = dict(np.load(directory / signature / "feeds.npz"))

    def run(session):
        return session.run(session.default_fetches(), feeds, timeout=120).values

    _run_both_ways(cluster3, lambda: load_graph(str(directory / "model"), signature=signature), run,
                   sum(map(ord, model + signature)))


@pytest.mark.parametrize("case", _cases("tf_stateful"))
def test_stateful_fixture_on_three_tasks_matches_a_local_run(cluster3, case):
    """A variable's state across the runs of one session (initializer, updates, reads), each run
    a different signature: they all find the variable on the task it was placed on."""
    spec = json.loads((FIXTURES / "tf_stateful" / case / "case.json").read_text())
    feeds = dict(np.load(FIXTURES / "tf_stateful" / case / "feeds.npz"))

    def run(session):
        values = []
        for step in spec["runs"]:
            values += session.run(step["fetches"], feeds, targets=step["targets"], timeout=120).values
        return values

    _run_both_ways(cluster3, lambda: _load(FIXTURES / "tf_stateful" / case / "graph.pb", case), run, sum(map(ord, case)))
