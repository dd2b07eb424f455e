"""Record TensorFlow's summary ops as fixtures for dftool's summary kernels and event files.

    $TF_PYTHON tools/make_summary_fixtures.py            # rewrite tests/fixtures/summaries/
    $TF_PYTHON tools/make_summary_fixtures.py --list     # the case names

Needs TensorFlow (made with 2.21, v1 graph mode); dftool's tests only read the files. Every case
is a small graph (constants inside, seeded) whose one fetch is a summary op's output, run in a
single-threaded session with grappler off; `cases.json` records, per case, the fetch and either
TensorFlow's serialized Summary (base64) or the text of the error TensorFlow raised. Also written:

- `graphs/<case>.pb`: the GraphDef TensorFlow ran (deterministic serialization);
- `merged_graph.pb` + `merged.json`: a small TF1 training graph with `tf.compat.v1.summary.scalar`
  and `histogram` merged by `merge_all` (the tensor TF's merge_all returned, and the Summary of one
  run), for finding the merged summary tensor;
- `tf_events/`: an event file TensorFlow's own FileWriter wrote for that graph (graph, summaries of
  steps 1-3, run metadata of step 2), which tests read back with TensorBoard's EventAccumulator
  next to one dftool writes.

Everything but the event file (whose records carry wall times) is byte-for-byte reproducible.

Before writing anything, the script checks that schemas/summary.proto and schemas/event.proto
match TensorFlow's messages field for field (names, numbers, types) and exits 1 if not.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.core.framework import summary_pb2 as tf_summary  # noqa: E402
from tensorflow.core.protobuf import config_pb2  # noqa: E402
from tensorflow.core.util import event_pb2 as tf_event  # noqa: E402
from tensorflow.python.ops import gen_logging_ops as logging_ops  # noqa: E402

from fixture_files import write_json  # noqa: E402

tf1 = tf.compat.v1
tf1.disable_eager_execution()
OUT = ROOT / "tests" / "fixtures" / "summaries"
CASES: dict[str, callable] = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def _config():
    config = tf1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.optimizer_options.opt_level = tf1.OptimizerOptions.L0
    return config


def _rng(name: str) -> np.random.RandomState:
    return np.random.RandomState(sum(map(ord, name)) % (2 ** 31))


# --- cases: each builds its graph in the default graph and returns the summary tensor -----------

@case
def scalar_float():
    return tf1.summary.scalar("loss", tf.constant(0.3125, tf.float32))


@case
def scalar_tags_vector():
    return logging_ops.scalar_summary(tf.constant(["a", "b", "c/d"]),
                                      tf.constant([1.5, -2.0, 1e-40], tf.float64))


@case
def scalar_dtypes():
    parts = [logging_ops.scalar_summary(tf.constant(f"t_{dtype.name}"), tf.constant(value, dtype))
             for dtype, value in ((tf.int64, 2 ** 53 + 1), (tf.uint64, 2 ** 64 - 1), (tf.int8, -7),
                                  (tf.float16, 0.1), (tf.bfloat16, 3.14159), (tf.uint8, 200),
                                  (tf.float64, 0.1))]
    return logging_ops.merge_summary(parts)


@case
def scalar_denormals():
    # TensorFlow's kernels run with denormals flushed (FTZ/DAZ): a double converted to a float
    # denormal becomes 0, a float denormal passes through unconverted.
    parts = [logging_ops.scalar_summary(tf.constant(tag), tf.constant(value, dtype))
             for tag, dtype, value in (("f32", tf.float32, 1e-40), ("f64", tf.float64, 1e-40),
                                       ("f64_sub", tf.float64, -1e-310), ("bf16", tf.bfloat16, 1e-39))]
    return logging_ops.merge_summary(parts)


@case
def scalar_tags_matrix():
    return logging_ops.scalar_summary(tf.constant([["x", "y"], ["z", "w"]]),
                                      tf.constant([[1, 2], [3, 4]], tf.int32))


@case
def scalar_shape_mismatch():
    return logging_ops.scalar_summary(tf.constant(["a", "b"]), tf.constant([1.0, 2.0, 3.0]))


@case
def scalar_one_tag_mismatch():
    return logging_ops.scalar_summary(tf.constant("only"), tf.constant([1.0]))


@case
def histogram_normal():
    values = _rng("histogram_normal").randn(2000).astype(np.float32) * 3
    values[:5] = [0.0, 1e-13, -1e-13, 5e-12, 1.0]
    return tf1.summary.histogram("weights", tf.constant(values.reshape(40, 50)))


@case
def histogram_wide_double():
    rng = _rng("histogram_wide_double")
    values = np.concatenate([10.0 ** rng.uniform(-15, 25, 300), -(10.0 ** rng.uniform(-15, 25, 300)),
                             [1e20, 1.0000000000000002e20, -1e20, 0.0, 1e300, -1e300]])
    rng.shuffle(values)
    return tf1.summary.histogram("wide", tf.constant(values, tf.float64))


@case
def histogram_int32():
    return tf1.summary.histogram("ints", tf.constant(_rng("histogram_int32").randint(-1000, 1000, 500), tf.int32))


@case
def histogram_uint8():
    return tf1.summary.histogram("bytes", tf.constant(_rng("histogram_uint8").randint(0, 256, 300), tf.uint8))


@case
def histogram_half():
    return tf1.summary.histogram("half", tf.constant(_rng("histogram_half").randn(200), tf.float16))


@case
def histogram_bfloat16():
    return tf1.summary.histogram("bf16", tf.constant(_rng("histogram_bfloat16").randn(200), tf.bfloat16))


@case
def histogram_denormals_float():
    return tf1.summary.histogram("tiny32", tf.constant([1e-40, -1e-41, 2.0, 1e-38], tf.float32))


@case
def histogram_denormals_double():
    return tf1.summary.histogram("tiny64", tf.constant([1e-310, -1e-311, 2.0, 1e-300], tf.float64))


@case
def histogram_empty():
    return tf1.summary.histogram("empty", tf.zeros([0, 3], tf.float32))


@case
def histogram_scalar():
    return tf1.summary.histogram("one", tf.constant(-4.5, tf.float32))


@case
def histogram_signed_zeros():
    return tf1.summary.histogram("zeros", tf.constant([0.0, -0.0, -0.0, 0.0], tf.float32))


@case
def histogram_nan():
    return tf1.summary.histogram("nan", tf.constant([1.0, np.nan, np.inf], tf.float32))


@case
def histogram_inf():
    return tf1.summary.histogram("inf", tf.constant([1.0, -np.inf, np.nan], tf.float32))


@case
def histogram_tag_vector():
    return logging_ops.histogram_summary(tf.constant(["a"]), tf.constant([1.0]))


@case
def image_uint8():
    values = _rng("image_uint8").randint(0, 256, (2, 4, 5, 3)).astype(np.uint8)
    return tf1.summary.image("pics", tf.constant(values), max_outputs=3)


@case
def image_float_positive():
    values = _rng("image_float_positive").uniform(0, 3, (3, 4, 5, 1)).astype(np.float32)
    return tf1.summary.image("grey", tf.constant(values), max_outputs=2)


@case
def image_float_negative():
    values = _rng("image_float_negative").randn(2, 3, 4, 3).astype(np.float32)
    values[0, 0, 0, 1] = np.nan
    values[1, 2, 3, 0] = np.inf
    values[1, 1, 1, :] = -np.inf
    return tf1.summary.image("signed", tf.constant(values), max_outputs=4)


@case
def image_double_bad_color():
    values = _rng("image_double_bad_color").randn(1, 3, 3, 4) * 1e3
    values[0, 1, 1, 3] = np.nan
    return logging_ops.image_summary(tf.constant("rgba"), tf.constant(values, tf.float64), max_images=1,
                                     bad_color=tf1.make_tensor_proto(np.array([0, 255, 0, 128, 7], np.uint8)))


@case
def image_half():
    values = _rng("image_half").randn(2, 5, 3, 3)
    return tf1.summary.image("half", tf.constant(values, tf.float16), max_outputs=1)


@case
def image_half_positive():
    values = _rng("image_half_positive").uniform(0, 7, (1, 6, 7, 1))
    return tf1.summary.image("half_pos", tf.constant(values, tf.float16))


@case
def image_denormal_min():
    values = np.full([1, 2, 2, 1], 3.0, np.float32)
    values[0, 0, 0, 0] = -1e-40
    return tf1.summary.image("tiny", tf.constant(values))


@case
def image_constant():
    return tf1.summary.image("flat", tf.zeros([1, 2, 2, 3], tf.float32) + 1e-7)


@case
def image_all_nonfinite():
    return tf1.summary.image("bad", tf.fill([1, 2, 2, 1], np.float32(np.nan)))


@case
def image_empty_batch():
    return tf1.summary.image("none", tf.zeros([0, 2, 2, 3], tf.float32))


@case
def image_bad_depth():
    return logging_ops.image_summary(tf.constant("x"), tf.zeros([1, 2, 2, 2], tf.float32))


@case
def image_tag_vector():
    return logging_ops.image_summary(tf.constant(["x"]), tf.zeros([1, 2, 2, 3], tf.float32))


@case
def image_short_bad_color():
    return logging_ops.image_summary(tf.constant("x"), tf.zeros([1, 2, 2, 3], tf.float32),
                                     bad_color=tf1.make_tensor_proto(np.array([1, 2], np.uint8)))


@case
def image_zero_height():
    return logging_ops.image_summary(tf.constant("x"), tf.zeros([1, 0, 2, 3], tf.float32))


@case
def audio_stereo():
    values = _rng("audio_stereo").uniform(-1.2, 1.2, (2, 10, 2)).astype(np.float32)
    values[0, 0, :] = [0.5, -1.0]
    values[0, 1, :] = [1.0 / 65536, -1.0 / 65536]   # x * 32768 = +-0.5: rounds away from zero
    return logging_ops.audio_summary_v2(tf.constant("sound"), tf.constant(values), tf.constant(8000.5),
                                        max_outputs=3)


@case
def audio_mono_one():
    values = _rng("audio_mono_one").uniform(-1, 1, (3, 7)).astype(np.float32)
    return tf1.summary.audio("mono", tf.constant(values), 22050, max_outputs=1)


@case
def audio_rank1():
    return logging_ops.audio_summary_v2(tf.constant("x"), tf.constant([0.1, 0.2]), tf.constant(8000.0))


@case
def audio_zero_rate():
    return logging_ops.audio_summary_v2(tf.constant("x"), tf.constant([[0.1, 0.2]]), tf.constant(0.0))


@case
def audio_zero_frames():
    return logging_ops.audio_summary_v2(tf.constant("x"), tf.zeros([1, 0]), tf.constant(8000.0))


@case
def audio_nonfinite_low_rate():
    # NaN is written as 0, +-inf clamp; a rate of 0.4 Hz rounds to 0 and is written as 1.
    return logging_ops.audio_summary_v2(tf.constant("x"), tf.constant([[np.nan, 0.5, -np.inf, np.inf]]),
                                        tf.constant(0.4))


@case
def audio_rate_one_element():
    return logging_ops.audio_summary_v2(tf.constant("x"), tf.constant([[0.25, -0.25]]), tf.constant([16000.0]))


@case
def audio_rate_vector():
    return logging_ops.audio_summary_v2(tf.constant("x"), tf.constant([[0.25]]), tf.constant([8000.0, 1.0]))


@case
def audio_rate_inf():
    return logging_ops.audio_summary_v2(tf.constant("x"), tf.constant([[0.25]]), tf.constant(np.inf))


@case
def audio_no_channels():
    return logging_ops.audio_summary_v2(tf.constant("x"), tf.zeros([1, 2, 0]), tf.constant(8000.0))


@case
def audio_tag_vector():
    return logging_ops.audio_summary_v2(tf.constant(["x"]), tf.constant([[0.25]]), tf.constant(8000.0))


@case
def merge_mixed():
    rng = _rng("merge_mixed")
    return tf1.summary.merge([
        tf1.summary.scalar("loss", tf.constant(1.25)),
        tf1.summary.histogram("w", tf.constant(rng.randn(20).astype(np.float32))),
        tf1.summary.image("img", tf.constant(rng.uniform(0, 1, (1, 2, 3, 3)).astype(np.float32))),
        logging_ops.tensor_summary_v2(tf.constant("t"), tf.constant([1, 2, 3]), tf.constant(b"")),
        logging_ops.tensor_summary(tf.constant([4.0, 5.0])),
    ])


@case
def merge_string_matrix():
    parts = tf.stack([logging_ops.scalar_summary(tf.constant(t), tf.constant(float(i)))
                      for i, t in enumerate(("p", "q", "r", "s"))])
    return logging_ops.merge_summary([tf.reshape(parts, [2, 2]), tf.constant("")])


@case
def merge_duplicate():
    return logging_ops.merge_summary([logging_ops.scalar_summary(tf.constant("a"), tf.constant(1.0)),
                                      logging_ops.scalar_summary(tf.constant("a"), tf.constant(2.0))])


@case
def merge_unparseable():
    return logging_ops.merge_summary([tf.constant(b"\x0a\x05ab")])


@case
def tensor_summary_v2_int():
    metadata = tf_summary.SummaryMetadata(display_name="counts", summary_description="a tensor")
    metadata.plugin_data.plugin_name = "text"
    metadata.plugin_data.content = b"\x01\x02"
    return logging_ops.tensor_summary_v2(tf.constant("counts"), tf.constant([[1, -2, 3], [4, 5, 6]], tf.int32),
                                         tf.constant(metadata.SerializeToString()))


@case
def tensor_summary_v2_string():
    return tf1.summary.text("notes", tf.constant(["hello", "wörld"]))


@case
def tensor_summary_v2_dtypes():
    rng = _rng("tensor_summary_v2_dtypes")
    return tf1.summary.merge([
        logging_ops.tensor_summary_v2(tf.constant(f"t_{dtype.name}"), tf.constant(value, dtype), tf.constant(b""))
        for dtype, value in ((tf.float16, rng.randn(3)), (tf.bool, [True, False]), (tf.float64, 2.5),
                             (tf.complex64, [1 + 2j]), (tf.int64, np.zeros([0, 2])), (tf.uint16, [7, 8]))])


@case
def tensor_summary_v2_bad_metadata():
    return logging_ops.tensor_summary_v2(tf.constant("x"), tf.constant(1.0), tf.constant(b"\xff\xff"))


@case
def tensor_summary_v2_tag_vector():
    return logging_ops.tensor_summary_v2(tf.constant(["x"]), tf.constant(1.0), tf.constant(b""))


@case
def tensor_summary_v2_metadata_vector():
    return logging_ops.tensor_summary_v2(tf.constant("x"), tf.constant(1.0), tf.constant([b""]))


@case
def tensor_summary_v1():
    return logging_ops.tensor_summary(tf.constant([[1.5, 2.5]], tf.float32), description="ignored",
                                      display_name="ignored too")


# --- recording -------------------------------------------------------------------------------

def _error_text(exc) -> str:
    """The kernel's own message: in a graph-mode error it is the line after "Node: '<name>'"."""
    lines = [line.strip() for line in exc.message.split("\n")]
    for i, line in enumerate(lines):
        if line.startswith("Node: ") and i + 1 < len(lines):
            return lines[i + 1]
    return lines[0]


