#!/usr/bin/env python3
"""Make the fixtures of dftool's queue and reader tests with real TensorFlow (tf.compat.v1 graphs).

Writes tests/fixtures/queues/:

    data/records.tfrecord   5 TFRecord records (tf.io.TFRecordWriter)
    data/lines_a.txt, data/lines_b.txt   text files with a header line, an empty line, a CRLF line
    data/fixed.bin          a header, 6 records of 4 bytes, a footer (for FixedLengthRecordReader)
    data/train.bin          40 records of 5 float32 (4 features, 1 class) for the training case
    <case>/graph.pb         the GraphDef (as_graph_def() after building everything)
    <case>/case.json        node names, and the session runs to replay in order
    <case>/expected.npz     TensorFlow's fetched values, keyed "<run index>/<fetch>"

File names inside the graphs are relative ("data/records.tfrecord"): run them with the working
directory set to tests/fixtures/queues (as TensorFlow did here).

Cases:
  queue_ops        FIFO, padding and seeded random-shuffle queues driven by session runs
                   (enqueue_many, close, dequeue / dequeue_many / dequeue_up_to, sizes; the
                   random-shuffle order is TensorFlow's Philox order for seed/seed2), and the
                   OutOfRange / Cancelled errors TF raised, by class name
  tfrecord_batch   string_input_producer (shuffle=False) -> TFRecordReader -> train.batch(3):
                   run by queue runners (one thread each: FIFO order), 4 batches fetched
  text_shuffle     a closed filename queue -> TextLineReader(skip_header_lines=1) ->
                   train.shuffle_batch(2, seed=7): the batch enqueue op run by hand until the
                   input ends (OutOfRange), then the batch queue closed and drained
  fixed_length     FixedLengthRecordReader(header 3, record 4, footer 2, hop 0 and hop 2) read
                   up to 10 records at a time from a closed filename queue; record counters
  queue_training   a queue-fed MLP: a filename queue filled and closed by `init`, a
                   FixedLengthRecordReader + decode_raw, train.batch(4) (its enqueue op run by
                   ONE queue-runner thread: FIFO order), softmax cross-entropy,
                   GradientDescent; the per-step losses TF printed until the batch queue ran out
                   (10 steps). TF's values come from running the enqueue op by hand until the input
                   ended, then the runner's close op, then the steps: the order one runner thread
                   gives, without depending on thread timing

Run it with a Python that has TensorFlow (the tests never import it), from the repository root:

    $TF_PYTHON tools/make_queue_fixtures.py
"""
from __future__ import annotations

import json
import os
import struct
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1
ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "queues"


# --- data files -----------------------------------------------------------------------------------

def write_data() -> None:
    data = OUT / "data"
    data.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(data / "records.tfrecord")) as writer:
        for payload in [b"alpha", b"", b"gamma" * 10, bytes(range(7)), b"epsilon"]:
            writer.write(payload)
    (data / "lines_a.txt").write_bytes(b"name,value\na,1\n\nb,2\r\nc,3\n")
    (data / "lines_b.txt").write_bytes(b"header only once\nd,4\ne,5")
    rng = np.random.RandomState(11)
    (data / "fixed.bin").write_bytes(b"HDR" + bytes(rng.randint(0, 256, 24, dtype=np.uint8)) + b"FT")
    features = rng.normal(size=(40, 4)).astype(np.float32)
    labels = (features[:, 0] + features[:, 1] > 0).astype(np.float32) + (features[:, 2] > 1).astype(np.float32)
    (data / "train.bin").write_bytes(np.concatenate([features, labels[:, None]], axis=1).astype("<f4").tobytes())


# --- helpers --------------------------------------------------------------------------------------

class Recorder:
    """Session runs replayed by the tests: targets, fetches, TF's values or TF's error class."""

    def __init__(self, session):
        self.session = session
        self.runs: list[dict] = []
        self.expected: dict[str, np.ndarray] = {}

    def run(self, fetches=(), targets=(), note: str = "") -> list | None:
        entry: dict = {"fetches": list(fetches), "targets": list(targets)}
        if note:
            entry["note"] = note
        index = len(self.runs)
        self.runs.append(entry)
        try:
            values = self.session.run(list(fetches) + list(targets))
        except tf.errors.OpError as exc:
            entry["error"] = type(exc).__name__   # OutOfRangeError, CancelledError, ...
            # The error's own line: the one after "Node: '<name>'" (TF puts "Graph execution
            # error:", where the node was defined and "[[{{node ...}}]]" around it).
            lines = [line.strip() for line in exc.message.splitlines()]
            after = [lines[i + 1] for i, line in enumerate(lines[:-1]) if line.startswith("Node: ")]
            entry["message"] = after[-1] if after else lines[-1]
            return None
        values = values[:len(fetches)]
        for name, value in zip(fetches, values):
            self.expected[f"{index}/{name}"] = np.asarray(value)
        return values


