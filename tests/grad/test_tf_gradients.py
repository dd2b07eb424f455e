"""`dftool grad` against TensorFlow.

Every fixture of the `grad_reference` family (tools/tf_fixtures/grad_reference.py) is a
forward-only GraphDef plus the values TensorFlow's tf.gradients(y, xs) computed for each of its
runs (case.json "gradients", expected_grads*.npz). The gradient graphs dftool builds reproduce
them: built by the driver and run in a Session, after the optimizer, and through the command line
(`dftool grad ... | dftool optimize - - | dftool run - --expect ...`).

Tolerances: float32 rtol 1e-4, and an absolute tolerance of 1e-5 per unit of the gradient's
largest magnitude (at least 1e-5). A gradient entry is a sum of many float32 products; where they
cancel, the entry is much smaller than its terms while its rounding error stays near float32's
epsilon (1.2e-7) times the terms, which are bounded by the gradient's scale. 1e-5 leaves a factor
of ~100 over that and is still 10x below the rtol bound of entries near the maximum.
"""
import functools
import json
from pathlib import Path

import numpy as np
import pytest

from graphtool import graph_io
from graphtool.exec.session import Session
from graphtool.ir import from_graphdef, parse_tensor_name

from tests.helpers import run_dftool

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tf"
RTOL = 1e-4
ATOL_PER_UNIT = 1e-5
PREFIX = "grad"


def _specs() -> dict[str, dict]:
    """case name -> case.json, for the fixtures that record gradients."""
    specs = (json.loads(path.read_text()) for path in sorted(FIXTURES.glob("*/case.json")))
    return {spec["name"]: spec for spec in specs if "gradients" in spec}


SPECS = _specs()


def _runs():
    """(case, feeds file, expected forward file, expected gradients file), one per run."""
    for name, spec in SPECS.items():
        yield pytest.param(name, "feeds.npz", "expected.npz", spec["gradients"]["expected"], id=name)
        for extra in spec["extra_runs"]:
            yield pytest.param(name, extra["feeds"], extra["expected"], extra["expected_grads"],
                               id=f"{name}-{extra['name']}")


RUNS = list(_runs())


def gradient_name(x: str, prefix: str = PREFIX) -> str:
    """docs/commands.md: the gradient of x = node:k is PREFIX/node when k = 0, else PREFIX/node_k."""
    node, port = parse_tensor_name(x)
    return f"{prefix}/{node}" if port == 0 else f"{prefix}/{node}_{port}"


def _fetches(case: str) -> list[str]:
    """y, then the gradient of every x, as dftool names them."""
    grads = SPECS[case]["gradients"]
    return [grads["y"]] + [gradient_name(x) for x in grads["xs"]]


def _load(case: str, filename: str) -> dict[str, np.ndarray]:
    with np.load(FIXTURES / case / filename) as archive:
        return dict(archive)


def _tolerances(expected: np.ndarray) -> tuple[float, float]:
    """(rtol, atol) for one gradient; see the module docstring."""
    scale = float(np.max(np.abs(expected), initial=0.0))
    return RTOL, ATOL_PER_UNIT * max(1.0, scale)


def assert_gradient_matches(x: str, actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.shape == expected.shape, f"d/d {x}: shape {actual.shape}, TensorFlow {expected.shape}"
    assert actual.dtype == expected.dtype, f"d/d {x}: dtype {actual.dtype}, TensorFlow {expected.dtype}"
    rtol, atol = _tolerances(expected)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=f"d/d {x}")


@functools.cache
def gradient_graph(case: str):
    """The case's forward graph with dftool's gradient subgraph (shared: do not mutate)."""
    from graphtool.grad.driver import gradients

    forward = from_graphdef(graph_io.load_graphdef(str(FIXTURES / case / "graph.pb")), case)
    grads = SPECS[case]["gradients"]
    graph, _report = gradients(forward, grads["y"], grads["xs"], prefix=PREFIX)
    return graph


@functools.cache
def optimized_gradient_graph(case: str):
    """gradient_graph(case) after every optimizer pass, keeping y and the gradients."""
    from graphtool.opt.base import PassContext
    from graphtool.opt.manager import optimize

    graph = gradient_graph(case).copy()
    optimize(graph, PassContext(fetches=[graph.tensor(name) for name in _fetches(case)]))
    return graph


