"""Acceptance tests of issue 12 (real models in: TF2 function graphs, TensorLists, Keras models),
through the real command line, over the TF2 fixtures in tests/fixtures/tf2.

Those are real TensorFlow 2.21 artifacts recorded by tools/make_tf2_fixtures.py (see
tools/README_fixtures.md): `tf.function` concrete graphs (family `tf_function`), Keras recurrent
models frozen with and without lowering (`keras_rnn`) and frozen Keras applications (`keras_app`).
Each case.json names the tensors to feed and fetch, the tolerances, and what TensorFlow
differentiated. One test per acceptance point of the issue, parametrized over the cases:

- `inspect` exits 0 with no findings and names every function of the library;
- `run --feeds --expect` reproduces TensorFlow (float32 rtol 1e-4, atol 1e-5 unless the case
  records other tolerances, and says why in its notes);
- `optimize --verify` passes and the optimized graph still reproduces TensorFlow;
- `grad --y --x` then `run` reproduces TensorFlow's gradients (atol times the largest gradient
  where that exceeds 1: such gradients are sums of many terms);
- `place --devices cpu:0,cpu:1 | partition | run` gives exactly what `run` gives;
- an unlowered loop (functional While) and its `optimize --passes lower` form give identical
  results, and a lowered loop with parallel_iterations > 1 overlaps iterations;
- the GraphDef, function library included, round-trips through the IR unchanged.
"""
from __future__ import annotations

import collections
import json

import numpy as np
import pytest

from graphtool import graph_io
from graphtool.ir import from_graphdef, to_graphdef

from .helpers import REPO_ROOT, run_dftool

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "tf2"
SPECS = {path.parent.name: json.loads(path.read_text())
         for path in sorted(FIXTURES.glob("*/case.json"))}
# Ops that `lower` replaces by v1 control flow (or inlines); none may be left in a lowered graph.
FUNCTIONAL_OPS = {"If", "StatelessIf", "While", "StatelessWhile", "Case", "StatelessCase",
                  "PartitionedCall", "StatefulPartitionedCall", "SymbolicGradient"}
LOOP_OPS = {"While", "StatelessWhile"}
TIMEOUT = 300  # seconds per command (NASNet and DenseNet are a few thousand nodes)


def _all_ops(spec) -> set[str]:
    return set(spec["ops"]) | set(spec["function_ops"])


def cases(where=lambda spec: True) -> list:
    """The cases whose spec satisfies `where`, Keras applications (and other slow ones) marked."""
    return [pytest.param(name, id=name, marks=[pytest.mark.slow] if spec["slow"] else [])
            for name, spec in SPECS.items() if where(spec)]


def _graph(case):
    return FIXTURES / case / "graph.pb"


def _tolerances(case, kind=""):
    spec = SPECS[case]
    return spec.get(f"{kind}rtol", spec["rtol"]), spec.get(f"{kind}atol", spec["atol"])


def _fetch_args(fetches) -> list[str]:
    return [arg for fetch in fetches for arg in ("--fetch", fetch)]


def _load(path) -> dict[str, np.ndarray]:
    with np.load(path) as archive:
        return {key: archive[key] for key in archive.files}


def _assert_matches(actual: dict, expected: dict, rtol: float, atol: float, what: str):
    assert sorted(actual) == sorted(expected), f"{what}: fetched {sorted(actual)}"
    for name, want in expected.items():
        got = actual[name]
        assert got.shape == want.shape, f"{what} {name}: shape {got.shape}, TensorFlow {want.shape}"
        assert got.dtype == want.dtype, f"{what} {name}: dtype {got.dtype}, TensorFlow {want.dtype}"
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"{what} {name}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{what} {name}")


def _assert_identical(actual: dict, expected: dict, what: str):
    assert sorted(actual) == sorted(expected), what
    for name, want in expected.items():
        assert actual[name].dtype == want.dtype, f"{what} {name}"
        np.testing.assert_array_equal(actual[name], want, err_msg=f"{what} {name}")


def _run(graph, case, out, *extra, fetches=None, stdin=None) -> dict[str, np.ndarray]:
    """`dftool run GRAPH --feeds --fetch ... --output OUT` (GRAPH may be '-' with `stdin`)."""
    fetches = SPECS[case]["fetches"] if fetches is None else fetches
    code, _, stderr = run_dftool("run", graph, "--feeds", FIXTURES / case / "feeds.npz",
                                 *_fetch_args(fetches), "--output", out, *extra,
                                 input=stdin, timeout=TIMEOUT)
    assert code == 0, f"run {graph}: {stderr}"
    return _load(out)


