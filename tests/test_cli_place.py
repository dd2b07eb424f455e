"""`dftool place` through the real entry point: placed graphs that still run, the tables, --explain,
--json/--report, --cost-model, '-' pipelines, and every error path with its exit code."""
import json

import numpy as np

from graphtool.builder import GraphBuilder

from .helpers import DEVICE_PREFIX, FIXTURES, error_line, load_graph, mlp_graph, run_dftool, write_graph


def matmul_graph(path) -> str:
    b = GraphBuilder()
    x = b.placeholder("float32", [1024, 1024], name="x")
    b.tanh(b.matmul(x, b.const(np.ones((1024, 1024), np.float32), name="w"), name="big"), name="out")
    return write_graph(b.graph, path)


def test_placed_fixture_runs_and_matches_tensorflow(tmp_path):
    case = FIXTURES / "while_loop"
    out = tmp_path / "placed.pb"
    code, _, stderr = run_dftool("place", case / "graph.pb", out, "--devices", "cpu:0,cpu:1")
    assert code == 0, stderr
    assert "placement" in stderr and "cpu:1" in stderr and "estimated cost" in stderr
    assert {n.device for n in load_graph(out).nodes} <= {DEVICE_PREFIX + "CPU:0", DEVICE_PREFIX + "CPU:1"}
    fetches = json.loads((case / "case.json").read_text())["fetches"]
    code, _, stderr = run_dftool("run", out, "--feeds", case / "feeds.npz", "--expect", case / "expected.npz",
                                 "--rtol", "1e-4", *[arg for fetch in fetches for arg in ("--fetch", fetch)])
    assert code == 0, stderr


def test_pipeline_and_soft_placement_table(tmp_path):
    graph = mlp_graph()
    graph.node("logits").device = "/device:GPU:0"
    source = write_graph(graph, tmp_path / "mlp.pb")
    code, placed, stderr = run_dftool("place", source, "-", "--devices", "cpu:0", binary=True)
    assert code == 0, stderr
    assert "softened constraints" in stderr and "/device:GPU:0" in stderr and "1 constraint(s) softened" in stderr
    code, _, stderr = run_dftool("run", "-", "--fetch", "logits", "--feed", f"x={_save(tmp_path)}", input=placed)
    assert code == 0, stderr


def _save(tmp_path) -> str:
    path = tmp_path / "x.npy"
    np.save(path, np.ones((2, 4), np.float32))
    return str(path)


def test_explain_and_json_report(tmp_path):
    source = matmul_graph(tmp_path / "mm.pb")
    report_path = tmp_path / "report.json"
    code, stdout, stderr = run_dftool("place", source, tmp_path / "o.pb", "--devices", "cpu:0,gpu:0",
                                      "--explain", "--json", "--report", report_path)
    assert code == 0, stderr
    assert "why each node went where it did" in stderr and "cheapest" in stderr
    report = json.loads(stdout)
    assert report == json.loads(report_path.read_text())
    assert report["schema"] == "dftool.place/2" and report["command"] == "place"
    big = next(n for n in report["nodes"] if n["name"] == "big")
    assert big["device"] == DEVICE_PREFIX + "GPU:0" and {c["device"] for c in big["candidates"]} == {"cpu:0", "gpu:0"}


def test_cost_model_changes_the_decision(tmp_path):
    source = matmul_graph(tmp_path / "mm.pb")
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"schema": "dftool.cost_model/1", "nodes": {"big": {"GPU": 5.0, "CPU": 0.01}}}))
    out = tmp_path / "o.pb"
    code, _, stderr = run_dftool("place", source, out, "--devices", "cpu:0,gpu:0", "--cost-model", costs, "-q")
    assert code == 0 and stderr == ""
    assert load_graph(out).node("big").device == DEVICE_PREFIX + "CPU:0"


def test_errors_have_their_exit_codes_and_leave_out_untouched(tmp_path):
    conflict = mlp_graph()
    conflict.node("dense/relu").device = "/device:CPU:0"
    conflict.node("out/matmul").device = "/device:CPU:1"
    conflict.node("dense/relu").set_attr("_class", ["loc:@out/matmul"], "list(string)")
    pinned = mlp_graph()
    pinned.node("logits").device = "/device:GPU:0"
    bad_costs = tmp_path / "bad.json"
    bad_costs.write_text('{"schema": "dftool.cost_model/1", "nodes": {"big": {"GPU": "fast"}}}')
    cases = [
        (write_graph(mlp_graph(), tmp_path / "a.pb"), ("--devices", "cpu:0,,cpu:1"), 2,
         "error: --devices: bad device list 'cpu:0,,cpu:1'"),
        (write_graph(mlp_graph(), tmp_path / "b.pb"), ("--devices", "cpu:0,npu:1"), 2,
         "error: unknown device 'npu:1': device type NPU is not one of CPU, GPU"),
        (write_graph(pinned, tmp_path / "c.pb"), ("--devices", "cpu:0", "--no-soft-placement"), 3,
         "error: node 'logits' (Add) requests device '/device:GPU:0', but no available device matches it"),
        (write_graph(conflict, tmp_path / "d.pb"), ("--devices", "cpu:0,cpu:1", "--no-soft-placement"), 3,
         "error: colocation conflict: node 'dense/relu' requests '/device:CPU:0' but node 'out/matmul' requests "
         "'/device:CPU:1'"),
        (write_graph(mlp_graph(), tmp_path / "e.pb"), ("--cost-model", bad_costs), 3,
         f"error: cost model '{bad_costs}': nodes['big']['GPU'] must be a non-negative number"),
        (write_graph(mlp_graph(), tmp_path / "f.pb"), ("--cost-model", tmp_path / "none.json"), 3,
         f"error: cost model '{tmp_path / 'none.json'}': no such file"),
    ]
    out = tmp_path / "out.pb"
    out.write_bytes(b"untouched")
    for source, args, exit_code, message in cases:
        code, _, stderr = run_dftool("place", source, out, *args)
        assert code == exit_code and error_line(stderr).startswith(message), stderr
    assert out.read_bytes() == b"untouched"


def test_json_cannot_share_stdout_with_the_graph():
    code, _, stderr = run_dftool("place", FIXTURES / "mlp_frozen" / "graph.pb", "-", "--json")
    assert code == 2 and "--json writes to stdout" in error_line(stderr)
