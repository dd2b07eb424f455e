"""Output that pipes (docs/commands.md): what the user asked to see goes to stdout unless a graph or JSON
has it, notices to stderr; off a terminal nothing wraps or splits names; -q silences notices but
never the result; -v adds detail on every command; a bare `dftool` prints the usage; progress
shows on a terminal only."""
import io
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest
from rich.console import Console

from cli import output
from graphtool import dtypes
from graphtool.builder import GraphBuilder

from .helpers import REPO_ROOT, run_dftool, run_dftool_on_terminal

SAMPLES = REPO_ROOT / "sample_graphs"
MLP = SAMPLES / "mlp.pb"
MLP_FEEDS = SAMPLES / "mlp.feeds.npz"
# 60 characters, as the issue says: a scope path such as real models have.
LONG_NAME = "encoder/layer_11/attention/self/query/kernel/Read/ReadVariable"[:60]


@pytest.fixture()
def long_named_graph(tmp_path):
    """y = MatMul(x, w) with x and the MatMul named by 60-character names."""
    assert len(LONG_NAME) == 60
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [2, 3], name=LONG_NAME)
    w = b.const(np.ones((3, 4), np.float32), name="w")
    b.op("MatMul", [x, w], name=LONG_NAME[:-6] + "MatMul")
    path = tmp_path / "long.pb"
    path.write_bytes(b.to_graphdef().SerializeToString())
    feed = tmp_path / "x.npy"
    np.save(feed, np.ones((2, 3), np.float32))
    return path, feed


