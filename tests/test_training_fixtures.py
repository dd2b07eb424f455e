"""TF1 training graphs made by tf.compat.v1.train optimizers (tools/make_training_fixtures.py):
running `init` once and `train` several times in one dftool Session leaves every variable (slots
included) where TensorFlow left it, step by step. Bit-exact where TensorFlow's update is plain
arithmetic; optimizers whose kernel uses Eigen's approximate rsqrt (Adagrad, ProximalAdagrad,
Adadelta) or pow agree to float32 rounding."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphtool import graph_io
from graphtool.exec.session import Session
from graphtool.ir import from_graphdef

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "training"
CASES = sorted(path.parent.name for path in FIXTURES.glob("*/case.json"))
# Optimizers whose TensorFlow kernel is not plain IEEE arithmetic in our formulation.
APPROXIMATE = {"adagrad", "proximal_adagrad", "adadelta", "ftrl_shrinkage"}


def test_every_optimizer_has_ref_and_resource_cases():
    optimizers = {json.loads((FIXTURES / case / "case.json").read_text())["optimizer"] for case in CASES}
    assert {"sgd", "momentum", "nesterov", "adam", "adagrad", "adadelta", "rmsprop", "rmsprop_centered",
            "ftrl"} <= optimizers
    assert len(CASES) == 2 * len(optimizers)


@pytest.mark.parametrize("case", CASES)
def test_training_steps_match_tensorflow(case):
    spec = json.loads((FIXTURES / case / "case.json").read_text())
    expected = np.load(FIXTURES / case / "expected.npz")
    graph = from_graphdef(graph_io.load_graphdef(str(FIXTURES / case / "graph.pb")), case)
    session = Session(graph, threads=1)
    session.run([], targets=[spec["init"]])
    apply_ops = {op for op in spec["ops"] if "Apply" in op}
    assert apply_ops, "the optimizer made no Apply op"
    for step in range(spec["steps"] + 1):
        if step:
            session.run([], targets=[spec["train"].split(":")[0]])
        values = session.run(spec["fetches"]).values
        for name, value in zip(spec["fetches"], values):
            want = expected[f"step{step}/{name}"]
            if spec.get("exact"):
                np.testing.assert_array_equal(value, want, err_msg=f"{name} at step {step}")
            else:
                np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6, err_msg=f"{name} at step {step}")
