"""Every report the CLI writes validates against its committed JSON Schema (docs/schemas/).

The reports are produced by the real entry point on the bundled samples and test fixtures, in
cases chosen so that each optional part of a report appears at least once (a SavedModel's
signatures, unknown ops, loop frames, --explain candidates, --expect, the JIT's clusters).
The schemas forbid fields they do not describe, so a report field added without documenting it
fails here too.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.report import REPORT_VERSIONS, schema_id
from .helpers import REPO_ROOT, const_def, graph_def, node_def, run_dftool, write_graph

jsonschema = pytest.importorskip("jsonschema")

SCHEMAS = REPO_ROOT / "docs" / "schemas"
SAMPLES = REPO_ROOT / "sample_graphs"
FIXTURES = REPO_ROOT / "tests" / "fixtures"
SAVED_MODEL = FIXTURES / "saved_models" / "module_two_signatures" / "model"   # two signatures
FUNCTION_GRAPH = FIXTURES / "tf2" / "keras_lstm_functional" / "graph.pb"      # a function library


def load_schema(name: str) -> dict:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def _strict_validator():
    """Draft 2020-12, except that "integer" means an integer in the JSON text: JSON Schema
    itself accepts 18.0 as an integer, and the reports promise counts written as 18."""
    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine(
        "integer", lambda _, value: isinstance(value, int) and not isinstance(value, bool))
    return jsonschema.validators.extend(base, type_checker=checker)


StrictValidator = _strict_validator()


def validation_errors(name: str, document: dict) -> list[str]:
    validator = StrictValidator(load_schema(name))
    return sorted(f"{'/'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}"
                  for error in validator.iter_errors(document))


def sample(name: str) -> list[str]:
    return [str(SAMPLES / f"{name}.pb"), "--feeds", str(SAMPLES / f"{name}.feeds.npz")]


def produce(tmp_path: Path, *args, expect_code: int = 0) -> dict:
    """Run `dftool ARGS --report FILE` and return the report (read from the file)."""
    path = tmp_path / "report.json"
    code, _, stderr = run_dftool(*args, "--report", path, "-q")
    assert code == expect_code, stderr
    return json.loads(path.read_text())


def unknown_op_graph(tmp_path: Path) -> str:
    """A graph with an op dftool does not know and a node whose input is missing."""
    return write_graph(graph_def(
        node_def("x", "Placeholder", dtype=1, shape=[2]),
        node_def("custom", "MyCustomOp", ["x"]),
        node_def("y", "Identity", ["custom"], T=1),
        node_def("lost", "Identity", ["nowhere"], T=1),
        const_def("c", [1.0, 2.0])), tmp_path / "custom.pb")


def perturbed_mlp(tmp_path: Path) -> str:
    """mlp.pb with one Const (logits/bias) changed slightly."""
    import numpy as np

    from .helpers import load_graph

    graph = load_graph(SAMPLES / "mlp.pb")
    node = graph.node("logits/bias")
    value = np.array(node.attr("value"))
    value[1] += 1e-3
    node.set_attr("value", value)
    return write_graph(graph, tmp_path / "perturbed.pb")


# case -> (command, its arguments, exit code, what the report must show: the cases are only worth
# something if together they reach the parts that are often empty).
CASES = {
    "inspect-cond": ("inspect", lambda tmp: ["inspect", SAMPLES / "cond.pb"], 0, None),
    "inspect-loops": ("inspect", lambda tmp: ["inspect", SAMPLES / "while_loop.pb"], 0,
                      lambda report: report["frames"]),
    "inspect-saved-model": ("inspect", lambda tmp: ["inspect", SAVED_MODEL], 0,
                            lambda report: len(report["saved_model"]["signatures"]) == 2),
    "inspect-functions": ("inspect", lambda tmp: ["inspect", FUNCTION_GRAPH], 0, lambda report: report["functions"]),
    "inspect-unknown-ops": ("inspect", lambda tmp: ["inspect", unknown_op_graph(tmp)], 3,
                            lambda report: report["unknown_ops"][0]["op"] == "MyCustomOp" and report["problems"]
                            and "needs_unknown_ops" in report["outputs"][0]),
    "inspect-costs": ("inspect", lambda tmp: ["inspect", SAMPLES / "convnet.pb", "--costs"], 0,
                      lambda report: report["costs"]["total"]["macs"] and report["costs"]["notes"]),
    "run-expect": ("run", lambda tmp: ["run", *sample("cond"), "--expect", FIXTURES / "opaque" / "expected.npz"], 1,
                   lambda report: report["expect"]["mismatches"]),
    "run-loops": ("run", lambda tmp: ["run", *sample("while_loop")], 0, lambda report: report["loop_iterations"]),
    "optimize-verify": ("optimize", lambda tmp: ["optimize", SAMPLES / "mlp.pb", tmp / "out.pb", "--verify"], 0,
                        lambda report: report["verified"] and report["verify_tolerance"]),
    "prune-feeds": ("prune", lambda tmp: ["prune", SAMPLES / "mlp.pb", tmp / "out.pb", "--fetch", "probs",
                                          "--feed", "dense/Relu"], 0, lambda report: report["feeds"]),
    "prune-call-frame": ("prune", lambda tmp: ["prune", SAMPLES / "while_loop.pb", tmp / "out.pb", "--fetch", "acc",
                                               "--feed", "x", "--call-frame"], 0,
                         lambda report: report["call_frame"] and report["loops_kept"]),
    "place-explain-softened": ("place", lambda tmp: ["place", SAMPLES / "multi_device.pb", tmp / "out.pb",
                                                     "--devices", "cpu:0", "--explain"], 0,
                               lambda report: report["softened"] and any("candidates" in n for n in report["nodes"])),
    "partition-loops": ("partition", lambda tmp: ["partition", SAMPLES / "model_parallel_rnn.pb", tmp / "out.pb",
                                                  "--split-dir", tmp / "parts"], 0,
                        lambda report: report["frames"] and len(report["split"]) == 8),
    "grad-loops": ("grad", lambda tmp: ["grad", SAMPLES / "while_loop.pb", tmp / "out.pb", "--y", "acc"], 0,
                   lambda report: report["loops"] == 1),
    "compare-all-tensors": ("compare", lambda tmp: ["compare", *sample("mlp"), perturbed_mlp(tmp), "--all-tensors"], 1,
                            lambda report: report["all_tensors"]["first"] and report["all_tensors"]["sources"]),
    "compare-loops-exact": ("compare", lambda tmp: ["compare", *sample("while_loop"), "--b-optimize", "--all-tensors"],
                            0, lambda report: report["all_tensors"]["not_comparable"]
                            and report["outputs"][0]["kind"] == "exact"),
    "compare-npz": ("compare", lambda tmp: ["compare", FIXTURES / "tf" / "mlp_frozen" / "graph.pb", "--feeds",
                                            FIXTURES / "tf" / "mlp_frozen" / "feeds.npz", "--b-npz",
                                            FIXTURES / "tf" / "mlp_frozen" / "expected.npz"], 0,
                    lambda report: report["b"]["kind"] == "npz" and report["all_tensors"] is None),
    "profile-loops": ("profile", lambda tmp: ["profile", *sample("while_loop"), "--repeat", "2", "--warmup", "0",
                                              "--cost-model-out", tmp / "costs.json"], 0,
                      lambda report: report["critical_path"]["nodes"] and report["loop_iterations"]),
    "profile-transfers": ("profile", lambda tmp: ["profile", *sample("model_parallel_rnn"), "--repeat", "1",
                                                  "--warmup", "0", "--cost-model-out", tmp / "costs.json"], 0,
                          lambda report: any(e["count"] > 1 for e in report["transfers"]["edges"])),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_report_validates_against_its_schema(case, tmp_path):
    command, make_args, code, shows = CASES[case]
    report = produce(tmp_path, *make_args(tmp_path), expect_code=code)
    assert report["schema"] == schema_id(command) and report["command"] == command
    assert validation_errors(command, report) == []
    assert shows is None or shows(report), f"{case}: the report lacks the part this case is for"
    if command == "profile":
        costs = json.loads((tmp_path / "costs.json").read_text())
        assert validation_errors("cost_model", costs) == []


def test_inspect_nodes_report_validates(tmp_path):
    """`inspect --nodes` writes its own report kind (inspect_nodes), with and without --costs."""
    plain = produce(tmp_path, "inspect", SAMPLES / "convnet.pb", "--nodes")
    assert plain["schema"] == schema_id("inspect_nodes") and validation_errors("inspect_nodes", plain) == []
    costs = produce(tmp_path, "inspect", SAMPLES / "convnet.pb", "--op", "Conv2D", "--costs")
    assert validation_errors("inspect_nodes", costs) == []
    assert costs["count"] == 2 and all(node["macs"] for node in costs["nodes"]) and costs["cost_notes"]


def test_run_json_has_the_step_time_and_small_values(tmp_path):
    code, stdout, stderr = run_dftool("run", *sample("while_loop"), "--json")
    assert code == 0, stderr
    report = json.loads(stdout)
    assert validation_errors("run", report) == []
    assert report["graph"] == str(SAMPLES / "while_loop.pb") and report["step_time_ms"] > 0
    values = {fetch["name"]: fetch["value"] for fetch in report["fetches"]}
    assert values["i_final"] == 16                       # a scalar is itself
    assert isinstance(values["acc"], list) and len(values["acc"]) == 3
    assert report["loop_iterations"] and all(isinstance(n, int) for n in report["loop_iterations"].values())


def test_run_json_leaves_out_large_values_and_spells_non_finite_floats(tmp_path):
    import numpy as np

    from cli.report import SMALL_OUTPUT_ELEMENTS, tensor_value

    assert tensor_value(np.zeros(SMALL_OUTPUT_ELEMENTS + 1, np.float32)) is None
    assert tensor_value(np.array([0.1, np.nan, np.inf, -np.inf], np.float32)) == [0.1, "NaN", "Infinity", "-Infinity"]
    assert tensor_value(np.array([b"ok", b"\xff"], dtype=object)) == ["ok", "\\xff"]
    assert tensor_value(np.array([[True, False]])) == [[True, False]]
    assert tensor_value(np.array([1 + 2j], np.complex64)) == [[1.0, 2.0]]


def test_every_report_names_its_input_graph_and_counts_in_integers(tmp_path):
    """The rules every schema states: `graph` for the input, and counts that are integers."""
    for command in REPORT_VERSIONS:
        schema = load_schema(command)
        assert schema["properties"]["schema"] == {"const": schema_id(command),
                                                  "description": "Which report this is, and its version."}
        if command not in ("cluster", "inspect_checkpoint"):   # (the reports about no graph)
            assert "graph" in schema["required"] and "input" not in schema["properties"], command
    profile = load_schema("profile")
    for field in ("calls", "allocated_bytes", "output_bytes"):
        assert profile["properties"]["ops"]["items"]["properties"][field]["type"] == "integer"
    assert profile["properties"]["nodes_executed"]["type"] == "integer"


def test_every_schema_file_is_a_report_and_fails_what_it_should(tmp_path):
    files = {path.name.removesuffix(".schema.json") for path in SCHEMAS.glob("*.schema.json")}
    assert files == set(REPORT_VERSIONS) | {"cost_model"}
    report = produce(tmp_path, "grad", SAMPLES / "mlp.pb", tmp_path / "out.pb", "--y", "probs")
    assert validation_errors("grad", report) == []
    assert validation_errors("grad", {**report, "nodes_added": 18.0})      # a count as a float
    assert validation_errors("grad", {**report, "input": report["graph"]})  # an undocumented field
    assert validation_errors("grad", {k: v for k, v in report.items() if k != "schema"})


@pytest.mark.slow
@pytest.mark.parametrize("command", ["run", "profile"])
def test_jit_parts_of_reports(command, tmp_path):
    pytest.importorskip("jax")
    extra = ["--repeat", "1", "--warmup", "0"] if command == "profile" else []
    report = produce(tmp_path, command, *sample("while_loop"), "--jit", "--jit-cache", "off", *extra)
    assert report["jit"]["clusters"]
    assert validation_errors(command, report) == []