def run_to_files(tmp_path, *args, columns="40"):
    """Run dftool with stdout and stderr redirected to files (not pipes) and a narrow COLUMNS,
    as `dftool ... > out.txt 2> err.txt` in a small window; returns (code, stdout, stderr)."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "COLUMNS": columns}
    out_path, err_path = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        code = subprocess.run([sys.executable, "-m", "cli.main", *map(str, args)], stdout=out, stderr=err,
                              stdin=subprocess.DEVNULL, cwd=REPO_ROOT, env=env, timeout=120).returncode
    return code, out_path.read_text(), err_path.read_text()


# --- where things go --------------------------------------------------------------------------

def test_inspect_tables_go_to_stdout_so_grep_finds_the_matmul_rows():
    code, stdout, stderr = run_dftool("inspect", MLP)
    assert code == 0, stderr
    rows = [line for line in stdout.splitlines() if "MatMul" in line]
    assert rows and rows[0].split() == ["MatMul", "2"]
    assert stderr == ""
    assert "│" not in stdout and "━" not in stdout   # plain columns off a terminal, no box lines


def test_run_result_is_the_last_line_of_stdout():
    code, stdout, stderr = run_dftool("run", MLP, "--feeds", MLP_FEEDS)
    assert code == 0, stderr
    assert stdout.splitlines()[-1].startswith("probs  float32[4, 10]  [")


def test_quiet_silences_notices_but_never_the_result(tmp_path):
    code, stdout, stderr = run_dftool("run", MLP, "--feeds", MLP_FEEDS, "--trace", tmp_path / "t.json", "-q")
    assert code == 0 and stdout.startswith("probs  float32[4, 10]") and stderr == ""
    code, stdout, stderr = run_dftool("inspect", MLP, "-q")
    assert code == 0 and "MatMul" in stdout and stderr == ""
    code, stdout, stderr = run_dftool("profile", MLP, "--feeds", MLP_FEEDS, "--repeat", 1, "--warmup", 0, "-q")
    assert code == 0 and "time per op type" in stdout and stderr == ""
    code, stdout, stderr = run_dftool("prune", MLP, tmp_path / "p.pb", "--fetch", "probs", "-q")
    assert code == 0 and stdout == "" and stderr == ""


def test_with_json_on_stdout_the_human_output_moves_to_stderr():
    code, stdout, stderr = run_dftool("run", MLP, "--feeds", MLP_FEEDS, "--json")
    assert code == 0, stderr
    assert json.loads(stdout)["command"] == "run"
    assert "probs  float32[4, 10]" in stderr
    code, stdout, stderr = run_dftool("inspect", MLP, "--json")
    assert code == 0 and json.loads(stdout)["node_count"] == 11 and "MatMul" in stderr
    code, stdout, stderr = run_dftool("inspect", MLP, "--json", "-q")   # JSON was asked for: tables are extra
    assert code == 0 and json.loads(stdout) and stderr == ""


def test_place_explain_goes_to_stdout_unless_the_graph_does(tmp_path):
    code, stdout, stderr = run_dftool("place", MLP, tmp_path / "p.pb", "--explain", "-q")
    assert code == 0, stderr
    assert "why each node went where it did" in stdout and stderr == ""
    code, graph, stderr = run_dftool("place", MLP, "-", "--explain", binary=True)
    assert code == 0 and "why each node went where it did" in stderr
    assert b"why each node" not in graph and b"MatMul" in graph


def test_graph_summaries_are_notices_on_stderr(tmp_path):
    code, stdout, stderr = run_dftool("optimize", MLP, tmp_path / "o.pb")
    assert code == 0 and stdout == "" and "ops before/after" in stderr


# --- never wrap, never split a name ---------------------------------------------------------

def test_a_60_character_name_is_never_split_when_stdout_is_a_file(tmp_path, long_named_graph):
    graph, feed = long_named_graph
    code, stdout, _ = run_to_files(tmp_path, "inspect", graph)
    assert code == 0
    assert any(line.split()[:2] == [LONG_NAME, "Placeholder"] for line in stdout.splitlines()), stdout
    code, stdout, _ = run_to_files(tmp_path, "run", graph, "--feed", f"{LONG_NAME}={feed}")
    assert code == 0 and stdout.startswith(LONG_NAME[:-6] + "MatMul  float32[2, 4]")
    code, stdout, _ = run_to_files(tmp_path, "profile", graph, "--feed", f"{LONG_NAME}={feed}", "--repeat", 1)
    assert code == 0
    assert any(line.startswith(LONG_NAME + " ") for line in stdout.splitlines()), stdout


def test_a_60_character_name_is_never_split_when_stderr_is_a_file(tmp_path, long_named_graph):
    graph, _ = long_named_graph
    code, _, stderr = run_to_files(tmp_path, "place", graph, "-", "--explain", "--text")
    assert code == 0
    explained = [line for line in stderr.splitlines() if line.startswith(LONG_NAME + " ")]
    assert explained and "Placeholder" in explained[0]
    code, _, stderr = run_to_files(tmp_path, "prune", graph, tmp_path / "p.pb", "--fetch",
                                   LONG_NAME[:-6] + "MatMul", "--feed", LONG_NAME + ":0", "-v")
    assert code == 0
    assert any(line.split()[:2] == [LONG_NAME + ":0", LONG_NAME] for line in stderr.splitlines()), stderr
    # A long notice is one line too, however narrow COLUMNS says the window is.
    assert any(line.startswith(f"loading {graph}: ") and line.endswith(" s") and len(line) > 40
               for line in stderr.splitlines()), stderr


# --- -v on every command, the bare command ---------------------------------------------------

@pytest.mark.parametrize("args", [
    ("inspect", MLP),
    ("run", MLP, "--feeds", MLP_FEEDS),
    ("profile", MLP, "--feeds", MLP_FEEDS, "--repeat", 1, "--warmup", 0),
    ("optimize", MLP, "{out}"),
    ("prune", MLP, "{out}", "--fetch", "probs"),
    ("place", MLP, "{out}"),
    ("partition", SAMPLES / "multi_device.pb", "{out}"),
    ("grad", MLP, "{out}", "--y", "probs"),
], ids=lambda args: args[0])
def test_verbose_adds_stage_timings_on_every_command(args, tmp_path):
    args = [str(tmp_path / "out.pb") if a == "{out}" else a for a in args]
    code, _, quiet_stderr = run_dftool(*args)
    assert code == 0, quiet_stderr
    code, _, stderr = run_dftool(*args, "-v")
    assert code == 0, stderr
    timed = [line for line in stderr.splitlines() if line.startswith("loading ") and line.endswith(" s")]
    assert timed and timed[0] not in quiet_stderr


def test_a_bare_dftool_prints_the_whole_usage():
    code, stdout, stderr = run_dftool()
    assert code == 2 and stdout == ""
    assert stderr.startswith("Usage: dftool [OPTIONS] COMMAND [ARGS]...")
    assert "Commands:" in stderr and len(stderr.splitlines()) > 10
    for command in ("inspect", "run", "optimize", "prune", "place", "partition", "grad", "profile"):
        assert f"\n  {command} " in stderr


# --- progress ----------------------------------------------------------------------------------

def test_no_progress_or_control_codes_on_a_pipe(tmp_path):
    for args in (("run", MLP, "--feeds", MLP_FEEDS), ("optimize", MLP, tmp_path / "o.pb", "--verify")):
        code, stdout, stderr = run_dftool(*args)
        assert code == 0, stderr
        assert "\x1b[" not in stderr + stdout and " ..." not in stderr


def test_a_long_stage_shows_a_spinner_on_a_terminal_only(monkeypatch):
    terminal = io.StringIO()
    monkeypatch.setattr(output, "err_console", Console(file=terminal, force_terminal=True, width=80))
    monkeypatch.setattr(output, "SPINNER_DELAY_S", 0.0)
    monkeypatch.setattr(output.settings, "quiet", False)
    with output.stage("optimizing big.pb"):
        time.sleep(0.3)
    assert "optimizing big.pb ..." in terminal.getvalue()

    piped = io.StringIO()
    monkeypatch.setattr(output, "err_console", Console(file=piped, force_terminal=False, width=80))
    with output.stage("optimizing big.pb"):
        time.sleep(0.3)
    assert piped.getvalue() == ""


def test_a_quick_stage_shows_no_spinner(monkeypatch):
    terminal = io.StringIO()
    monkeypatch.setattr(output, "err_console", Console(file=terminal, force_terminal=True, width=80))
    monkeypatch.setattr(output.settings, "quiet", False)
    with output.stage("loading small.pb"):
        pass
    time.sleep(output.SPINNER_DELAY_S + 0.1)   # the timer was cancelled: nothing starts late
    assert terminal.getvalue() == ""


@pytest.mark.slow
def test_a_large_graph_shows_a_spinner_on_a_terminal_and_none_on_the_pipe(tmp_path):
    """End to end: stderr on a pseudo-terminal gets rich's spinner while a 20,000-node graph is
    loaded and inspected (together well past the spinner's delay; which stage outlasts it alone
    depends on the machine), cleared afterwards; stdout, a pipe, gets plain text."""
    b = GraphBuilder()
    tensor = b.placeholder(dtypes.float32, [2], name="x")
    for index in range(20000):
        tensor = b.op("Identity", [tensor], name=f"n{index}")
    graph = tmp_path / "chain.pb"
    graph.write_bytes(b.to_graphdef().SerializeToString())
    code, terminal, stdout = run_dftool_on_terminal("inspect", graph.name, stream="stderr", cwd=tmp_path)
    assert code == 0
    assert re.search(rb"(loading|inspecting) chain\.pb \.\.\.", terminal) and b"\x1b[2K" in terminal
    assert b"\x1b[" not in stdout and b"20001 nodes" in stdout
