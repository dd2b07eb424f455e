"""Queues: TensorFlow-made fixtures (tests/fixtures/queues, tools/make_queue_fixtures.py) replayed
run by run in one dftool Session, plus the asynchronous-kernel behaviour TensorFlow's fixtures
cannot show: waiting without a thread, cancellation on timeout / failure / session close,
enqueues waiting for room, and QueueRunner threads."""
from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from graphtool import dtypes, graph_io
from graphtool.builder import GraphBuilder
from graphtool.errors import CancelledError, DftoolError, OutOfRangeError, UsageError
from graphtool.exec.queue_runner import QueueRunner, find_queue, parse_queue_runner_spec
from graphtool.exec.session import Session
from graphtool.exec.step_errors import StepTimeout
from graphtool.ir import from_graphdef

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "queues"


def _spec(case: str, fixtures: Path = FIXTURES) -> dict:
    return json.loads((fixtures / case / "case.json").read_text())


def _graph(case: str, fixtures: Path = FIXTURES):
    return from_graphdef(graph_io.load_graphdef(str(fixtures / case / "graph.pb")), case)


def _unnumbered(message: str) -> str:
    """A queue's private name carries a process-wide counter ('_3_fifo'): not compared."""
    return re.sub(r"'_\d+_", "'_N_", message)


def replay(case: str, fixtures: Path = FIXTURES, device="cpu", graph=None) -> None:
    """Run the recorded session runs in order (on the case's graph, or `graph`); every value and
    every error class equals TF's (also for the fixtures of tests/exec/test_input_producers.py,
    made the same way)."""
    spec = _spec(case, fixtures)
    expected = np.load(fixtures / case / "expected.npz", allow_pickle=True)
    session = Session(graph if graph is not None else _graph(case, fixtures), device=device)
    for index, run in enumerate(spec["runs"]):
        what = f"{case} run {index} {run}"
        if "error" in run:
            with pytest.raises(DftoolError) as caught:
                session.run(run["fetches"], targets=run["targets"], timeout=30)
            assert type(caught.value).__name__ == run["error"], what
            assert _unnumbered(run["message"]) in _unnumbered(str(caught.value)), what
            continue
        result = session.run(run["fetches"], targets=run["targets"], timeout=30)
        for name, value in zip(run["fetches"], result.values):
            want = expected[f"{index}/{name}"]
            assert np.shape(value) == want.shape, what
            if want.dtype.kind in "OS":   # strings (TF fetches them as bytes or object arrays)
                assert list(np.ravel(value)) == list(np.ravel(want)), what
            else:
                assert np.asarray(value).dtype == want.dtype, what
                np.testing.assert_array_equal(value, want, err_msg=what)


@pytest.fixture
def in_fixtures(monkeypatch):
    """The fixture graphs name their files relative to tests/fixtures/queues."""
    monkeypatch.chdir(FIXTURES)


def test_fixtures_exist():
    assert (FIXTURES / "queue_ops" / "case.json").exists(), "run tools/make_queue_fixtures.py (needs tensorflow)"


def test_queue_ops_replay_tensorflow():
    """FIFO / padding / seeded random-shuffle queues: values, the shuffle order, OutOfRange and
    Cancelled errors as TensorFlow gave them."""
    replay("queue_ops")


# --- built graphs -------------------------------------------------------------------------------

def _queue_graph(capacity: int = 2, op: str = "FIFOQueueV2", **attrs):
    b = GraphBuilder()
    q = b.op(op, [], name="q", component_types=[dtypes.int32], shapes=[[]], capacity=capacity, **attrs)
    value = b.placeholder("int32", [], name="value")
    values = b.placeholder("int32", [None], name="values")
    b.op("QueueEnqueueV2", [q, [value]], name="enqueue")
    b.op("QueueEnqueueManyV2", [q, [values]], name="enqueue_many")
    b.op("QueueDequeueV2", [q], name="dequeue", component_types=[dtypes.int32])
    b.op("QueueDequeueManyV2", [q, b.const(np.int32(3))], name="dequeue_many", component_types=[dtypes.int32])
    b.op("QueueCloseV2", [q], name="close")
    b.op("QueueCloseV2", [q], name="cancel", cancel_pending_enqueues=True)
    b.op("QueueSizeV2", [q], name="size")
    return b.graph