def record_case(name: str, fn) -> dict:
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(0)
        summary = fn()
        graph_def = graph.as_graph_def()
    (OUT / "graphs" / f"{name}.pb").write_bytes(graph_def.SerializeToString(deterministic=True))
    entry = {"name": name, "fetch": summary.name, "op": summary.op.type}
    with tf1.Session(graph=graph, config=_config()) as session:
        try:
            value = session.run(summary)
        except tf.errors.OpError as exc:
            entry["error"] = _error_text(exc)
            entry["error_node"] = exc.op.name if exc.op is not None else None
        else:
            entry["summary_b64"] = base64.b64encode(value).decode()
    return entry


def record_merged_graph() -> None:
    """A TF1 training graph with merged summaries, its merge_all tensor, and an event file TF
    wrote for it (graph, three steps of summaries, run metadata)."""
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(1)
        x = tf1.placeholder(tf.float32, [None, 3], name="x")
        y = tf1.placeholder(tf.float32, [None, 1], name="y")
        w = tf1.Variable(tf.constant(_rng("merged").randn(3, 1).astype(np.float32)), name="weights")
        pred = tf.matmul(x, w, name="pred")
        loss = tf.reduce_mean(tf.square(pred - y), name="mse")
        train = tf1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        tf1.summary.scalar("loss", loss)
        tf1.summary.histogram("w", w)
        merged = tf1.summary.merge_all()
        init = tf1.global_variables_initializer()
        graph_def = graph.as_graph_def()
    (OUT / "merged_graph.pb").write_bytes(graph_def.SerializeToString(deterministic=True))
    rng = _rng("merged_feeds")
    feeds = {"x:0": rng.randn(4, 3).astype(np.float32), "y:0": rng.randn(4, 1).astype(np.float32)}
    events_dir = OUT / "tf_events"
    shutil.rmtree(events_dir, ignore_errors=True)
    summaries = []
    with tf1.Session(graph=graph, config=_config()) as session:
        writer = tf1.summary.FileWriter(str(events_dir), graph=graph)
        session.run(init)
        for step in (1, 2, 3):
            options = metadata = None
            if step == 2:
                options = config_pb2.RunOptions(trace_level=config_pb2.RunOptions.FULL_TRACE)
                metadata = config_pb2.RunMetadata()
            value, _ = session.run([merged, train], {graph.get_tensor_by_name(k): v for k, v in feeds.items()},
                                   options=options, run_metadata=metadata)
            summaries.append(value)
            writer.add_summary(value, step)
            if metadata is not None:
                writer.add_run_metadata(metadata, "step2", step)
        writer.close()
    # A fixed name (TensorFlow's has the time and host in it); the records keep their wall times,
    # so this file alone changes when the fixtures are regenerated.
    (written,) = events_dir.iterdir()
    written.rename(events_dir / "events.out.tfevents.0.tensorflow")
    write_json(OUT / "merged.json", {
        "merged_tensor": merged.name, "init": init.name, "train": train.name, "loss": loss.name,
        "feeds": {k: v.tolist() for k, v in feeds.items()},
        "summaries_b64": [base64.b64encode(s).decode() for s in summaries],
        "event_steps": [1, 2, 3], "run_metadata_tag": "step2",
        "notes": "summaries_b64[i] is the merged summary TensorFlow fetched at step i+1, before that "
                 "step's update (the summary and the train op ran in one session.run).",
    })


