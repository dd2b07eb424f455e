"""`dftool optimize` through the real entry point: outputs, '-' pipelines, reports, dumps, and every
error path with its exit code and one-line message. A failing pass is simulated in-process
(cli.main.main with the pass patched), since a subprocess cannot be monkeypatched."""
import json

import numpy as np
from pathlib import Path
import pytest

from graphtool import dtypes, graph_io
from graphtool.builder import GraphBuilder
from graphtool.opt.base import PassResult, registered_passes
from graphtool.opt.manager import pass_order

from .helpers import FIXTURES, error_line, load_graph, run_dftool

MLP = FIXTURES / "mlp_frozen"



def case_spec(case):
    return json.loads((FIXTURES / case / "case.json").read_text())


@pytest.fixture()
def wasteful_graph(tmp_path):
    """out = x + 1, plus an unused branch (waste) and an unused node to --keep (debug)."""
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    b.add(x, 1.0, name="out")
    b.mul(b.sub(x, 2.0, name="waste1"), 3.0, name="waste2")
    b.mul(x, 5.0, name="debug")
    path = tmp_path / "wasteful.pb"
    path.write_bytes(b.to_graphdef().SerializeToString())
    return path


def assert_matches_tensorflow(results_path, case):
    spec, results = case_spec(case), np.load(results_path)
    expected = np.load(FIXTURES / case / "expected.npz")
    rtol, atol = max(spec["rtol"], 1e-4), max(spec["atol"], 1e-5)
    for fetch in spec["fetches"]:
        np.testing.assert_allclose(results[fetch], expected[fetch], rtol=rtol, atol=atol, err_msg=fetch)


# --- success paths ------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["mlp_frozen", "cond", "while_loop"])
def test_optimize_writes_a_valid_graph_that_computes_the_same(case, tmp_path):
    spec, out = case_spec(case), tmp_path / "opt.pb"
    fetch_args = [arg for fetch in spec["fetches"] for arg in ("--fetch", fetch)]
    code, _, stderr = run_dftool("optimize", FIXTURES / case / "graph.pb", out, *fetch_args)
    assert code == 0, stderr
    optimized = load_graph(out)  # parses and verifies
    assert len(optimized) <= len(load_graph(FIXTURES / case / "graph.pb"))
    for fetch in spec["fetches"]:
        optimized.tensor(fetch)  # fetched tensors keep their names
    results = tmp_path / "results.npz"
    code, _, stderr = run_dftool("run", out, "--feeds", FIXTURES / case / "feeds.npz", *fetch_args,
                                 "--output", results)
    assert code == 0, stderr
    assert_matches_tensorflow(results, case)


def test_default_fetches_are_the_graph_outputs(tmp_path):
    out = tmp_path / "opt.pb"
    code, _, stderr = run_dftool("optimize", MLP / "graph.pb", out)
    assert code == 0, stderr
    optimized = load_graph(out)
    for fetch in case_spec("mlp_frozen")["fetches"]:
        optimized.tensor(fetch)


def test_dash_pipeline_into_run(tmp_path):
    code, graph_bytes, stderr = run_dftool("optimize", MLP / "graph.pb", "-", binary=True)
    assert code == 0, stderr
    assert graph_io.parse_graphdef(graph_bytes, "<stdout>", "binary").node
    results = tmp_path / "results.npz"
    code, _, stderr = run_dftool("run", "-", "--feeds", MLP / "feeds.npz", "--fetch", "logits:0",
                                 "--fetch", "probs:0", "--output", results, input=graph_bytes)
    assert code == 0, stderr
    assert_matches_tensorflow(results, "mlp_frozen")


def test_reads_the_graph_from_stdin(tmp_path):
    out = tmp_path / "opt.pb"
    code, _, stderr = run_dftool("optimize", "-", out, input=(MLP / "graph.pb").read_bytes())
    assert code == 0, stderr
    assert load_graph(out).tensor("probs:0")


def test_text_on_stdout_and_by_file_name(tmp_path):
    code, text, stderr = run_dftool("optimize", MLP / "graph.pb", "-", "--text")
    assert code == 0, stderr
    assert 'name: "probs"' in text
    assert graph_io.parse_graphdef(text.encode(), "<stdout>", "text").node
    out = tmp_path / "opt.pbtxt"
    assert run_dftool("optimize", MLP / "graph.pb", out)[0] == 0
    assert graph_io.parse_graphdef(out.read_bytes(), str(out), "text").node