def _in_thread(fn):
    result: dict = {}

    def target():
        try:
            result["value"] = fn()
        except BaseException as exc:
            result["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, result


def test_blocked_dequeue_is_completed_by_another_steps_enqueue():
    session = Session(_queue_graph(), threads=1)   # one thread: the waiting dequeue must not hold it
    thread, result = _in_thread(lambda: session.run(["dequeue_many:0"], timeout=20).values[0])
    time.sleep(0.2)
    assert thread.is_alive()
    session.run([], {"values": np.array([1, 2], np.int32)}, targets=["enqueue_many"])
    time.sleep(0.1)
    assert thread.is_alive()   # two of three
    session.run([], {"value": np.int32(3)}, targets=["enqueue"])
    thread.join(10)
    np.testing.assert_array_equal(result["value"], [1, 2, 3])


def test_enqueue_many_waits_for_room_then_completes():
    session = Session(_queue_graph(capacity=2))
    thread, result = _in_thread(lambda: session.run([], {"values": np.arange(5, dtype=np.int32)},
                                                    targets=["enqueue_many"], timeout=20))
    time.sleep(0.2)
    assert thread.is_alive() and session.run(["size:0"]).values[0] == 2
    got = [int(session.run(["dequeue:0"], timeout=10).values[0]) for _ in range(5)]
    thread.join(10)
    assert "error" not in result and got == [0, 1, 2, 3, 4]


def test_close_waits_behind_pending_enqueues():
    session = Session(_queue_graph(capacity=1))
    session.run([], {"value": np.int32(1)}, targets=["enqueue"])
    enqueue, _ = _in_thread(lambda: session.run([], {"value": np.int32(2)}, targets=["enqueue"], timeout=20))
    time.sleep(0.1)
    close, _ = _in_thread(lambda: session.run([], targets=["close"], timeout=20))
    time.sleep(0.1)
    assert close.is_alive()   # behind the pending enqueue, as in TF
    assert int(session.run(["dequeue:0"]).values[0]) == 1
    enqueue.join(10)
    close.join(10)
    assert int(session.run(["dequeue:0"]).values[0]) == 2
    with pytest.raises(OutOfRangeError, match=r"node 'dequeue' \(QueueDequeueV2\): FIFOQueue '_\d+_q' is closed "
                                               r"and has insufficient elements \(requested 1, current size 0\)"):
        session.run(["dequeue:0"])


def test_cancel_pending_enqueues():
    session = Session(_queue_graph(capacity=1))
    session.run([], {"value": np.int32(1)}, targets=["enqueue"])
    thread, result = _in_thread(lambda: session.run([], {"value": np.int32(2)}, targets=["enqueue"], timeout=20))
    time.sleep(0.1)
    session.run([], targets=["cancel"])
    thread.join(10)
    assert isinstance(result["error"], CancelledError)
    assert "Enqueue operation was cancelled" in str(result["error"])
    assert int(session.run(["dequeue:0"]).values[0]) == 1   # what was in stays


def test_timeout_cancels_a_waiting_dequeue_and_the_queue_stays_usable():
    session = Session(_queue_graph())
    started = time.monotonic()
    with pytest.raises(StepTimeout, match="still running 'dequeue'"):
        session.run(["dequeue:0"], timeout=0.3)
    assert time.monotonic() - started < 5
    session.run([], {"value": np.int32(7)}, targets=["enqueue"])
    assert int(session.run(["dequeue:0"]).values[0]) == 7   # the cancelled attempt took nothing


def test_failing_step_cancels_its_waiting_dequeue():
    b = GraphBuilder()
    q = b.op("FIFOQueueV2", [], name="q", component_types=[dtypes.float32])
    b.op("QueueDequeueV2", [q], name="dequeue", component_types=[dtypes.float32])
    bad = b.op("CheckNumerics", [b.const(np.float32(np.nan))], name="bad", message="boom")
    session = Session(b.graph)
    with pytest.raises(DftoolError, match="boom"):
        session.run(["dequeue:0", "bad:0"], timeout=20)


def test_session_close_cancels_waiting_operations():
    session = Session(_queue_graph())
    thread, result = _in_thread(lambda: session.run(["dequeue:0"], timeout=20))
    time.sleep(0.2)
    session.close()
    thread.join(10)
    assert isinstance(result["error"], CancelledError)
    assert "Session has been closed" in str(result["error"])
    with pytest.raises(CancelledError):   # a later enqueue finds the queue closed
        session.run([], {"value": np.int32(1)}, targets=["enqueue"])


def test_padding_queue_pads_and_shuffle_queue_is_seeded():
    b = GraphBuilder()
    q = b.op("PaddingFIFOQueueV2", [], name="p", component_types=[dtypes.string], shapes=[[None]])
    b.op("QueueEnqueueV2", [q, [b.const(np.array([b"a"], dtype=object))]], name="short")
    b.op("QueueEnqueueV2", [q, [b.const(np.array([b"b", b"c"], dtype=object))]], name="long")
    b.op("QueueDequeueManyV2", [q, b.const(np.int32(2))], name="batch", component_types=[dtypes.string])
    session = Session(b.graph)
    session.run([], targets=["short"])
    session.run([], targets=["long"])
    batch = session.run(["batch:0"]).values[0]
    assert batch.tolist() == [[b"a", b""], [b"b", b"c"]]

    def order(seed):
        graph = _queue_graph(capacity=10, op="RandomShuffleQueueV2", seed=seed, seed2=1)
        s = Session(graph)
        s.run([], {"values": np.arange(6, dtype=np.int32)}, targets=["enqueue_many"])
        s.run([], targets=["close"])
        return [int(s.run(["dequeue:0"]).values[0]) for _ in range(6)]

    assert order(5) == order(5) and sorted(order(5)) == list(range(6)) and order(5) != order(6)


def test_bad_input_names_the_node():
    b = GraphBuilder()
    q = b.op("FIFOQueueV2", [], name="q", component_types=[dtypes.int32], shapes=[[]])
    b.op("QueueEnqueueManyV2", [q, [b.const(np.zeros((2, 2), np.int32))]], name="enqueue_many")
    b.op("QueueEnqueueV2", [q, [b.const(np.float32(1))]], name="enqueue_float")
    session = Session(b.graph)
    with pytest.raises(DftoolError, match=r"node 'enqueue_many'.*Shape mismatch in tuple component 0. "
                                          r"Expected \[2\], got \[2,2\]"):
        session.run([], targets=["enqueue_many"])
    with pytest.raises(DftoolError, match=r"node 'enqueue_float'.*Signature mismatch, have: resource, float"):
        session.run([], targets=["enqueue_float"])
    b = GraphBuilder()
    b.op("FIFOQueueV2", [], name="q", component_types=[dtypes.int32])
    q = b.graph.get("q").output(0)
    b.op("QueueDequeueManyV2", [q, b.const(np.int32(2))], name="many", component_types=[dtypes.int32])
    with pytest.raises(DftoolError, match=r"node 'many'.*require the components to have specified shapes"):
        Session(b.graph).run(["many:0"])


def test_shared_queue_is_one_queue_and_must_match():
    b = GraphBuilder()
    q1 = b.op("FIFOQueueV2", [], name="q1", component_types=[dtypes.int32], shared_name="shared")
    q2 = b.op("FIFOQueueV2", [], name="q2", component_types=[dtypes.int32], shared_name="shared")
    q3 = b.op("FIFOQueueV2", [], name="q3", component_types=[dtypes.float32], shared_name="shared")
    b.op("QueueEnqueueV2", [q1, [b.const(np.int32(4))]], name="put")
    b.op("QueueSizeV2", [q2], name="size")
    b.op("QueueSizeV2", [q3], name="size3")
    session = Session(b.graph)
    session.run([], targets=["put"])
    assert session.run(["size:0"]).values[0] == 1
    with pytest.raises(DftoolError, match="node 'q3'.*component types int32 but requested component types were float32"):
        session.run(["size3:0"])


# --- queue runners ------------------------------------------------------------------------------

def test_parse_queue_runner_spec():
    assert parse_queue_runner_spec("batch/fifo_queue_enqueue") == ("batch/fifo_queue_enqueue", 1)
    assert parse_queue_runner_spec("enq:3") == ("enq", 3)
    for bad in ("", "enq:0", "enq:x", ":2"):
        with pytest.raises(UsageError):
            parse_queue_runner_spec(bad)


def test_queue_runner_feeds_a_tensorflow_batch_pipeline(in_fixtures):
    """string_input_producer -> TFRecordReader -> train.batch, both enqueue ops run by runners:
    the batches TensorFlow's runners produced."""
    spec = _spec("tfrecord_batch")
    expected = np.load(FIXTURES / "tfrecord_batch" / "expected.npz", allow_pickle=True)
    graph = _graph("tfrecord_batch")
    session = Session(graph)
    assert find_queue(graph, spec["queue_runners"][1]["enqueue_ops"][0]) == spec["queue_runners"][1]["queue"]
    runners = [QueueRunner(session, r["enqueue_ops"], 1, r["close_op"], r["cancel_op"]).start()
               for r in spec["queue_runners"]]
    try:
        for i in range(spec["batches"]):
            keys, values = session.run(spec["fetches"], timeout=30).values
            assert keys.tolist() == expected[f"{i}/keys:0"].tolist()
            assert values.tolist() == expected[f"{i}/values:0"].tolist()
    finally:
        started = time.monotonic()
        for runner in runners:
            runner.stop()
        assert time.monotonic() - started < 10
    for runner in runners:
        runner.join(5)   # no error kept: the cancellation after stop() is not one


@pytest.mark.parametrize("device", ["cpu", "fakegpu"])
def test_queue_fed_training_reproduces_tensorflow_losses(in_fixtures, device):
    """The acceptance graph through the Python API: init, one runner thread on the batch enqueue
    op, train steps until OutOfRange; TF's per-step losses and final variables. On a GPU (the
    test double) queues and readers run from host memory, as in TensorFlow."""
    spec = _spec("queue_training")
    expected = np.load(FIXTURES / "queue_training" / "expected.npz")
    session = Session(_graph("queue_training"), device=device)
    session.run([], targets=[spec["init"]])
    runner = QueueRunner(session, [spec["enqueue_op"]], 1).start()
    losses = []
    try:
        with pytest.raises(OutOfRangeError, match="is closed and has insufficient elements"):
            while True:
                losses.append(float(session.run([spec["loss"]], targets=[spec["train"]], timeout=30).values[0]))
    finally:
        runner.stop()
    runner.join(5)
    assert runner.enqueues == 40
    np.testing.assert_allclose(losses, expected["losses"], rtol=1e-4)
    for name in spec["variables"]:
        value = session.run([f"{name}/Read/ReadVariableOp:0"]).values[0]
        np.testing.assert_allclose(value, expected[f"final/{name}"], rtol=1e-4, atol=1e-6)


def test_queue_runner_keeps_errors_for_join():
    b = GraphBuilder()
    q = b.op("FIFOQueueV2", [], name="q", component_types=[dtypes.float32])
    bad = b.op("CheckNumerics", [b.const(np.float32(np.inf))], name="bad", message="not finite")
    b.op("QueueEnqueueV2", [q, [bad]], name="enqueue")
    runner = QueueRunner(Session(b.graph), ["enqueue"], 2).start()
    with pytest.raises(DftoolError, match="not finite"):
        runner.join(10)
    runner.stop()


def test_queue_runner_reports_errors_and_restarts():
    b = GraphBuilder()
    q = b.op("FIFOQueueV2", [], name="q", component_types=[dtypes.int32], capacity=3)
    b.op("QueueEnqueueV2", [q, [b.const(np.int32(1))]], name="enqueue")
    b.op("QueueDequeueV2", [q], name="dequeue", component_types=[dtypes.int32])
    session = Session(b.graph)
    runner = QueueRunner(session, ["enqueue"], 2)
    assert runner.name == "enqueue (2 threads)" and runner.error() is None
    runner.start()
    assert int(session.run(["dequeue:0"], timeout=10).values[0]) == 1
    runner.stop()   # the runners wait on a full queue: cancelled, not an error
    runner.join(5)
    assert runner.error() is None and runner.running == 0
    runner.start()  # again (the queue is closed now: the threads end at once, without error)
    runner.join(5)
    assert runner.error() is None


def test_traced_step_records_the_waiting_dequeue():
    """A recorded step (profile, --trace) times an asynchronous kernel from start to finish."""
    session = Session(_queue_graph())
    session.run([], {"value": np.int32(5)}, targets=["enqueue"])
    result = session.run(["dequeue:0"], trace=True)
    assert int(result.values[0]) == 5
    names = [execution.name for device in result.step_stats.devices.values() for execution in device.nodes]
    assert "dequeue" in names


def test_dequeue_inside_a_while_loop():
    """A dequeue in a loop body (its handle enters the frame) waits and runs per iteration."""
    b = GraphBuilder()
    q = b.op("FIFOQueueV2", [], name="q", component_types=[dtypes.int32], shapes=[[]])
    b.op("QueueEnqueueManyV2", [q, [np.array([1, 2, 3, 4], np.int32)]], name="fill")

    def body(i, total):
        value = b.op("QueueDequeueV2", [q], name="take", component_types=[dtypes.int32])
        return b.add(i, 1), b.add(total, value[0])

    _, total = b.while_loop(lambda i, t: b.less(i, 3), body, [b.const(np.int32(0)), b.const(np.int32(0))])
    session = Session(b.graph)
    session.run([], targets=["fill"])
    assert int(session.run([total.full_name]).values[0]) == 6
    with pytest.raises(StepTimeout):   # one element left, three asked for: the loop waits
        session.run([total.full_name], timeout=0.3)
