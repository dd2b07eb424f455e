"""Whole TF1 training runs recorded by tools/make_training_run_fixtures.py (MLP and conv net x
GradientDescent/Momentum/Adam x ref/resource variables): one dftool Session runs `init` once, then
50 x run([loss], feeds, targets=[train]) as TensorFlow did, with one fixed batch and with a batch
per step; the losses agree with TensorFlow's to rtol 1e-4 (the case's rtol) and so do the variables
afterwards. The case files name real nodes (init, train, loss, Saver, merged summary), and the
checkpoint TensorFlow wrote after step 20 holds every variable; restoring its values (fed into the
Saver's restore subgraph) and training on reproduces TensorFlow's resumed losses."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphtool import graph_io
from graphtool.checkpoint.bundle import BundleReader
from graphtool.exec.session import Session
from graphtool.ir import from_graphdef

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "training_runs"
CASES = sorted(path.parent.name for path in FIXTURES.glob("*/case.json"))
RUNS = [(case, run) for case in CASES for run in ("fixed", "per_step")]
# Variables after 50 steps: a near-zero element (Adam's first moments, a bias) can differ by more
# than rtol relative to itself while agreeing to 1e-5 absolutely; the losses carry the rtol alone.
VARIABLE_ATOL = 1e-5


def load(case: str):
    spec = json.loads((FIXTURES / case / "case.json").read_text())
    graph = from_graphdef(graph_io.load_graphdef(str(FIXTURES / case / "graph.pb")), case)
    return spec, graph


def tensor_node(name: str) -> str:
    return name.rsplit(":", 1)[0]


def variable_read(graph, name: str) -> str:
    """A ref variable's own output; a resource variable's `<name>/Read/ReadVariableOp` (TF1 graphs
    have one per resource variable)."""
    if graph.get(name).op == "VariableV2":
        return f"{name}:0"
    assert graph.get(f"{name}/Read/ReadVariableOp") is not None, name
    return f"{name}/Read/ReadVariableOp:0"


def train(session: Session, spec: dict, feeds: dict[str, np.ndarray], steps: range, per_step: bool) -> np.ndarray:
    losses = []
    for step in steps:
        step_feeds = {key: value[step] for key, value in feeds.items()} if per_step else feeds
        losses.append(float(session.run([spec["loss"]], step_feeds, targets=[spec["train"]]).values[0]))
    return np.asarray(losses)


def test_every_model_optimizer_and_variable_kind_is_recorded():
    specs = [json.loads((FIXTURES / case / "case.json").read_text()) for case in CASES]
    assert {(s["model"], s["optimizer"], s["resource"]) for s in specs} == {
        (model, optimizer, resource) for model in ("mlp", "conv") for optimizer in ("sgd", "momentum", "adam")
        for resource in (False, True)}
    assert [s["name"] for s in specs if s["saver"]["sharded"]] == ["conv_adam_resource"]
    assert [s["name"] for s in specs if "resume" in s] == ["mlp_adam_ref"]


@pytest.mark.parametrize("case", CASES)
def test_case_names_nodes_of_its_graph(case):
    spec, graph = load(case)
    for name in (spec["init"], spec["train"], tensor_node(spec["loss"]), *map(tensor_node, spec["inputs"].values()),
                 tensor_node(spec["saver"]["filename_tensor"]), tensor_node(spec["saver"]["save_tensor"]),
                 spec["saver"]["restore_op"], spec["global_step"]):
        assert graph.get(name) is not None, name
    assert graph.get(tensor_node(spec["summary"]["tensor"])).op == "MergeSummary"
    assert spec["saver"]["version"] == "V2"
    kinds = {"VarHandleOp" if spec["resource"] else "VariableV2"}
    assert {graph.get(variable["name"]).op for variable in spec["variables"]} == kinds
    apply = {"sgd": "ApplyGradientDescent", "momentum": "ApplyMomentum", "adam": "ApplyAdam"}[spec["optimizer"]]
    assert ("Resource" if spec["resource"] else "") + apply in spec["ops"]
    for run in spec["runs"]:
        feeds = np.load(FIXTURES / case / run["feeds"])
        assert sorted(feeds.files) == sorted(spec["inputs"].values())
        assert all(feeds[key].shape[:1] == (spec["steps"],) for key in feeds.files) == run["per_step"]
        assert np.load(FIXTURES / case / run["losses"]).shape == (spec["steps"],)
        final = np.load(FIXTURES / case / run["final_variables"])
        assert sorted(final.files) == sorted(variable["name"] for variable in spec["variables"])
        for variable in spec["variables"]:
            assert final[variable["name"]].dtype == np.dtype(variable["dtype"])
            assert list(final[variable["name"]].shape) == variable["shape"]
        assert final[spec["global_step"]] == spec["steps"]


@pytest.mark.parametrize("case, run_name", RUNS)
def test_session_reproduces_tensorflow_training(case, run_name):
    spec, graph = load(case)
    run = next(run for run in spec["runs"] if run["name"] == run_name)
    session = Session(graph, threads=1)
    session.run([], targets=[spec["init"]])
    losses = train(session, spec, dict(np.load(FIXTURES / case / run["feeds"])), range(spec["steps"]),
                   run["per_step"])
    np.testing.assert_allclose(losses, np.load(FIXTURES / case / run["losses"]), rtol=spec["rtol"], atol=0)
    expected = np.load(FIXTURES / case / run["final_variables"])
    names = [variable["name"] for variable in spec["variables"]]
    values = session.run([variable_read(graph, name) for name in names]).values
    for name, value in zip(names, values):
        np.testing.assert_allclose(value, expected[name], rtol=spec["rtol"], atol=VARIABLE_ATOL, err_msg=name)


def test_training_resumes_from_tensorflows_checkpoint():
    """The TF checkpoint after step 20 holds every variable under its name; its values, fed into the
    Saver's restore subgraph (save/RestoreV2's outputs, in the order of its tensor_names), restore
    the session, and the next 30 steps give TensorFlow's resumed losses."""
    case = next(case for case in CASES if "resume" in json.loads((FIXTURES / case / "case.json").read_text()))
    spec, graph = load(case)
    resume = spec["resume"]
    state = (FIXTURES / case / resume["checkpoint_dir"] / "checkpoint").read_text()
    assert f'model_checkpoint_path: "{Path(resume["prefix"]).name}"' in state
    reader = BundleReader(FIXTURES / case / resume["prefix"])
    assert sorted(reader.keys()) == sorted(variable["name"] for variable in spec["variables"])
    assert reader.read(spec["global_step"]) == resume["after_step"]
    restore = graph.get("save/RestoreV2")
    names = [key.decode() for key in restore.inputs[1].node.attrs["value"].tensor.string_val]
    session = Session(graph, threads=1)
    session.run([], targets=[spec["init"]])
    session.run([], {f"save/RestoreV2:{i}": reader.read(name) for i, name in enumerate(names)},
                targets=[spec["saver"]["restore_op"]])
    feeds = dict(np.load(FIXTURES / case / resume["feeds"]))
    losses = train(session, spec, feeds, range(resume["after_step"], spec["steps"]), per_step=False)
    np.testing.assert_allclose(losses, np.load(FIXTURES / case / resume["losses"]), rtol=spec["rtol"], atol=0)
    assert session.run([variable_read(graph, spec["global_step"])]).values[0] == spec["steps"]
