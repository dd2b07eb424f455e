"""With the JIT on, every TensorFlow fixture and sample graph gives what it gives without: the
outputs TensorFlow recorded (float32 at rtol 1e-4 unless a case documents looser tolerances) for
the fixtures, the interpreter's outputs for the sample graphs.

CANNOT_PASS lists the runs that cannot, with the reason; it is checked too (a listed run that
starts passing fails here, so the list stays true).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax")

from graphtool import graph_io  # noqa: E402
from graphtool.exec.session import Session  # noqa: E402
from graphtool.ir import from_graphdef  # noqa: E402
from tests.exec.test_tf_fixtures_run import assert_matches  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
SAMPLES = ROOT / "sample_graphs"

# run id -> why it cannot match with --jit (empty: every run passes).
CANNOT_PASS: dict[str, str] = {}
# run id -> why one of its clusters cannot compile and runs interpreted (results still match).
_GROWING_LOOP = ("a while loop whose carried tensor grows every iteration (shape invariant [None]): "
                 "lax.while_loop needs fixed shapes, so that cluster runs in the interpreter")
INTERPRETED_CLUSTERS: dict[str, str] = {
    "tf/while_loop": _GROWING_LOOP,
    "tf/while_loop-zero_iterations": _GROWING_LOOP,
    "tf/while_loop-twelve": _GROWING_LOOP,
}


def _load(path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as archive:
        return {key: archive[key] for key in archive.files}


def _tf_runs():
    for case_file in sorted((FIXTURES / "tf").glob("*/case.json")):
        case = json.loads(case_file.read_text())
        folder = case_file.parent
        runs = [("", "feeds.npz", "expected.npz")]
        runs += [(f"-{e['name']}", e["feeds"], e["expected"]) for e in case.get("extra_runs", [])]
        for suffix, feeds, expected in runs:
            yield _param(f"tf/{case['name']}{suffix}", folder, case["fetches"], feeds, expected,
                         case.get("rtol", 0), case.get("atol", 0))


def _tf2_runs():
    for case_file in sorted((FIXTURES / "tf2").glob("*/case.json")):
        case = json.loads(case_file.read_text())
        yield _param(f"tf2/{case['name']}", case_file.parent, case["fetches"], "feeds.npz", "expected.npz",
                     case.get("rtol", 0), case.get("atol", 0), slow=case.get("slow", False))


def _functional_runs():
    for case_file in sorted((FIXTURES / "functional").glob("*/case.json")):
        case = json.loads(case_file.read_text())
        runs = [("", "feeds.npz", "expected.npz")]
        runs += [(f"-{r}", f"feeds_{r}.npz", f"expected_{r}.npz") for r in case.get("runs", [])]
        for suffix, feeds, expected in runs:
            yield _param(f"functional/{case['name']}{suffix}", case_file.parent, case["fetches"], feeds, expected, 0, 0)


def _param(run_id, folder, fetches, feeds, expected, rtol, atol, slow=False):
    marks = [pytest.mark.slow] if slow else []
    if run_id in CANNOT_PASS:
        marks.append(pytest.mark.xfail(reason=CANNOT_PASS[run_id], strict=True))
    return pytest.param(folder, fetches, feeds, expected, rtol, atol, run_id in INTERPRETED_CLUSTERS,
                        id=run_id, marks=marks)


@pytest.mark.parametrize("folder, fetches, feeds_file, expected_file, rtol, atol, may_interpret",
                         [*_tf_runs(), *_tf2_runs(), *_functional_runs()])
def test_fixture_matches_tensorflow_with_jit(folder, fetches, feeds_file, expected_file, rtol, atol, may_interpret):
    graph = from_graphdef(graph_io.load_graphdef(str(folder / "graph.pb")), folder.name)
    feeds = _load(folder / feeds_file)
    expected = _load(folder / expected_file)
    session = Session(graph, jit=True)
    result = session.run(fetches, feeds, timeout=120)
    rtol, atol = max(rtol, 1e-4), max(atol, 1e-5)
    for name, value in zip(fetches, result.values):
        key = name if name in expected else name.removesuffix(":0")
        assert_matches(name, value, expected[key], rtol, atol)
    failed = [c.program.failure for c in session.jit_report.clusters if c.program.failure]
    assert bool(failed) == may_interpret, failed


SAMPLE_NAMES = sorted(p.stem for p in SAMPLES.glob("*.pb"))


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_sample_graph_matches_the_interpreter_with_jit(name):
    graph = from_graphdef(graph_io.load_graphdef(str(SAMPLES / f"{name}.pb")), name)
    feeds = _load(SAMPLES / f"{name}.feeds.npz")
    plain = Session(graph, jit=False)
    fetches = plain.default_fetches()
    want = plain.run(fetches, feeds, allow_dead=True).values
    got = Session(graph, jit=True).run(fetches, feeds, allow_dead=True).values
    for fetch, a, b in zip(fetches, got, want):
        if b is None:
            assert a is None, fetch
        elif b.dtype.kind in "fc":
            assert a.dtype == b.dtype, fetch
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6, err_msg=fetch)
        else:
            np.testing.assert_array_equal(a, b, err_msg=fetch)


def test_a_v1_dynamic_rnn_compiles_to_one_loop():
    """The sample RNN (a v1 while frame writing TensorArrays) is functionalized and compiled whole:
    one cluster holding the StatelessWhile and its TensorLists."""
    graph = from_graphdef(graph_io.load_graphdef(str(SAMPLES / "rnn.pb")))
    session = Session(graph, jit=True)
    session.run(session.default_fetches(), _load(SAMPLES / "rnn.feeds.npz"))
    clusters = session.jit_report.clusters
    assert len(clusters) == 1 and "StatelessWhile" in clusters[0].program.ops, session.jit_report.lines()
    assert not clusters[0].program.failure


def test_a_functional_cond_compiles():
    folder = FIXTURES / "functional" / "cond"
    spec = json.loads((folder / "case.json").read_text())
    session = Session(from_graphdef(graph_io.load_graphdef(str(folder / "graph.pb"))), jit=True)
    session.run(spec["fetches"], _load(folder / "feeds.npz"))
    compiled = {op for c in session.jit_report.clusters for op in c.program.ops}
    assert compiled & {"If", "StatelessIf"}, session.jit_report.lines()
