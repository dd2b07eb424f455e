"""TF1 input producers: RandomShuffle (TensorFlow's seeded permutation, run after run), CountUpTo
and ResourceCountUpTo (the epoch counters of limit_epochs), and the string / slice / range input
producers built on them, replayed from TensorFlow-made fixtures (tests/fixtures/input_producers,
tools/make_input_producer_fixtures.py): values, the OutOfRange ends and their messages."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

from graphtool import dtypes, graph_io
from graphtool.builder import GraphBuildError, GraphBuilder
from graphtool.errors import OutOfRangeError
from graphtool.exec.queue_runner import QueueRunner
from graphtool.exec.session import Session
from graphtool.exec.sim_gpu import SimulatedGPUDevice
from graphtool.ir import from_graphdef
from graphtool.opt.base import PassContext
from graphtool.opt.manager import optimize

from ..helpers import run_dftool
from .test_queues import replay

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "input_producers"
CASES = ["random_shuffle", "count_up_to", "string_producer", "slice_producer"]


@pytest.fixture
def in_fixtures(monkeypatch):
    """The pipeline graphs name their files relative to tests/fixtures/input_producers."""
    monkeypatch.chdir(FIXTURES)


def test_fixtures_exist():
    assert (FIXTURES / "random_shuffle" / "case.json").exists(), \
        "run tools/make_input_producer_fixtures.py (needs tensorflow)"


def test_random_shuffle_replays_tensorflow():
    """Ten seeded nodes (1-D to 3-D, strings, bool, half, one row, scalar, no rows, 100 rows),
    four runs: each node's permutation is TensorFlow's, and its stream moves on between runs."""
    replay("random_shuffle", FIXTURES)


def test_count_up_to_replays_tensorflow():
    """The value before the increment; 'Reached limit of N' (OutOfRange) at the limit, the
    variable left at the limit."""
    replay("count_up_to", FIXTURES)


def test_string_input_producer_replays_tensorflow(in_fixtures):
    """string_input_producer(num_epochs=2, shuffle=True, seed=5) -> TextLineReaderV2: the local
    `epochs` variable initialized, two shuffled epochs enqueued, the third enqueue OutOfRange
    (ResourceCountUpTo), then TF's line order and the closed queue's OutOfRange."""
    replay("string_producer", FIXTURES)


def test_slice_and_range_input_producers_replay_tensorflow(in_fixtures):
    """slice_input_producer / range_input_producer with ref `epochs` variables (CountUpTo)."""
    replay("slice_producer", FIXTURES)


@pytest.mark.parametrize("case", CASES)
def test_fixtures_replay_on_strict_gpu_double(case, in_fixtures):
    """On a GPU the counters and shuffles keep TensorFlow's values (queues and readers run from
    host memory, the variables and the shuffled rows stay on the device)."""
    replay(case, FIXTURES, device=SimulatedGPUDevice(strict=True))


@pytest.mark.parametrize("case", CASES)
def test_fixtures_replay_after_optimize(case, in_fixtures):
    """Optimizing keeps the counters, shuffles, queues and readers (and their order of effects)."""
    graph = from_graphdef(graph_io.load_graphdef(str(FIXTURES / case / "graph.pb")), case)
    runs = json.loads((FIXTURES / case / "case.json").read_text())["runs"]
    fetches = sorted({name for run in runs for name in run["fetches"]})
    targets = {target for run in runs for target in run["targets"]}
    optimize(graph, PassContext(fetches=[graph.tensor(name) for name in fetches], keep=targets))
    graph.verify()
    replay(case, FIXTURES, graph=graph)


def _fixture_reads(case: str, fetch: str) -> list:
    """TensorFlow's values of `fetch`, run after run, in the recorded order."""
    spec = json.loads((FIXTURES / case / "case.json").read_text())
    expected = np.load(FIXTURES / case / "expected.npz")
    return [expected[f"{index}/{fetch}"].tolist() for index, run in enumerate(spec["runs"])
            if fetch in run["fetches"] and "error" not in run]


def test_string_input_producer_under_a_queue_runner(in_fixtures):
    """The same pipeline as TF1 programs run it: a QueueRunner thread enqueues both shuffled epochs
    and, at the epoch limit's OutOfRange, closes the queue; the reads are TensorFlow's order and
    then OutOfRange."""
    spec = json.loads((FIXTURES / "string_producer" / "case.json").read_text())
    runner_spec = spec["queue_runner"]
    session = Session(from_graphdef(graph_io.load_graphdef(str(FIXTURES / "string_producer" / "graph.pb"))))
    session.run([], targets=["init_locals"])
    runner = QueueRunner(session, runner_spec["enqueue_ops"], 1, runner_spec["close_op"],
                         runner_spec["cancel_op"]).start()
    reads = []
    with pytest.raises(OutOfRangeError, match="is closed and has insufficient elements"):
        for _ in range(20):
            reads.append(session.run(["read:0"], timeout=30).values[0].tolist())
    runner.join(30)
    assert reads == _fixture_reads("string_producer", "read:0") and len(reads) == 12


def test_cli_runs_a_string_input_producer_until_its_epochs_end(tmp_path):
    """`dftool run --init init_locals --queue-runner ...`: 12 steps read TensorFlow's lines in
    TensorFlow's order, then the run ends cleanly (exit 0) on the closed queue."""
    out = tmp_path / "out.npz"
    code, _, stderr = run_dftool("run", "string_producer/graph.pb", "--init", "init_locals", "--queue-runner",
                                 "input_producer/input_producer_EnqueueMany", "--steps", 50, "--fetch", "read:1",
                                 "--output", out, cwd=FIXTURES)
    assert code == 0, stderr
    assert "input exhausted after step 12" in stderr, stderr
    assert np.load(out, allow_pickle=True)["read:1"].tolist() == _fixture_reads("string_producer", "read:1")


