"""`dftool profile` and `dftool run --trace` through the real entry point: tables, the report,
traces (plain and gzipped, one process per device), the cost model that `place` reads, the
progress bar, and every failure with its exit code and one-line message."""
import gzip
import io
import json
import re

import pytest
from rich.console import Console

from cli import common, profile_cmd

from .helpers import REPO_ROOT, error_line, run_dftool
from .trace_format import validate_trace

SAMPLES = REPO_ROOT / "sample_graphs"


def sample_args(name: str) -> list:
    return [SAMPLES / f"{name}.pb", "--feeds", SAMPLES / f"{name}.feeds.npz"]


def test_profile_prints_tables_and_writes_report_trace_and_cost_model(tmp_path):
    report, trace, costs = tmp_path / "r.json", tmp_path / "t.json", tmp_path / "c.json"
    code, stdout, stderr = run_dftool("profile", *sample_args("while_loop"), "--repeat", 3, "--warmup", 1,
                                      "--top", 4, "--report", report, "--trace", trace, "--cost-model-out", costs)
    assert code == 0, stderr
    for title in ("time per op type", "top 4 nodes by time", "top 4 nodes by memory", "peak memory",
                  "loop iterations", "critical path:", "3 measured step(s) after 1 warm-up"):
        assert title in stdout and title not in stderr, title   # the tables asked for: stdout
    document = json.loads(report.read_text())
    assert document["schema"] == "dftool.profile/2" and document["command"] == "profile"
    assert document["repeat"] == 3
    assert document["loop_iterations"] == {"double/while_context": 3, "accumulate/while_context": 6}
    timeline = json.loads(trace.read_text())
    assert validate_trace(timeline) == []
    assert len([e for e in timeline["traceEvents"] if e["ph"] == "X"]) == document["nodes_executed"]
    assert json.loads(costs.read_text())["schema"] == "dftool.cost_model/1"


def test_profile_json_on_stdout_and_quiet_stderr():
    code, stdout, stderr = run_dftool("profile", *sample_args("mlp"), "--repeat", 2, "--json", "-q")
    assert code == 0 and stderr == ""
    document = json.loads(stdout)
    assert document["schema"] == "dftool.profile/2"
    assert document["critical_path"]["length_ms"] <= document["critical_path"]["step_time_ms"]
    assert {o["op"] for o in document["ops"]} >= {"MatMul", "BiasAdd", "Relu", "Softmax"}


def test_the_cost_model_out_is_read_by_place(tmp_path):
    costs, placed = tmp_path / "c.json", tmp_path / "placed.pb"
    code, _, stderr = run_dftool("profile", *sample_args("mlp"), "--repeat", 2, "--cost-model-out", costs, "-q")
    assert code == 0, stderr
    code, stdout, stderr = run_dftool("place", SAMPLES / "mlp.pb", placed, "--devices", "cpu:0,cpu:1",
                                      "--cost-model", costs, "--json")
    assert code == 0, stderr
    assert json.loads(stdout)["cost_model"] == str(costs)


def test_run_trace_gzipped_and_multi_device(tmp_path):
    trace = tmp_path / "step.json.gz"
    code, _, stderr = run_dftool("run", *sample_args("multi_device"), "--trace", trace)
    assert code == 0, stderr
    assert f"to {trace}" in stderr
    document = json.loads(gzip.decompress(trace.read_bytes()))
    assert validate_trace(document) == []
    processes = [e["args"]["name"] for e in document["traceEvents"] if e["name"] == "process_name"]
    assert processes == ["cpu:0", "cpu:1"]
    assert {e["ph"] for e in document["traceEvents"]} >= {"s", "f", "C", "X", "M"}


@pytest.mark.parametrize("args, code, message", [
    (["profile", *sample_args("mlp"), "--repeat", 0], 2, "Invalid value for '--repeat'"),
    (["profile", *sample_args("mlp"), "--warmup", -1], 2, "Invalid value for '--warmup'"),
    (["profile", SAMPLES / "mlp.pb"], 2, "missing feed for placeholder 'x'"),
    (["profile", *sample_args("mlp"), "--fetch", "nope"], 2, "fetch 'nope': no node named 'nope'"),
    (["profile", "missing.pb"], 3, "missing.pb"),
    (["profile", *sample_args("mlp"), "--device", "tpu"], 2, "unknown device 'tpu'"),
])
def test_profile_failures_exit_with_one_line(args, code, message):
    got, stdout, stderr = run_dftool(*args)
    assert got == code, stderr
    assert message in error_line(stderr)


def test_an_unwritable_trace_fails_and_writes_nothing(tmp_path):
    report = tmp_path / "r.json"
    code, _, stderr = run_dftool("profile", *sample_args("mlp"), "--repeat", 1, "--report", report,
                                 "--trace", tmp_path / "missing" / "t.json")
    assert code == 2 and "does not exist" in error_line(stderr)
    assert not report.exists()
    code, _, stderr = run_dftool("run", *sample_args("mlp"), "--trace", tmp_path / "missing" / "t.json")
    assert code == 2 and "does not exist" in error_line(stderr)


def test_no_progress_bar_when_stderr_is_not_a_terminal():
    code, _, stderr = run_dftool("profile", *sample_args("mlp"), "--repeat", 2)
    assert code == 0 and "\x1b[" not in stderr and "profiling" not in stderr


