"""Hostile-input regression tests for the executor area (issue 14): timeouts that fire on time and
name what was running, concurrent Session.run on one Session, input errors that used to escape
as "internal error", and numerics that must match TensorFlow exactly.

Every hostile graph is built here; the TensorFlow results are literals recorded from TensorFlow
2.21 (tools/tf_edge_numerics.py prints them again)."""
from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from graphtool import dtypes, graph_io
from graphtool.errors import RuntimeFailure
from graphtool.exec.session import Session
from graphtool.ir import Graph, from_graphdef

from ..helpers import const, error_line, op, placeholder, run_dftool, write_graph

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tf"
THREADS, RUNS = 8, 4


def _fixture(case: str, feeds_file: str = "feeds.npz", expected_file: str = "expected.npz"):
    spec = json.loads((FIXTURES / case / "case.json").read_text())
    graph = from_graphdef(graph_io.load_graphdef(str(FIXTURES / case / "graph.pb")), case)
    feeds = {k if ":" in k else k: v for k, v in np.load(FIXTURES / case / feeds_file).items()}
    expected = dict(np.load(FIXTURES / case / expected_file))
    return spec, graph, feeds, expected


def _hammer(session: Session, job, threads: int = THREADS, runs: int = RUNS, limit: float = 60.0) -> list:
    """Run `job(session, thread, run)` threads x runs times at once; every result, in order. A run
    that does not finish within `limit` seconds fails the test (instead of hanging it)."""
    barrier = threading.Barrier(threads)

    def worker(thread: int) -> list:
        barrier.wait()
        return [job(session, thread, run) for run in range(runs)]

    with ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(worker, t) for t in range(threads)]
        deadline = time.monotonic() + limit
        return [f.result(timeout=max(0.1, deadline - time.monotonic())) for f in futures]


# --- defect 7: concurrent steps on one Session ------------------------------------------------------

@pytest.mark.parametrize("case", ["dynamic_lstm", "two_device"])
def test_concurrent_runs_on_one_session_match_tensorflow(case):
    """A TensorArray while loop (step-scoped TensorArrays) and a graph partitioned over cpu:0 and
    cpu:1 (a rendezvous per step), 8 threads x 4 runs on one Session, each checked against TF."""
    spec, graph, feeds, expected = _fixture(case)
    session = Session(graph, threads=2)
    fetches = spec["fetches"]

    def job(session, thread, run):
        values = session.run(fetches, feeds, timeout=30).values
        for name, value in zip(fetches, values):
            np.testing.assert_allclose(value, expected[name], rtol=spec["rtol"], atol=spec["atol"])
        return True

    results = _hammer(session, job)
    assert sum(len(r) for r in results) == THREADS * RUNS


def _counter_graph() -> Graph:
    """v (int64 ref variable) = 0 by 'init'; 'inc' adds 1 and returns the new value."""
    g = Graph()
    v = g.add_node("VariableV2", "v", attrs={"dtype": dtypes.int64, "shape": [], "container": "", "shared_name": ""})
    g.add_node("Assign", "init", inputs=[v.output(0), const(g, "zero", 0, dtypes.int64).output(0)],
               attrs={"T": dtypes.int64, "validate_shape": True, "use_locking": True})
    g.add_node("AssignAdd", "inc", inputs=[v.output(0), const(g, "one", 1, dtypes.int64).output(0)],
               attrs={"T": dtypes.int64, "use_locking": True})
    g.add_node("Identity", "read", inputs=[v.output(0)], attrs={"T": dtypes.int64})
    return g


def test_concurrent_variable_updates_are_all_counted():
    session = Session(_counter_graph(), threads=2)
    session.run([], targets=["init"])
    results = _hammer(session, lambda s, thread, run: int(s.run(["inc"], timeout=30).values[0]), runs=25)
    seen = [value for per_thread in results for value in per_thread]
    total = THREADS * 25
    assert all(1 <= value <= total for value in seen)
    assert int(session.run(["read"]).values[0]) == total
    for per_thread in results:   # each thread sees its own increments in order
        assert per_thread == sorted(per_thread) and len(set(per_thread)) == len(per_thread)