# --- built graphs -------------------------------------------------------------------------------

def _shuffle_graph(seed: int, seed2: int, rows: int = 8):
    b = GraphBuilder()
    values = b.const(np.arange(rows * 2, dtype=np.int32).reshape(rows, 2), name="values")
    b.op("RandomShuffle", [values], name="shuffle", seed=seed, seed2=seed2)
    return b.graph


def test_random_shuffle_is_a_row_permutation_also_unseeded():
    for seed, seed2 in ((0, 0), (7, 0)):
        result = Session(_shuffle_graph(seed, seed2)).run(["shuffle:0"]).values[0]
        assert sorted(result[:, 0].tolist()) == list(range(0, 16, 2))
        np.testing.assert_array_equal(result[:, 1], result[:, 0] + 1)


def test_random_shuffle_streams_are_per_session():
    """A new session starts the node's stream again (TensorFlow's generator lives in the kernel)."""
    first = [Session(_shuffle_graph(3, 4)).run(["shuffle:0"]).values[0] for _ in range(2)]
    np.testing.assert_array_equal(first[0], first[1])


def _counter_graph(limit: int):
    b = GraphBuilder()
    var = b.op("VariableV2", [], name="counter", dtype=dtypes.int64, shape=[])
    b.op("Assign", [var, b.const(np.int64(0), name="zero")], name="init")
    b.op("CountUpTo", [var], name="count", limit=limit)
    return b.graph


def test_count_up_to_is_atomic_across_threads():
    """Concurrent runs each get a distinct value before the limit; exactly `limit` succeed."""
    session = Session(_counter_graph(40))
    session.run([], targets=["init"])
    got, errors = [], []

    def work():
        for _ in range(15):
            try:
                got.append(int(session.run(["count:0"]).values[0]))
            except OutOfRangeError as exc:
                errors.append(str(exc))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(got) == list(range(40))
    assert len(errors) == 20 and all("Reached limit of 40" in e for e in errors)


def test_count_up_to_uninitialized_fails():
    with pytest.raises(Exception, match="Attempting to use uninitialized value counter"):
        Session(_counter_graph(3)).run(["count:0"])


def test_counters_refuse_what_tensorflow_refuses():
    """A counter must be a scalar (when the shapes say so, already when the graph is built), and a
    resource counter must exist."""
    b = GraphBuilder()
    declared = b.op("VariableV2", [], name="declared", dtype=dtypes.int32, shape=[2])
    with pytest.raises(GraphBuildError, match="input 0 must have rank 0, has shape"):
        b.op("CountUpTo", [declared], name="declared_count", limit=3)
    vector = b.op("Variable", [], name="vector", dtype=dtypes.int32, shape=[])   # legacy: shape unknown
    b.op("Assign", [vector, b.const(np.zeros(2, np.int32), name="zeros")], name="vector_init", validate_shape=False)
    b.op("CountUpTo", [vector], name="vector_count", limit=3)
    handle = b.op("VarHandleOp", [], name="handle", dtype=dtypes.int64, shape=[], shared_name="missing")
    b.op("ResourceCountUpTo", [handle], name="missing_count", limit=3, T=dtypes.int64)
    session = Session(b.graph)
    session.run([], targets=["vector_init"])
    with pytest.raises(Exception, match=r"input is not a scalar: \[2\]"):
        session.run(["vector_count:0"])
    with pytest.raises(Exception, match="Could not find variable missing"):
        session.run(["missing_count:0"])


def counters_graph():
    """CountUpTo on a ref variable and ResourceCountUpTo on a resource variable, each read after
    (tests/exec/test_gpu_kernels.py runs it on the strict GPU double too)."""
    b = GraphBuilder()
    ref = b.op("VariableV2", [], name="ref", dtype=dtypes.int32, shape=[])
    b.op("Assign", [ref, b.const(np.int32(5), name="five")], name="ref_init")
    b.op("CountUpTo", [ref], name="ref_count", limit=7)
    b.op("Identity", [ref], name="ref_value")
    handle = b.op("VarHandleOp", [], name="handle", dtype=dtypes.int64, shape=[], shared_name="counter")
    b.op("AssignVariableOp", [handle, b.const(np.int64(0), name="zero")], name="resource_init")
    b.op("ResourceCountUpTo", [handle], name="resource_count", limit=1, T=dtypes.int64)
    b.op("ReadVariableOp", [handle], name="resource_value", dtype=dtypes.int64)
    return b.graph


def run_counters(device) -> list:
    """Values of three counting runs (the third at the limits: OutOfRange), then the variables."""
    session = Session(counters_graph(), device=device, threads=1)
    session.run([], targets=["ref_init", "resource_init"])
    values = []
    for _ in range(3):
        for name in ("ref_count:0", "resource_count:0"):
            try:
                values += session.run([name]).values
            except OutOfRangeError as exc:
                values.append(str(exc))
    return values + session.run(["ref_value:0", "resource_value:0"]).values


def test_counters_count_then_stop():
    values = run_counters("cpu")
    assert [np.asarray(v).dtype for v in values[:2]] == [np.int32, np.int64]
    assert [v if isinstance(v, str) else int(v) for v in values] == [
        5, 0, 6, "node 'resource_count' (ResourceCountUpTo): Reached limit of 1",
        "node 'ref_count' (CountUpTo): Reached limit of 7", "node 'resource_count' (ResourceCountUpTo): Reached limit of 1",
        7, 1]
