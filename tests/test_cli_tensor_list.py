"""TensorList graphs through the command line: run, optimize, place | partition | run against
TensorFlow's values, and a list fetched into an .npz refused by name."""
from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import error_line, run_dftool

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tf"
CASE = FIXTURES / "op_tensor_list_while"


def _fetch_args():
    fetches = json.loads((CASE / "case.json").read_text())["fetches"]
    return [arg for fetch in fetches for arg in ("--fetch", fetch)]


def test_run_optimize_and_partition_a_list_loop_match_tensorflow(tmp_path):
    common = ["--feeds", CASE / "feeds.npz", *_fetch_args(), "--expect", CASE / "expected.npz"]
    code, _, err = run_dftool("run", CASE / "graph.pb", *common)
    assert code == 0, err
    optimized = tmp_path / "optimized.pb"
    code, _, err = run_dftool("optimize", CASE / "graph.pb", optimized, *_fetch_args(), "--verify")
    assert code == 0, err
    code, _, err = run_dftool("run", optimized, *common)
    assert code == 0, err
    placed = tmp_path / "placed.pb"
    code, _, err = run_dftool("place", CASE / "graph.pb", placed, "--devices", "cpu:0,cpu:1")
    assert code == 0, err
    parts = tmp_path / "parts.pb"
    code, _, err = run_dftool("partition", placed, parts)
    assert code == 0, err
    code, _, err = run_dftool("run", parts, *common)
    assert code == 0, err


def test_saving_a_fetched_list_is_refused_by_name(tmp_path):
    basic = FIXTURES / "op_tensor_list_basic"
    code, _, err = run_dftool("run", basic / "graph.pb", "--feeds", basic / "feeds.npz", "--fetch", "from_tensor",
                              "--output", tmp_path / "out.npz")
    assert code == 2
    assert "fetch 'from_tensor' is a variant (TensorList)" in error_line(err)
    assert not (tmp_path / "out.npz").exists()