class Runs:
    """What several tests share, computed once per case: `run graph.pb --expect` (the test of
    `run` asserts on it; the equivalence tests compare against its outputs) and the graph that
    `optimize --passes lower` makes."""

    def __init__(self, directory):
        self.directory = directory
        self._runs, self._lowered = {}, {}

    def reference(self, case):
        """(exit code, stderr, outputs or None) of `run graph.pb --expect expected.npz`."""
        if case not in self._runs:
            rtol, atol = _tolerances(case)
            out = self.directory / f"{case}.npz"
            code, _, stderr = run_dftool(
                "run", _graph(case), "--feeds", FIXTURES / case / "feeds.npz",
                *_fetch_args(SPECS[case]["fetches"]), "--output", out,
                "--expect", FIXTURES / case / "expected.npz", "--rtol", rtol, "--atol", atol,
                timeout=TIMEOUT)
            self._runs[case] = (code, stderr, _load(out) if out.exists() else None)
        return self._runs[case]

    def outputs(self, case):
        code, stderr, outputs = self.reference(case)
        assert outputs is not None, f"run {case}/graph.pb failed: {stderr}"
        return outputs

    def lowered(self, case):
        """`optimize --passes lower` of the case; asserts no functional op is left."""
        if case not in self._lowered:
            lowered = self.directory / f"{case}.lowered.pb"
            code, _, stderr = run_dftool("optimize", _graph(case), lowered, "--passes", "lower",
                                         *_fetch_args(SPECS[case]["fetches"]), timeout=TIMEOUT)
            self._lowered[case] = (code, stderr, lowered)
        code, stderr, lowered = self._lowered[case]
        assert code == 0, stderr
        left = {node.op for node in graph_io.load_graphdef(str(lowered)).node} & FUNCTIONAL_OPS
        assert not left, f"lower left {sorted(left)}"
        return lowered


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return Runs(tmp_path_factory.mktemp("real_models"))


def test_fixtures_exist():
    families = collections.Counter(spec["family"] for spec in SPECS.values())
    assert families["tf_function"] >= 6 and families["keras_rnn"] >= 10, (
        "run tools/make_tf2_fixtures.py (needs TensorFlow 2.21) to create the fixtures")


# -- inspect ---------------------------------------------------------------------------------

@pytest.mark.parametrize("case", cases())
def test_inspect_is_clean(case):
    code, stdout, stderr = run_dftool("inspect", _graph(case), "--json", timeout=TIMEOUT)
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["findings"] == [], report["findings"]
    missing = [name for name in SPECS[case]["functions"] if name not in stdout]
    assert not missing, f"inspect does not describe the functions {missing}"


# -- run -------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", cases())
def test_run_matches_tensorflow(case, runs):
    code, stderr, outputs = runs.reference(case)
    assert code == 0, stderr
    rtol, atol = _tolerances(case)
    _assert_matches(outputs, _load(FIXTURES / case / "expected.npz"), rtol, atol, "run")


# -- optimize --------------------------------------------------------------------------------

@pytest.mark.parametrize("case", cases())
def test_optimize_verifies_and_still_matches_tensorflow(case, tmp_path):
    optimized = tmp_path / "optimized.pb"
    code, _, stderr = run_dftool("optimize", _graph(case), optimized, "--verify",
                                 *_fetch_args(SPECS[case]["fetches"]), timeout=TIMEOUT)
    assert code == 0, stderr
    rtol, atol = _tolerances(case)
    actual = _run(optimized, case, tmp_path / "out.npz")
    _assert_matches(actual, _load(FIXTURES / case / "expected.npz"), rtol, atol, "optimized")


# -- grad ------------------------------------------------------------------------------------

def gradient_name(x: str, prefix: str) -> str:
    """docs/commands.md: the gradient of x = node:k is PREFIX/node when k = 0, else PREFIX/node_k."""
    node, _, port = x.rpartition(":")
    return f"{prefix}/{node}" if port == "0" else f"{prefix}/{node}_{port}"


@pytest.mark.parametrize("case", cases(lambda spec: "gradients" in spec))
def test_grad_matches_tensorflow(case, tmp_path):
    grads = SPECS[case]["gradients"]
    graph = tmp_path / "grad.pb"
    code, _, stderr = run_dftool("grad", _graph(case), graph, "--y", grads["y"],
                                 *[arg for x in grads["xs"] for arg in ("--x", x)],
                                 "--prefix", "grad", timeout=TIMEOUT)
    assert code == 0, stderr
    names = {gradient_name(x, "grad"): x for x in grads["xs"]}
    actual = _run(graph, case, tmp_path / "grads.npz", fetches=list(names))
    expected = _load(FIXTURES / case / grads["expected"])
    rtol, atol = _tolerances(case, "grad_")
    actual = {names[name]: value for name, value in actual.items()}
    for x, want in expected.items():  # atol scales with gradients larger than 1 (sums of many terms)
        scale = max(1.0, float(np.max(np.abs(want))))
        _assert_matches({x: actual.get(x)}, {x: want}, rtol, atol * scale, "gradient of")


