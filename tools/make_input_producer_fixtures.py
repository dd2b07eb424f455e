#!/usr/bin/env python3
"""Make the fixtures of dftool's input-producer tests (RandomShuffle, CountUpTo and the TF1
tf.compat.v1.train.*_input_producer pipelines built on them) with real TensorFlow.

Writes tests/fixtures/input_producers/:

    data/lines_0.txt .. data/lines_2.txt   three small text files (two lines each)
    <case>/graph.pb, <case>/case.json, <case>/expected.npz   as tools/make_queue_fixtures.py
                                           writes them (the session runs to replay, in order)

File names inside the graphs are relative ("data/lines_0.txt"): run them with the working
directory set to tests/fixtures/input_producers.

Cases:
  random_shuffle   seeded RandomShuffle nodes over several shapes and dtypes (1-D, 2-D, 3-D,
                   strings, bool, one row, scalar, no rows, 100 rows), fetched together in 4
                   runs: each node's Philox stream moves on from run to run
  count_up_to      CountUpTo on a ref variable (int32, limit 3) and ResourceCountUpTo on a
                   resource variable (int64, limit 2) until OutOfRange, and the variables after
  string_producer  string_input_producer(3 files, num_epochs=2, shuffle=True, seed=5) (a resource
                   `epochs` local variable: ResourceCountUpTo) read by TextLineReaderV2: the
                   local variables initialized, the enqueue op run by hand until OutOfRange, the
                   queue closed, then the lines read until OutOfRange
  slice_producer   slice_input_producer([ints, strings], num_epochs=2, shuffle=True, seed=9) with
                   ref variables (CountUpTo), and range_input_producer(4, num_epochs=1,
                   shuffle=True, seed=2), run the same way

Run it with a Python that has TensorFlow (the tests never import it), from the repository root:

    $TF_PYTHON tools/make_input_producer_fixtures.py
"""
from __future__ import annotations

import json
import os
from pathlib import Path


os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

from fixture_files import to_numpy, write_npz  # noqa: E402  (tools/ is on sys.path)
from make_queue_fixtures import Recorder, runner_of, runner_spec  # noqa: E402

tf1 = tf.compat.v1
ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "input_producers"
FILES = [f"data/lines_{i}.txt" for i in range(3)]


def write_data() -> None:
    (OUT / "data").mkdir(parents=True, exist_ok=True)
    for i, name in enumerate(FILES):
        (OUT / name).write_bytes(f"file{i} line0\nfile{i} line1\n".encode())


def save_case(name: str, graph, spec: dict, recorder: Recorder) -> None:
    case = OUT / name
    case.mkdir(parents=True, exist_ok=True)
    (case / "graph.pb").write_bytes(graph.as_graph_def().SerializeToString())
    spec["runs"] = recorder.runs
    write_npz(case / "expected.npz", {key: to_numpy(value) for key, value in recorder.expected.items()})
    spec["made_by"] = f"tools/make_input_producer_fixtures.py with TensorFlow {tf.__version__}"
    (case / "case.json").write_text(json.dumps(spec, indent=1) + "\n")


def random_shuffle() -> None:
    graph = tf.Graph()
    with graph.as_default():
        values = {
            "vector": (tf.range(10), (1, 2)),
            "matrix": (tf.reshape(tf.range(21, dtype=tf.float32), [7, 3]), (87654321, 5)),
            "cube": (tf.reshape(tf.range(24, dtype=tf.int64), [6, 2, 2]), (0, 7)),
            "strings": (tf.constant([b"a", b"b", b"c", b"d", b"e"]), (3, 0)),
            "bools": (tf.constant([True, False, False, True, True, False]), (11, 12)),
            "one_row": (tf.constant([[1.5, 2.5]]), (4, 4)),
            "scalar": (tf.constant(3.0, tf.float64), (5, 5)),
            "no_rows": (tf.zeros([0, 3], tf.int32), (6, 6)),
            "long": (tf.range(100, dtype=tf.int64), (123, 456)),
            "halves": (tf.cast(tf.range(9), tf.float16), (9, 1)),
        }
        for name, (value, (seed, seed2)) in values.items():
            # The raw op, to choose both seed attrs (tf.random.shuffle derives them from a graph seed).
            tf.raw_ops.RandomShuffle(value=value, seed=seed, seed2=seed2, name=f"{name}_shuffle")
    fetches = [f"{name}_shuffle:0" for name in values]
    with tf1.Session(graph=graph) as session:
        r = Recorder(session)
        for _ in range(4):
            r.run(fetches)
    save_case("random_shuffle", graph, {"doc": "seeded RandomShuffle nodes, 4 runs"}, r)