def test_the_progress_bar_shows_on_a_terminal_once_a_profile_takes_a_while(monkeypatch):
    output = io.StringIO()
    terminal = Console(file=output, force_terminal=True, width=80)
    monkeypatch.setattr(profile_cmd, "console", terminal)
    monkeypatch.setattr(profile_cmd, "_PROGRESS_AFTER_S", 0.0)
    monkeypatch.setattr(common.settings, "quiet", False)
    with profile_cmd._ProgressBar(total=3) as progress:
        for _ in range(3):
            progress.advance()
    assert "profiling" in output.getvalue() and "3/3" in output.getvalue()
    monkeypatch.setattr(common.settings, "quiet", True)
    quiet = profile_cmd._ProgressBar(total=3)
    quiet.advance()
    assert quiet._progress is None


def test_a_time_boxed_profile_counts_steps_without_a_bound_or_an_eta(monkeypatch):
    output = io.StringIO()
    monkeypatch.setattr(profile_cmd, "console", Console(file=output, force_terminal=True, width=80))
    monkeypatch.setattr(profile_cmd, "_PROGRESS_AFTER_S", 0.0)
    monkeypatch.setattr(common.settings, "quiet", False)
    with profile_cmd._ProgressBar(total=1002, time_boxed=True) as progress:
        for _ in range(3):
            progress.advance()
    shown = output.getvalue()
    assert "3 steps" in shown and "/1002" not in shown


def test_profile_shows_medians_with_spread_and_the_first_run_apart():
    code, stdout, stderr = run_dftool("profile", *sample_args("mlp"), "--repeat", 5, "--warmup", 2)
    assert code == 0, stderr
    header = next(line for line in stdout.splitlines() if line.startswith("op "))
    assert header.split() == ["op", "nodes", "calls", "median", "ms", "±", "%", "cum", "%", "GFLOP/s", "memory"]
    first = next(line for line in stdout.splitlines() if line.startswith("first run "))
    assert re.fullmatch(r"first run \d+\.\d{3} ms \(building the plan, compiling, first allocations; not in "
                        r"the figures below\); other warm-up steps \d+\.\d{3} ms", first), first


def test_profile_max_time_boxes_the_measured_steps():
    code, stdout, stderr = run_dftool("profile", *sample_args("mlp"), "--max-time", "0.000001", "--warmup", 0,
                                      "--json")
    assert code == 0, stderr
    document = json.loads(stdout)
    assert (document["repeat"], document["stopped_by"], document["warmup_ms"]) == (1, "max_time", [])
    assert document["warnings"] == ["--warmup 0: the first measured step includes the first run's one-off work "
                                    "(building the plan, compiling, first allocations)"]
    assert "warning: --warmup 0: the first measured step" in stderr
    code, stdout, _ = run_dftool("profile", *sample_args("mlp"), "--max-time", "0.000001", "--warmup", 1)
    assert "1 measured step(s) (--max-time reached) after 1 warm-up" in stdout


@pytest.mark.parametrize("args, message", [
    (["--max-time", "0"], "Invalid value for '--max-time'"),
    (["--max-time", "soon"], "Invalid value for '--max-time'"),
])
def test_profile_max_time_must_be_a_positive_number(args, message):
    code, _, stderr = run_dftool("profile", *sample_args("mlp"), *args)
    assert code == 2 and message in stderr


def test_profile_counts_flops_per_step_and_the_gflops_achieved():
    code, stdout, stderr = run_dftool("profile", *sample_args("mlp"), "--repeat", 3, "--json")
    assert code == 0, stderr
    document = json.loads(stdout)
    nodes = {n["name"]: n for n in document["nodes"]}
    # x is fed as [4, 16]: dense is 4x16 @ 16x32, logits 4x32 @ 32x10, at 2 FLOPs per multiply-add.
    assert (nodes["dense/MatMul"]["flops"], nodes["logits/MatMul"]["flops"]) == (2 * 4 * 16 * 32, 2 * 4 * 32 * 10)
    matmul = next(o for o in document["ops"] if o["op"] == "MatMul")
    assert matmul["flops"] == 2 * 4 * 16 * 32 + 2 * 4 * 32 * 10
    assert matmul["gflops_per_s"] == pytest.approx(matmul["flops"] / (matmul["median_ms"] * 1e6), rel=1e-3)
    assert nodes["x"]["flops"] == 0 and nodes["x"]["gflops_per_s"] is None          # a source does no arithmetic
    assert document["flops_per_step"] == sum(n["flops"] for n in document["nodes"])
    assert re.search(r"^work: \d+(\.\d+)? KFLOP per step, \S+ GFLOP/s achieved in the median step$",
                     stderr, re.M)   # the tables go to stderr with --json


def test_a_loop_bodys_flops_count_every_iteration():
    code, stdout, stderr = run_dftool("profile", *sample_args("while_loop"), "--repeat", 2, "--json")
    assert code == 0, stderr
    nodes = {n["name"]: n for n in json.loads(stdout)["nodes"]}
    # accumulate/Mul multiplies a float32[3] once per iteration, 6 iterations per step.
    assert (nodes["accumulate/Mul"]["calls"], nodes["accumulate/Mul"]["flops"]) == (6, 3 * 6)