# -- place | partition | run -----------------------------------------------------------------

@pytest.mark.parametrize("case", cases())
def test_place_partition_run_equals_run(case, tmp_path, runs):
    code, placed, stderr = run_dftool("place", _graph(case), "-", "--devices", "cpu:0,cpu:1",
                                      binary=True, timeout=TIMEOUT)
    assert code == 0, stderr
    code, partitioned, stderr = run_dftool("partition", "-", "-", input=placed, binary=True,
                                           timeout=TIMEOUT)
    assert code == 0, stderr
    actual = _run("-", case, tmp_path / "out.npz", stdin=partitioned)
    _assert_identical(actual, runs.outputs(case), "partitioned run vs run")


# -- lower -----------------------------------------------------------------------------------

@pytest.mark.parametrize("case", cases(lambda spec: _all_ops(spec) & FUNCTIONAL_OPS))
def test_lowered_graph_gives_identical_results(case, tmp_path, runs):
    actual = _run(runs.lowered(case), case, tmp_path / "out.npz")
    _assert_identical(actual, runs.outputs(case), "lowered vs unlowered")


def _overlapping_iterations(trace_path) -> int:
    """How many times, in some loop frame, iteration k+1 started a node before iteration k
    started its last one (with one executor thread: the iterations were interleaved).

    Only frames that ran once count: the trace names a frame but not its instance, and the
    instances of an inner loop (one per outer iteration) would look like overlapping ones."""
    events = json.loads(trace_path.read_text())["traceEvents"]
    starts = collections.defaultdict(list)  # (frame, iteration) -> start times
    nodes = collections.defaultdict(set)    # (frame, iteration) -> node names
    repeated = set()                         # frames run more than once
    for event in events:
        args = event.get("args", {})
        if event.get("ph") == "X" and args.get("frame"):
            key = (args["frame"], args["iteration"])
            if args["name"] in nodes[key]:
                repeated.add(args["frame"])
            nodes[key].add(args["name"])
            starts[key].append(event["ts"])
    return sum(1 for (frame, k), times in starts.items()
               if frame not in repeated and (frame, k + 1) in starts
               and min(starts[frame, k + 1]) < max(times))


def _with_parallel_iterations(source, target, value):
    """A copy of a lowered GraphDef whose loops (Enter nodes) allow `value` iterations at once."""
    graph_def = graph_io.load_graphdef(str(source))
    enters = [node for node in graph_def.node if node.op == "Enter"]
    assert enters, "no loop frame in the lowered graph"
    for node in enters:
        node.attr["parallel_iterations"].i = value
    target.write_bytes(graph_def.SerializeToString())
    return target


def _iterates_in_parallel(spec) -> bool:
    """A loop allows several iterations at once and runs more than one (case.json `loop_trips`,
    where recorded, is the trip count fed)."""
    return max(spec["parallel_iterations"], default=0) > 1 and spec.get("loop_trips", 2) > 1


@pytest.mark.parametrize("case", cases(_iterates_in_parallel))
def test_lowered_loop_overlaps_iterations(case, tmp_path, runs):
    """parallel_iterations > 1 lets iterations overlap; the same graph at 1 runs them in turn.
    Traced with one executor thread, so the interleaving is scheduling, not timing."""
    lowered = (runs.lowered(case) if _all_ops(SPECS[case]) & LOOP_OPS
               else _graph(case))  # TensorFlow lowered it already
    serial = _with_parallel_iterations(lowered, tmp_path / "serial.pb", 1)
    overlaps = {}
    for label, graph in (("parallel", lowered), ("serial", serial)):
        trace = tmp_path / f"{label}.json"
        _run(graph, case, tmp_path / f"{label}.npz", "--threads", "1", "--trace", trace)
        overlaps[label] = _overlapping_iterations(trace)
    assert overlaps["parallel"] > 0, "no two iterations overlapped"
    assert overlaps["serial"] == 0, "parallel_iterations=1 still overlapped iterations"


# -- round trip ------------------------------------------------------------------------------

def _canonical_inputs(graph_def):
    """TensorFlow may spell output 0 as 'x' or 'x:0'; both mean the same edge."""
    for node in graph_def.node:
        for i, text in enumerate(node.input):
            if text.endswith(":0") and not text.startswith("^"):
                node.input[i] = text[:-2]
    return graph_def


@pytest.mark.parametrize("case", cases())
def test_graphdef_and_function_library_round_trip(case):
    original = graph_io.load_graphdef(str(_graph(case)))
    exported = to_graphdef(from_graphdef(original, case))
    assert exported.library == original.library
    assert _canonical_inputs(exported) == _canonical_inputs(graph_io.load_graphdef(str(_graph(case))))
