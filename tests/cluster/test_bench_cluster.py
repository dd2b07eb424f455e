"""tests/bench/bench_cluster.py runs end to end at tiny sizes: every section prints its table and
writes its measurements (its own checks, values equal to a local run, hold). Timings are not
judged here."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def test_bench_cluster_runs_every_section(tmp_path):
    pytest.importorskip("ray")
    out = tmp_path / "bench.json"
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "bench" / "bench_cluster.py"), "--rounds", "1",
                           "--chain-length", "20", "--hidden", "8", "--batch", "2", "--steps", "3",
                           "--megabytes", "0.5", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    for title in ("1. two chains", "2. 8-layer tanh RNN", "3. transfers"):
        assert title in done.stdout
    rows = json.loads(out.read_text())
    assert {row["section"] for row in rows} == {"chains", "rnn", "transfer"}
    assert sorted(row["parallel_iterations"] for row in rows if row["section"] == "rnn") == [1, 8, 32]
    assert {row["transfer"] for row in rows if row["section"] == "transfer"} == {"round trip", "big"}
    for row in rows:
        assert all(value > 0 for key, value in row.items() if key.endswith("_ms") and key != "transfer_ms")
