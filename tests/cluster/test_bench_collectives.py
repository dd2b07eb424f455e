"""tests/bench/bench_collectives.py runs end to end at tiny sizes: both sections print their tables
and write their measurements (its own checks hold: every all-reduce sums its members' fills, every
replicated training graph starts from the 1-worker loss). Timings are not judged here."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def test_bench_collectives_runs_every_section(tmp_path):
    pytest.importorskip("ray")
    out = tmp_path / "bench.json"
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "bench" / "bench_collectives.py"), "--rounds", "1",
                           "--workers", "2", "--sizes-kib", "4", "64", "--batch", "16", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    for title in ("1. all-reduce", "2. data-parallel training"):
        assert title in done.stdout
    rows = json.loads(out.read_text())
    reduce = [row for row in rows if row["section"] == "allreduce"]
    assert [(row["workers"], row["bytes"]) for row in reduce] == [(2, 4 << 10), (2, 64 << 10)]
    for row in reduce:
        assert row["busbw_gbps"] > 0 and row["raw_ray_gbps"] > 0 and row["step_ms"] > 0
        assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"])   # 2(n-1)/n = 1 for n = 2
    training = [(row["workers"], row["mode"]) for row in rows if row["section"] == "training"]
    assert training == [(1, "single"), (2, "allreduce"), (2, "ps")]
    assert all(row["examples_per_s"] > 0 for row in rows if row["section"] == "training")