def test_list_passes_names_and_describes_every_pass():
    code, stdout, stderr = run_dftool("optimize", "--list-passes")
    assert code == 0, stderr
    lines = stdout.splitlines()
    classes = registered_passes()
    assert [line.split()[0] for line in lines] == pass_order()
    for line, name in zip(lines, pass_order()):
        assert classes[name].description, f"pass {name} has no description"
        assert line.split(None, 1)[1] == classes[name].description


def test_unused_nodes_go_and_kept_nodes_stay(wasteful_graph, tmp_path):
    out = tmp_path / "opt.pb"
    code, _, stderr = run_dftool("optimize", wasteful_graph, out, "--fetch", "out", "--keep", "debug")
    assert code == 0, stderr
    optimized = load_graph(out)
    assert "out" in optimized and "debug" in optimized and "x" in optimized
    assert "waste1" not in optimized and "waste2" not in optimized


def test_only_the_chosen_passes_run(wasteful_graph, tmp_path):
    report = tmp_path / "report.json"
    code, _, stderr = run_dftool("optimize", wasteful_graph, tmp_path / "o.pb", "--fetch", "out",
                                 "--passes", "dce", "--report", report)
    assert code == 0, stderr
    assert {run["name"] for run in json.loads(report.read_text())["passes"]} == {"dce"}
    code, _, stderr = run_dftool("optimize", wasteful_graph, tmp_path / "o.pb", "--fetch", "out",
                                 "--skip", "dce", "--report", report)
    assert code == 0, stderr
    assert "dce" not in {run["name"] for run in json.loads(report.read_text())["passes"]}


def test_dump_dir_writes_the_graph_after_each_changing_pass(wasteful_graph, tmp_path):
    dump = tmp_path / "dump"
    code, _, stderr = run_dftool("optimize", wasteful_graph, tmp_path / "o.pb", "--fetch", "out",
                                 "--dump-dir", dump)
    assert code == 0, stderr
    files = sorted(dump.iterdir())
    assert files, "nothing dumped although dce removed nodes"
    assert any(f.name.endswith("_dce.pbtxt") for f in files), [f.name for f in files]
    for path in files:
        assert path.stem.split("_", 1)[1] in pass_order(), path.name
        load_graph(path)  # every dump is a valid graph


@pytest.mark.parametrize("case", ["mlp_frozen", "convnet_frozen", "cond", "while_loop"])
def test_verify_passes_on_a_fixture(case, tmp_path):
    # The case's fetches: cond's unconsumed Switch outputs (graph outputs, so default fetches) are
    # dead on one branch, and random feeds pick the branch.
    fetch_args = [arg for fetch in case_spec(case)["fetches"] for arg in ("--fetch", fetch)]
    code, _, stderr = run_dftool("optimize", FIXTURES / case / "graph.pb", tmp_path / "o.pb", "--verify",
                                 *fetch_args)
    assert code == 0, stderr
    assert "verified" in stderr


def test_report_has_counts_before_and_after_and_every_pass_run(tmp_path):
    report, out = tmp_path / "report.json", tmp_path / "o.pb"
    code, _, stderr = run_dftool("optimize", MLP / "graph.pb", out, "--report", report)
    assert code == 0, stderr
    data = json.loads(report.read_text())
    assert data["schema"] == "dftool.optimize/2" and data["command"] == "optimize"
    original, optimized = load_graph(MLP / "graph.pb"), load_graph(out)
    assert data["nodes"] == {"before": len(original), "after": len(optimized)}
    assert set(data["edges"]) == {"before", "after"}
    assert data["edges"]["before"] == sum(len(n.inputs) + len(n.control_inputs) for n in original.nodes)
    assert data["edges"]["after"] == sum(len(n.inputs) + len(n.control_inputs) for n in optimized.nodes)
    runs = data["passes"]
    assert [run["name"] for run in runs if run["iteration"] == 1] == pass_order()
    for run in runs:
        assert {"name", "iteration", "changed", "seconds", "nodes_before", "nodes_after", "edges_before",
                "edges_after", "stats"} <= set(run)
    assert runs[0]["nodes_before"] == len(original) and runs[-1]["nodes_after"] == len(optimized)
    assert not runs[-1]["changed"] or data["iterations"] == 10  # stopped at a fixed point


def test_json_on_stdout(tmp_path):
    code, stdout, stderr = run_dftool("optimize", MLP / "graph.pb", tmp_path / "o.pb", "--json")
    assert code == 0, stderr
    assert json.loads(stdout)["nodes"]["before"] == len(load_graph(MLP / "graph.pb"))


# --- usage errors (exit 2) ----------------------------------------------------------------------