def save_case(name: str, graph, spec: dict, recorder: Recorder | None = None,
              expected: dict[str, np.ndarray] | None = None) -> None:
    case = OUT / name
    case.mkdir(parents=True, exist_ok=True)
    (case / "graph.pb").write_bytes(graph.as_graph_def().SerializeToString())
    if recorder is not None:
        spec["runs"] = recorder.runs
        expected = {**(expected or {}), **recorder.expected}
    np.savez(case / "expected.npz", **(expected or {}))
    spec["made_by"] = f"tools/make_queue_fixtures.py with TensorFlow {tf.__version__}"
    (case / "case.json").write_text(json.dumps(spec, indent=1) + "\n")


def runner_of(graph, queue_name_prefix: str):
    for runner in graph.get_collection(tf1.GraphKeys.QUEUE_RUNNERS):
        if runner.queue.name.startswith(queue_name_prefix):
            return runner
    raise SystemExit(f"no queue runner for {queue_name_prefix}")


def runner_spec(runner) -> dict:
    return {"queue": runner.queue.name, "enqueue_ops": [op.name for op in runner.enqueue_ops],
            "close_op": runner.close_op.name, "cancel_op": runner.cancel_op.name}


# --- cases ----------------------------------------------------------------------------------------

def queue_ops() -> None:
    graph = tf.Graph()
    with graph.as_default():
        fifo = tf1.FIFOQueue(4, [tf.int32, tf.string], shapes=[[2], []], name="fifo")
        fifo_enqueue = fifo.enqueue_many([tf.constant([[1, 2], [3, 4], [5, 6]]), tf.constant([b"a", b"b", b"c"])],
                                         name="fifo_enqueue_many")
        fifo_enqueue_one = fifo.enqueue([tf.constant([7, 8]), tf.constant(b"d")], name="fifo_enqueue")
        fifo.dequeue(name="fifo_dequeue")
        fifo.dequeue_many(2, name="fifo_dequeue_many")
        fifo.dequeue_up_to(3, name="fifo_dequeue_up_to")
        fifo.size(name="fifo_size")
        fifo.is_closed(name="fifo_is_closed")
        fifo.close(name="fifo_close")

        padding = tf1.PaddingFIFOQueue(10, [tf.float32], shapes=[[None, 2]], name="padding")
        for i, rows in enumerate([1, 3, 2]):
            padding.enqueue([tf.fill([rows, 2], float(i + 1))], name=f"padding_enqueue_{i}")
        padding.dequeue_many(3, name="padding_dequeue_many")

        shuffle = tf1.RandomShuffleQueue(20, 2, [tf.int32], shapes=[[]], seed=3, name="shuffle")
        shuffle.enqueue_many([tf.range(12)], name="shuffle_enqueue_many")
        shuffle.dequeue(name="shuffle_dequeue")
        shuffle.dequeue_up_to(4, name="shuffle_dequeue_up_to")
        shuffle.close(name="shuffle_close")
        shuffle.size(name="shuffle_size")

        small = tf1.FIFOQueue(1, [tf.int32], shapes=[[]], name="small")
        small.enqueue([tf.constant(1)], name="small_enqueue")
        small.close(cancel_pending_enqueues=True, name="small_cancel")
        small.close(name="small_close")
    with tf1.Session(graph=graph) as session:
        r = Recorder(session)
        r.run(targets=["fifo_enqueue_many"])
        r.run(["fifo_size:0"])
        r.run(["fifo_dequeue:0", "fifo_dequeue:1"])
        r.run(targets=["fifo_enqueue"])
        r.run(["fifo_dequeue_many:0", "fifo_dequeue_many:1", "fifo_size:0"])
        r.run(targets=["fifo_close"])
        r.run(["fifo_is_closed:0"])
        r.run(targets=["fifo_enqueue"], note="enqueue on a closed queue")
        r.run(["fifo_dequeue_many:0"], note="closed, 1 left, 2 requested")
        r.run(["fifo_dequeue_up_to:0", "fifo_dequeue_up_to:1"])
        r.run(["fifo_dequeue:0"], note="closed and empty")
        r.run(targets=["fifo_close"], note="closing a closed queue")
        for i in range(3):
            r.run(targets=[f"padding_enqueue_{i}"])
        r.run(["padding_dequeue_many:0"])
        r.run(targets=["shuffle_enqueue_many"])
        for _ in range(3):
            r.run(["shuffle_dequeue:0"])
        r.run(["shuffle_dequeue_up_to:0"])
        r.run(targets=["shuffle_close"])
        r.run(["shuffle_dequeue_up_to:0"], note="closed: min_after_dequeue no longer holds")
        r.run(["shuffle_dequeue_up_to:0"])
        r.run(["shuffle_size:0"])
        r.run(["shuffle_dequeue_up_to:0"], note="closed and empty")
        r.run(targets=["small_enqueue"])
        r.run(targets=["small_cancel"])
        r.run(targets=["small_enqueue"], note="enqueue after cancel")
    save_case("queue_ops", graph, {"doc": "session runs on FIFO, padding and random-shuffle queues"}, r)


