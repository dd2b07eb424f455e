"""`dftool partition` through the real entry point: place | partition | run pipelines, --split-dir,
--compress, --json/--report, -q/-v/--text, and every error path with its exit code."""
import json

import numpy as np

from .helpers import DEVICE_PREFIX, FIXTURES, error_line, load_graph, mlp_graph, run_dftool, write_graph


def placed_mlp(tmp_path) -> str:
    """The MLP with its first layer on cpu:0 and the rest on cpu:1 (short device names)."""
    graph = mlp_graph()
    for node in graph.nodes:
        node.device = "cpu:0" if node.name in ("x", "dense/w", "dense/matmul") else "cpu:1"
    return write_graph(graph, tmp_path / "mlp.pbtxt")


def test_place_partition_run_pipeline_reproduces_tensorflow():
    case = FIXTURES / "nested_while"
    fetches = json.loads((case / "case.json").read_text())["fetches"]
    code, placed, stderr = run_dftool("place", case / "graph.pb", "-", "--devices", "cpu:0,cpu:1,cpu:2",
                                      binary=True)
    assert code == 0, stderr
    code, partitioned, stderr = run_dftool("partition", "-", "-", input=placed, binary=True)
    assert code == 0, stderr
    assert "partitions" in stderr and "transfer(s)" in stderr
    code, _, stderr = run_dftool("run", "-", "--feeds", case / "feeds.npz", "--expect", case / "expected.npz",
                                 *[arg for fetch in fetches for arg in ("--fetch", fetch)], input=partitioned)
    assert code == 0, stderr


def test_output_table_split_dir_and_text(tmp_path):
    source = placed_mlp(tmp_path)
    out, split = tmp_path / "out.pbtxt", tmp_path / "parts"
    code, _, stderr = run_dftool("partition", source, out, "--split-dir", split)
    assert code == 0, stderr
    assert "cpu_0" in stderr and "cpu_1" in stderr and f"wrote {split / 'cpu_0.pb'}" in stderr
    whole = load_graph(out)
    assert {n.op for n in whole.nodes} >= {"_Send", "_Recv"}
    assert sorted(p.name for p in split.iterdir()) == ["cpu_0.pb", "cpu_1.pb"]
    for index in (0, 1):
        part = load_graph(split / f"cpu_{index}.pb")
        assert {n.device for n in part.nodes} == {f"{DEVICE_PREFIX}CPU:{index}"}
    assert len(load_graph(split / "cpu_0.pb")) + len(load_graph(split / "cpu_1.pb")) == len(whole)
    code, text, _ = run_dftool("partition", source, "-", "--text", "-q")
    assert code == 0 and 'op: "_Recv"' in text


def test_json_report_and_compression(tmp_path):
    source = placed_mlp(tmp_path)
    report_path = tmp_path / "report.json"
    code, stdout, stderr = run_dftool("partition", source, tmp_path / "o.pb", "--compress", "bf16",
                                      "--json", "--report", report_path)
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report == json.loads(report_path.read_text())
    assert report["command"] == "partition" and report["schema"] == "dftool.partition/2"
    assert report["sends"] == report["recvs"] == 1 and report["compress"] == "bf16"
    (transfer,) = report["transfers"]
    assert transfer["carries"] == "dense/matmul" and transfer["dtype"] == "bfloat16"
    assert transfer["from"] == DEVICE_PREFIX + "CPU:0" and transfer["to"] == DEVICE_PREFIX + "CPU:1"
    assert report["bytes"]["transfers_of_unknown_size"] == 1   # the batch dimension is unknown
    assert [d["label"] for d in report["devices"]] == ["cpu_0", "cpu_1"]
    assert "bf16" in stderr


def test_compressed_graph_runs_close_to_the_original(tmp_path):
    source = placed_mlp(tmp_path)
    feed = tmp_path / "x.npy"
    np.save(feed, np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4))
    outputs = {}
    for mode in ("none", "fp16"):
        out = tmp_path / f"{mode}.pb"
        assert run_dftool("partition", source, out, "--compress", mode, "-q")[0] == 0
        code, _, stderr = run_dftool("run", out, "--feed", f"x={feed}", "--fetch", "logits",
                                     "--output", tmp_path / f"{mode}.npz")
        assert code == 0, stderr
        outputs[mode] = np.load(tmp_path / f"{mode}.npz")["logits"]
    assert not np.array_equal(outputs["none"], outputs["fp16"])
    np.testing.assert_allclose(outputs["fp16"], outputs["none"], rtol=2e-3, atol=2e-3)


def test_verbose_lists_transfers_and_quiet_prints_nothing(tmp_path):
    source = placed_mlp(tmp_path)
    code, _, stderr = run_dftool("partition", source, tmp_path / "o.pb", "-v")
    assert code == 0 and "edge_0_dense/matmul: dense/matmul/_send_to_cpu_1 -> dense/matmul/_recv_on_cpu_1" in stderr
    code, _, stderr = run_dftool("partition", source, tmp_path / "o.pb", "-q")
    assert code == 0 and stderr == ""


# --- errors ---------------------------------------------------------------------------------------

def test_an_unplaced_graph_is_exit_3_and_leaves_out_untouched(tmp_path):
    source = write_graph(mlp_graph(), tmp_path / "mlp.pb")
    out = tmp_path / "out.pb"
    out.write_bytes(b"keep me")
    code, _, stderr = run_dftool("partition", source, out)
    assert code == 3
    assert error_line(stderr) == "error: node 'x' (Placeholder) has no device (hint: run dftool place first)"
    assert out.read_bytes() == b"keep me"


def test_usage_errors_are_exit_2(tmp_path):
    source = placed_mlp(tmp_path)
    code, _, stderr = run_dftool("partition", source, "-", "--json")
    assert code == 2 and "--json writes to stdout" in error_line(stderr)
    code, _, stderr = run_dftool("partition", source, tmp_path / "o.pb", "--compress", "int8")
    assert code == 2 and "int8" in error_line(stderr)
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, stderr = run_dftool("partition", source, tmp_path / "o.pb", "--split-dir", blocker)
    assert code == 2 and "is not a directory" in error_line(stderr)
    assert not (tmp_path / "o.pb").exists()


def test_unreadable_input_is_exit_3(tmp_path):
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"\xff\xfe not a graph")
    code, _, stderr = run_dftool("partition", bad, tmp_path / "o.pb")
    assert code == 3 and str(bad) in error_line(stderr)
    code, _, stderr = run_dftool("partition", tmp_path / "missing.pb", tmp_path / "o.pb")
    assert code in (2, 3) and "missing.pb" in error_line(stderr)
