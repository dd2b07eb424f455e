"""Unfrozen TensorFlow graphs (tests/fixtures/tf_stateful, tools/tf_fixtures/stateful.py): the
recorded session runs (initializer target, training steps, reads) replayed in order in one dftool
Session reproduce TensorFlow's values at every run, also after `optimize` (every fetch and target
protected) and on the strict GPU test double."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphtool import graph_io
from graphtool.exec.session import Session
from graphtool.exec.sim_gpu import SimulatedGPUDevice
from graphtool.ir import from_graphdef
from graphtool.opt.base import PassContext
from graphtool.opt.manager import optimize

from .test_tf_fixtures_run import assert_matches

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tf_stateful"
CASES = sorted(path.parent.name for path in FIXTURES.glob("*/case.json"))


def _spec(case: str) -> dict:
    return json.loads((FIXTURES / case / "case.json").read_text())


def _graph(case: str):
    return from_graphdef(graph_io.load_graphdef(str(FIXTURES / case / "graph.pb")), case)


def _replay(case: str, graph, **session_args) -> None:
    spec = _spec(case)
    feeds = dict(np.load(FIXTURES / case / "feeds.npz"))
    session = Session(graph, **session_args)
    rtol, atol = max(spec["rtol"], 1e-4), max(spec["atol"], 1e-5)
    for run in spec["runs"]:
        result = session.run(run["fetches"], feeds, targets=run["targets"], timeout=60)
        if run["fetches"]:
            expected = np.load(FIXTURES / case / run["expected"])
            for name, value in zip(run["fetches"], result.values):
                assert_matches(f"{run['name']}: {name}", np.asarray(value), expected[name], rtol, atol)


def test_fixtures_exist():
    assert CASES, "run tools/make_tf_fixtures.py --only stateful_resource_embedding (needs tensorflow)"


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", CASES)
def test_session_runs_match_tensorflow(case, threads):
    _replay(case, _graph(case), threads=threads)


@pytest.mark.parametrize("case", CASES)
def test_session_runs_match_tensorflow_after_optimize(case):
    graph = _graph(case)
    runs = _spec(case)["runs"]
    fetches = sorted({name for run in runs for name in run["fetches"]})
    targets = {target for run in runs for target in run["targets"]}
    optimize(graph, PassContext(fetches=[graph.tensor(name) for name in fetches], keep=targets))
    graph.verify()
    _replay(case, graph, threads=1)


@pytest.mark.parametrize("case", CASES)
def test_session_runs_match_tensorflow_on_strict_gpu_double(case):
    _replay(case, _graph(case), device=SimulatedGPUDevice(strict=True), threads=1)


@pytest.mark.parametrize("case", CASES)
def test_shape_inference_agrees_with_tensorflow(case):
    from graphtool.attrs import decode
    from graphtool.shape_inference import infer_shapes
    from tests.test_tf_fixtures import _more_or_equally_specific

    graph = _graph(case)
    result = infer_shapes(graph)
    assert not result.errors, list(result.errors.values())[:5]
    disagreements = []
    for node in graph.nodes:
        if "_output_shapes" not in node.attrs:
            continue
        for index, theirs in enumerate(decode(node.attrs["_output_shapes"])):
            ours = result.shape(node.output(index))
            if not ours.is_compatible_with(theirs) or not _more_or_equally_specific(ours, theirs):
                disagreements.append(f"{node.name}:{index} ({node.op}) ours {ours} tensorflow {theirs}")
    assert not disagreements, "; ".join(disagreements[:10])