@pytest.mark.parametrize("flag", ["--passes", "--skip"])
def test_unknown_pass_is_named_with_the_valid_ones(flag, tmp_path):
    out = tmp_path / "o.pb"
    code, _, stderr = run_dftool("optimize", MLP / "graph.pb", out, flag, "dce,nosuchpass")
    assert code == 2
    line = error_line(stderr)
    assert "nosuchpass" in line
    for name in pass_order():
        assert name in line
    assert not out.exists()


def test_missing_fetch_is_named(tmp_path):
    code, _, stderr = run_dftool("optimize", MLP / "graph.pb", tmp_path / "o.pb", "--fetch", "nosuch:0")
    assert code == 2
    assert "nosuch" in error_line(stderr)


def test_fetch_of_a_missing_output_port_is_named(tmp_path):
    code, _, stderr = run_dftool("optimize", MLP / "graph.pb", tmp_path / "o.pb", "--fetch", "probs:7")
    assert code == 2
    assert "probs:7" in error_line(stderr)


def test_missing_keep_node_is_named(tmp_path):
    code, _, stderr = run_dftool("optimize", MLP / "graph.pb", tmp_path / "o.pb", "--keep", "ghost")
    assert code == 2
    assert "ghost" in error_line(stderr)


def test_passes_and_skip_together_are_refused(tmp_path):
    code, _, stderr = run_dftool("optimize", MLP / "graph.pb", tmp_path / "o.pb", "--passes", "dce",
                                 "--skip", "dce")
    assert code == 2
    line = error_line(stderr)
    assert "--passes" in line and "--skip" in line


@pytest.mark.parametrize("args", [["optimize"], ["optimize", str(MLP / "graph.pb")]])
def test_in_and_out_are_required(args):
    code, _, stderr = run_dftool(*args)
    assert code == 2
    error_line(stderr)


def test_json_cannot_share_stdout_with_the_graph():
    code, _, stderr = run_dftool("optimize", MLP / "graph.pb", "-", "--json", binary=True)
    assert code == 2
    assert "--json" in error_line(stderr)


def test_invalid_input_is_exit_3(tmp_path):
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"\xff\x00 not a graph")
    code, _, stderr = run_dftool("optimize", bad, tmp_path / "o.pb")
    assert code == 3
    assert "bad.pb" in error_line(stderr)


# --- a failing pass (in-process) ----------------------------------------------------------------

def _existing_out(tmp_path):
    out = tmp_path / "o.pb"
    out.write_bytes(b"previous contents")
    return out


def test_a_pass_that_raises_is_named_and_out_is_untouched(tmp_path, monkeypatch, capsys):
    from cli.main import main

    def explode(self, graph, ctx):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(registered_passes()["dce"], "run", explode)
    out = _existing_out(tmp_path)
    assert main(["optimize", str(MLP / "graph.pb"), str(out)]) == 1
    line = error_line(capsys.readouterr().err)
    assert "'dce'" in line and "kaboom" in line
    assert out.read_bytes() == b"previous contents"


def test_a_pass_that_breaks_the_graph_is_named_and_out_is_untouched(tmp_path, monkeypatch, capsys):
    from cli.main import main

    def make_a_cycle(self, graph, ctx):
        first = graph.add_node("Identity", "loop_a", inputs=[graph.tensor("x")], attrs={"T": dtypes.float32})
        second = graph.add_node("Identity", "loop_b", inputs=[first.output(0)], attrs={"T": dtypes.float32})
        first.set_input(0, second.output(0))  # a cycle without NextIteration: verify() refuses it
        return PassResult(changed=True, stats={"broken": 1})

    monkeypatch.setattr(registered_passes()["dce"], "run", make_a_cycle)
    out = _existing_out(tmp_path)
    assert main(["optimize", str(MLP / "graph.pb"), str(out)]) == 1
    assert "'dce'" in error_line(capsys.readouterr().err)
    assert out.read_bytes() == b"previous contents"


_FIXTURE_ROOT = Path(__file__).resolve().parent / "fixtures" / "tf"


@pytest.mark.parametrize("case", sorted(p.parent.name for p in _FIXTURE_ROOT.glob("*/graph.pb")))
def test_optimize_verify_passes_on_every_fixture(case, tmp_path, capsys):
    """`dftool optimize IN OUT --verify` (all passes, default fetches, generated feeds) exits 0 on
    every TensorFlow fixture (in-process entry point, to keep the suite fast), text and sparse
    inputs included: the generated feeds are CSV lines, numbers, tf.Examples and SparseTensors
    where the graph parses them (graphtool/feeds/constraints.py)."""
    from cli.main import main

    code = main(["optimize", str(_FIXTURE_ROOT / case / "graph.pb"), str(tmp_path / "out.pb"), "--verify", "-q"])
    assert code == 0, capsys.readouterr().err