def tfrecord_batch() -> None:
    graph = tf.Graph()
    with graph.as_default():
        filenames = tf1.train.string_input_producer(["data/records.tfrecord"], shuffle=False, capacity=4,
                                                    name="filenames")
        reader = tf1.TFRecordReader(name="reader")
        key, value = reader.read(filenames, name="read")
        keys, values = tf1.train.batch([key, value], batch_size=3, capacity=6, num_threads=1, name="batch")
        keys = tf.identity(keys, name="keys")
        values = tf.identity(values, name="values")
    spec = {"doc": "string_input_producer -> TFRecordReader -> train.batch(3), run by queue runners "
                   "(one thread each); the filename queue cycles (num_epochs=None)",
            "queue_runners": [runner_spec(runner_of(graph, "filenames")), runner_spec(runner_of(graph, "batch"))],
            "fetches": ["keys:0", "values:0"], "batches": 4}
    expected = {}
    with tf1.Session(graph=graph) as session:
        coord = tf1.train.Coordinator()
        threads = tf1.train.start_queue_runners(session, coord=coord)
        for i in range(4):
            k, v = session.run(["keys:0", "values:0"])
            expected[f"{i}/keys:0"], expected[f"{i}/values:0"] = k, v
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)
    save_case("tfrecord_batch", graph, spec, expected=expected)


def text_shuffle() -> None:
    graph = tf.Graph()
    with graph.as_default():
        files = tf1.FIFOQueue(4, [tf.string], shapes=[[]], name="files")
        files.enqueue_many([tf.constant(["data/lines_a.txt", "data/lines_b.txt"])], name="files_enqueue")
        files.close(name="files_close")
        reader = tf1.TextLineReader(skip_header_lines=1, name="reader")
        key, value = reader.read(files, name="read")
        tf.identity(reader.num_records_produced(), name="produced")
        keys, values = tf1.train.shuffle_batch([key, value], batch_size=2, capacity=10, min_after_dequeue=3,
                                               seed=7, num_threads=1, name="shuffle")
        tf.identity(keys, name="keys")
        tf.identity(values, name="values")
    runner = runner_spec(runner_of(graph, "shuffle"))
    with tf1.Session(graph=graph) as session:
        r = Recorder(session)
        r.run(targets=["files_enqueue"])
        r.run(targets=["files_close"])
        for _ in range(7):   # 6 lines, then the filename queue is closed and empty
            r.run(targets=runner["enqueue_ops"])
        r.run(["produced:0"])
        r.run(targets=[runner["close_op"]])
        for _ in range(4):   # 3 batches of 2, then OutOfRange
            r.run(["keys:0", "values:0"])
    save_case("text_shuffle", graph, {"doc": "TextLineReader over a closed filename queue, shuffle_batch run by hand",
                                      "queue_runner": runner}, r)