def _check_run(graph, case, feeds_file, expected_file, grads_file, threads):
    """Run y and every gradient on the run's feeds and compare with TensorFlow's values."""
    grads = SPECS[case]["gradients"]
    result = Session(graph, threads=threads).run(_fetches(case), _load(case, feeds_file), timeout=60)
    forward, *gradient_values = result.values
    expected_y = _load(case, expected_file)[grads["y"]]
    np.testing.assert_allclose(forward, expected_y, rtol=RTOL, atol=ATOL_PER_UNIT, err_msg=grads["y"])
    expected_grads = _load(case, grads_file)
    for x, actual in zip(grads["xs"], gradient_values):
        assert_gradient_matches(x, actual, expected_grads[x])


@pytest.mark.parametrize("case, feeds_file, expected_file, grads_file", RUNS)
def test_gradients_match_tensorflow(case, feeds_file, expected_file, grads_file):
    _check_run(gradient_graph(case), case, feeds_file, expected_file, grads_file, threads=2)


@pytest.mark.parametrize("case, feeds_file, expected_file, grads_file", RUNS)
def test_optimized_gradients_match_tensorflow(case, feeds_file, expected_file, grads_file):
    _check_run(optimized_gradient_graph(case), case, feeds_file, expected_file, grads_file, threads=1)


def test_every_acceptance_model_is_recorded():
    """issue 6: an MLP with a loss, a cond, a while loop, nested loops, the dynamic LSTM and a conv
    net with batch norm, each differentiated with respect to at least one tensor."""
    wanted = {"gradref_mlp": "SoftmaxCrossEntropyWithLogits", "gradref_cond": "Merge",
              "gradref_while": "NextIteration", "gradref_nested_while": "NextIteration",
              "gradref_lstm": "TensorArrayReadV3", "gradref_convnet": "FusedBatchNormV3"}
    for name, op in wanted.items():
        assert name in SPECS, f"{name}: run tools/make_tf_fixtures.py --only {name}"
        assert op in SPECS[name]["ops"] and SPECS[name]["gradients"]["xs"], name


def _expect_file(tmp_path, case, grads_file, prefix) -> tuple[Path, float]:
    """TensorFlow's gradients keyed by dftool's gradient names, and the loosest atol among them."""
    expected = _load(case, grads_file)
    renamed = {gradient_name(x, prefix): value for x, value in expected.items()}
    path = tmp_path / f"{case}.expected_grads.npz"
    np.savez(path, **renamed)
    return path, max(_tolerances(value)[1] for value in expected.values())


def _grad_args(case: str, prefix: str) -> list[str]:
    grads = SPECS[case]["gradients"]
    return ["--y", grads["y"], *[arg for x in grads["xs"] for arg in ("--x", x)], "--prefix", prefix]


def _run_args(case: str, feeds_file: str, expect: Path, atol: float, prefix: str) -> list[str]:
    fetches = [arg for x in SPECS[case]["gradients"]["xs"] for arg in ("--fetch", gradient_name(x, prefix))]
    return ["--feeds", FIXTURES / case / feeds_file, *fetches, "--expect", expect,
            "--rtol", str(RTOL), "--atol", str(atol)]


@pytest.mark.parametrize("case, feeds_file, grads_file, prefix", [
    ("gradref_mlp", "feeds.npz", "expected_grads.npz", "grad"),
    ("gradref_while", "feeds_seven.npz", "expected_grads_seven.npz", "d"),
])
def test_cli_grad_then_run_reproduces_tensorflow(case, feeds_file, grads_file, prefix, tmp_path):
    graph = tmp_path / "grad.pb"
    code, _, stderr = run_dftool("grad", FIXTURES / case / "graph.pb", graph, *_grad_args(case, prefix))
    assert code == 0, stderr
    expect, atol = _expect_file(tmp_path, case, grads_file, prefix)
    code, _, stderr = run_dftool("run", graph, *_run_args(case, feeds_file, expect, atol, prefix))
    assert code == 0, stderr


@pytest.mark.parametrize("case, feeds_file, grads_file", [
    ("gradref_cond_in_while", "feeds_five.npz", "expected_grads_five.npz"),
])
def test_cli_pipe_through_optimize_reproduces_tensorflow(case, feeds_file, grads_file, tmp_path):
    """`dftool grad IN - | dftool optimize - - | dftool run - --expect`, as the issue composes it."""
    code, graph, stderr = run_dftool("grad", FIXTURES / case / "graph.pb", "-", *_grad_args(case, PREFIX),
                                     binary=True)
    assert code == 0, stderr
    code, graph, stderr = run_dftool("optimize", "-", "-", input=graph, binary=True)
    assert code == 0, stderr
    expect, atol = _expect_file(tmp_path, case, grads_file, PREFIX)
    code, _, stderr = run_dftool("run", "-", *_run_args(case, feeds_file, expect, atol, PREFIX), input=graph)
    assert code == 0, stderr