def count_up_to() -> None:
    graph = tf.Graph()
    with graph.as_default():
        ref = tf1.Variable(0, dtype=tf.int32, use_resource=False, name="ref_counter")
        tf1.count_up_to(ref, 3, name="ref_count")
        resource = tf1.Variable(0, dtype=tf.int64, use_resource=True, name="resource_counter")
        tf.identity(resource.count_up_to(2), name="resource_count")
        tf.identity(resource.read_value(), name="resource_value")
        tf.identity(ref, name="ref_value")
        tf1.global_variables_initializer()   # "init"
    with tf1.Session(graph=graph) as session:
        r = Recorder(session)
        r.run(targets=["init"])
        for _ in range(4):
            r.run(["ref_count:0"])
        r.run(["ref_value:0"])
        for _ in range(3):
            r.run(["resource_count:0"])
        r.run(["resource_value:0"])
    save_case("count_up_to", graph, {"doc": "CountUpTo and ResourceCountUpTo until their limits"}, r)


def _drain(r: Recorder, runner: dict, fetches: list[str], enqueues: int, reads: int) -> None:
    """The local variables initialized, the enqueue op run by hand (the last run fails with
    OutOfRange: the epochs are used up), the queue closed, then `reads` fetches (the last fails)."""
    r.run(targets=["init_locals"])
    for _ in range(enqueues):
        r.run(targets=runner["enqueue_ops"])
    r.run(targets=[runner["close_op"]])
    for _ in range(reads):
        r.run(fetches)


def string_producer() -> None:
    graph = tf.Graph()
    with graph.as_default():
        filenames = tf1.train.string_input_producer(FILES, num_epochs=2, shuffle=True, seed=5)
        reader = tf1.TextLineReader(name="reader")
        reader.read(filenames, name="read")
        tf1.group(tf1.local_variables_initializer(), name="init_locals")
    runner = runner_spec(runner_of(graph, "input_producer"))
    with tf1.Session(graph=graph) as session:
        r = Recorder(session)
        _drain(r, runner, ["read:0", "read:1"], enqueues=3, reads=13)   # 2 epochs x 3 files x 2 lines
    save_case("string_producer", graph, {"doc": "string_input_producer -> TextLineReaderV2",
                                         "queue_runner": runner}, r)


def slice_producer() -> None:
    graph = tf.Graph()
    tf1.disable_resource_variables()   # ref `epochs` variables: CountUpTo
    try:
        with graph.as_default():
            ints, words = tf1.train.slice_input_producer(
                [tf.constant([10, 20, 30, 40, 50]), tf.constant([b"v", b"w", b"x", b"y", b"z"])],
                num_epochs=2, shuffle=True, seed=9, name="slices")
            tf.identity(ints, name="ints")
            tf.identity(words, name="words")
            ranged = tf1.train.range_input_producer(4, num_epochs=1, shuffle=True, seed=2, name="ranged")
            tf.identity(ranged.dequeue(), name="ranged_value")
            tf1.group(tf1.local_variables_initializer(), name="init_locals")
    finally:
        tf1.enable_resource_variables()
    slices = runner_spec(runner_of(graph, "input_producer"))   # (its queue is not under "slices/")
    ranged_runner = runner_spec(runner_of(graph, "ranged"))
    with tf1.Session(graph=graph) as session:
        r = Recorder(session)
        _drain(r, slices, ["ints:0", "words:0"], enqueues=3, reads=11)
        for _ in range(2):
            r.run(targets=ranged_runner["enqueue_ops"])
        r.run(targets=[ranged_runner["close_op"]])
        for _ in range(5):
            r.run(["ranged_value:0"])
    save_case("slice_producer", graph, {"doc": "slice_input_producer and range_input_producer on ref variables",
                                        "queue_runners": [slices, ranged_runner]}, r)


def main() -> None:
    write_data()
    os.chdir(OUT)   # the graphs name their files relative to the fixture directory
    random_shuffle()
    count_up_to()
    string_producer()
    slice_producer()
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