def fixed_length() -> None:
    graph = tf.Graph()
    with graph.as_default():
        files = tf1.FIFOQueue(4, [tf.string], shapes=[[]], name="files")
        files.enqueue_many([tf.constant(["data/fixed.bin", "data/fixed.bin"])], name="files_enqueue")
        files.close(name="files_close")
        plain = tf1.FixedLengthRecordReader(4, header_bytes=3, footer_bytes=2, name="plain")
        hop = tf1.FixedLengthRecordReader(4, header_bytes=3, footer_bytes=2, hop_bytes=2, name="hop")
        for name, reader in (("plain", plain), ("hop", hop)):
            k, v = reader.read_up_to(files, 10, name=f"{name}_read")
            tf.identity(k, name=f"{name}_keys")
            tf.identity(v, name=f"{name}_values")
            tf.identity(reader.num_records_produced(), name=f"{name}_produced")
            tf.identity(reader.num_work_units_completed(), name=f"{name}_completed")
            reader.reset(name=f"{name}_reset")
    with tf1.Session(graph=graph) as session:
        r = Recorder(session)
        r.run(targets=["files_enqueue"])
        r.run(targets=["files_close"])
        r.run(["plain_keys:0", "plain_values:0"])
        r.run(["plain_produced:0", "plain_completed:0"])
        r.run(["hop_keys:0", "hop_values:0"])
        r.run(["hop_produced:0", "hop_completed:0"])
        r.run(["hop_keys:0"], note="filename queue closed and empty")
        r.run(targets=["plain_reset"])
        r.run(["plain_produced:0"])
    save_case("fixed_length", graph, {"doc": "FixedLengthRecordReader with header/footer, with and without hop_bytes"}, r)


def queue_training() -> None:
    rng = np.random.RandomState(5)
    w1_init = (rng.normal(size=(4, 8)) * 0.5).astype(np.float32)
    w2_init = (rng.normal(size=(8, 3)) * 0.5).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        files = tf1.FIFOQueue(4, [tf.string], shapes=[[]], name="input/files")
        fill = files.enqueue_many([tf.constant(["data/train.bin"])], name="input/files_enqueue")
        with tf.control_dependencies([fill]):
            close_files = files.close(name="input/files_close")
        reader = tf1.FixedLengthRecordReader(20, name="input/reader")
        _, value = reader.read(files, name="input/read")
        record = tf.reshape(tf.io.decode_raw(value, tf.float32), [5], name="input/record")
        features = record[:4]
        label = tf.cast(record[4], tf.int32)
        x, y = tf1.train.batch([features, label], batch_size=4, capacity=64, num_threads=1, name="batch")
        w1 = tf1.get_variable("w1", initializer=w1_init, use_resource=True)
        b1 = tf1.get_variable("b1", initializer=np.zeros(8, np.float32), use_resource=True)
        w2 = tf1.get_variable("w2", initializer=w2_init, use_resource=True)
        b2 = tf1.get_variable("b2", initializer=np.zeros(3, np.float32), use_resource=True)
        hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
        logits = tf.matmul(hidden, w2) + b2
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits), name="loss")
        tf1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        # (global_variables_initializer would take the name "init": the variables get their own)
        tf.group(tf1.variables_initializer(tf1.global_variables(), name="init_variables"), close_files, name="init")
    runner = runner_spec(runner_of(graph, "batch"))
    losses = []
    with tf1.Session(graph=graph) as session:
        session.run("init")
        # What one queue-runner thread does, done here in order, so that TF's values do not depend
        # on thread timing: enqueue until the input ends, then the runner's close op. The batch
        # queue holds all 40 examples (capacity 64), so nothing waits.
        try:
            while True:
                session.run(runner["enqueue_ops"][0])
        except tf.errors.OutOfRangeError:
            session.run(runner["close_op"])
        try:
            while True:
                _, value = session.run(["train", "loss:0"])
                losses.append(float(value))
        except tf.errors.OutOfRangeError:
            pass
        final = {v.op.name: session.run(v) for v in tf1.global_variables()}
    spec = {"doc": "queue-fed MLP: `init` fills and closes the filename queue and initializes the variables; "
                   "one queue-runner thread runs the batch enqueue op; each `train` step dequeues 4 examples; "
                   "the run ends with OutOfRange after the 40 records (10 steps). File names are relative to "
                   "tests/fixtures/queues.",
            "init": "init", "train": "train", "loss": "loss:0", "queue_runner": runner,
            "enqueue_op": runner["enqueue_ops"][0], "queue": runner["queue"], "steps": len(losses),
            "variables": sorted(final)}
    expected = {"losses": np.asarray(losses, dtype=np.float64)}
    expected.update({f"final/{k}": v for k, v in final.items()})
    save_case("queue_training", graph, spec, expected=expected)


def main() -> int:
    tf1.disable_eager_execution()
    write_data()
    os.chdir(OUT)   # the graphs name their files relative to the fixture directory
    queue_ops()
    tfrecord_batch()
    text_shuffle()
    fixed_length()
    queue_training()
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