# --- schema check ----------------------------------------------------------------------------

def _fields(desc, out, seen):
    if desc.full_name in seen:
        return
    seen.add(desc.full_name)
    out[desc.full_name.split(".", 1)[1]] = {f.name: (f.number, f.type) for f in desc.fields}
    for field in desc.fields:
        if field.message_type is not None and field.message_type.file.name.split("/")[-1] in (
                "summary.proto", "event.proto", "histogram.proto"):
            _fields(field.message_type, out, seen)
        if field.enum_type is not None:
            out["enum " + field.enum_type.name] = {v.name: v.number for v in field.enum_type.values}
    for nested in desc.nested_types:
        _fields(nested, out, seen)


def check_schema() -> list[str]:
    from graphtool.proto import event_pb2, summary_pb2

    theirs, ours = {}, {}
    for root in (tf_event.Event.DESCRIPTOR, tf_summary.Summary.DESCRIPTOR):
        _fields(root, theirs, set())
    for root in (event_pb2.Event.DESCRIPTOR, summary_pb2.Summary.DESCRIPTOR):
        _fields(root, ours, set())
    problems = []
    for name in sorted(set(theirs) | set(ours)):
        if theirs.get(name) != ours.get(name):
            problems.append(f"{name}: TensorFlow {theirs.get(name)} != dftool {ours.get(name)}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print the case names")
    args = parser.parse_args()
    if args.list:
        print("\n".join(CASES))
        return 0
    problems = check_schema()
    if problems:
        print("schemas differ from TensorFlow's:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    shutil.rmtree(OUT, ignore_errors=True)
    (OUT / "graphs").mkdir(parents=True)
    cases = [record_case(name, fn) for name, fn in CASES.items()]
    record_merged_graph()
    write_json(OUT / "cases.json", {"tensorflow": tf.__version__, "numpy": np.__version__, "cases": cases})
    errors = sum("error" in c for c in cases)
    print(f"wrote {len(cases)} cases ({errors} errors) to {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
