#!/usr/bin/env python3
"""Make the small files behind dftool's "refused by name" and "unknown ops are opaque" tests.

Writes, with the real tools that produce each format (no downloads, fixed seeds, tiny models):

    tests/fixtures/foreign/
        model.onnx              ONNX ModelProto (onnx.helper: one Add node)
        model.h5                Keras model saved in HDF5 (legacy .h5)
        model.keras             Keras v3 archive (zip with config.json / metadata.json)
        model.tflite            TFLite flatbuffer (tf.lite.TFLiteConverter)
        events.out.tfevents.fixture   TensorFlow event file (tf.summary writer)
        records.tfrecord        a plain TFRecord file (tf.io.TFRecordWriter, not events)
        savedmodel_as_graph.pb  the saved_model.pb of a tiny tf.Module, under another name
        fingerprint.pb          that SavedModel's fingerprint
        model.meta              a MetaGraphDef (tf.compat.v1.train.export_meta_graph)
        model_meta.pbtxt        the same MetaGraphDef in text format
        ckpt.index / ckpt.data-00000-of-00001   a tensor-bundle checkpoint (tf.train.Checkpoint)
    tests/fixtures/opaque/
        linalg.pb               a TF1 graph mixing ops dftool knows (MatMul, Einsum, ...) with
                                linear-algebra ops it may not (Cholesky, MatrixInverse, Qr,
                                MatrixDeterminant); nodes carry `_output_shapes`
        feeds.npz / expected.npz   feeds and TensorFlow's values of every output
        case.json               which outputs need which linear-algebra op
        function_cond.pb (+ _feeds.npz, _expected.npz)   a TF2 function graph whose cond branch
                                (a library function) holds a Cholesky

Run it with a Python that has TensorFlow, Keras and onnx (the tests never import them), e.g.

    $TF_PYTHON tools/make_foreign_fixtures.py

Files whose bytes embed a time stamp or a host name (Keras archives, event files, SavedModels)
are still tiny and semantically stable; only their names and kinds matter to the tests.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
FOREIGN = ROOT / "foreign"
OPAQUE = ROOT / "opaque"
SEED = 1234


def make_onnx(out: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 2])
    graph = helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"])], "add", [x, y], [z])
    model = helper.make_model(graph, producer_name="dftool-fixtures",
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    (out / "model.onnx").write_bytes(model.SerializeToString())


def _tiny_keras_model():
    import keras

    keras.utils.set_random_seed(SEED)
    inputs = keras.Input(shape=(3,), name="x")
    outputs = keras.layers.Dense(2, name="dense")(inputs)
    return keras.Model(inputs, outputs)


def make_keras(out: Path) -> None:
    model = _tiny_keras_model()
    model.save(out / "model.h5")
    model.save(out / "model.keras")


def make_tflite(out: Path) -> None:
    import tensorflow as tf

    @tf.function(input_signature=[tf.TensorSpec([1, 2], tf.float32)])
    def double(x):
        return x * 2.0

    converter = tf.lite.TFLiteConverter.from_concrete_functions([double.get_concrete_function()], double)
    (out / "model.tflite").write_bytes(converter.convert())


def make_events(out: Path) -> None:
    import tensorflow as tf

    with tempfile.TemporaryDirectory() as tmp:
        writer = tf.summary.create_file_writer(tmp)
        with writer.as_default():
            tf.summary.write("loss", tf.constant(0.5), step=1)  # needs no TensorBoard
        writer.close()
        (event_file,) = Path(tmp).glob("events.out.tfevents.*")
        shutil.copy(event_file, out / "events.out.tfevents.fixture")
    with tf.io.TFRecordWriter(str(out / "records.tfrecord")) as records:
        records.write(b"one record")
        records.write(b"another record")


def make_saved_model(out: Path) -> None:
    import tensorflow as tf

    class Scale(tf.Module):
        def __init__(self):
            self.w = tf.Variable([2.0, 3.0], name="w")

        @tf.function(input_signature=[tf.TensorSpec([2], tf.float32, name="x")])
        def __call__(self, x):
            return {"y": x * self.w}

    with tempfile.TemporaryDirectory() as tmp:
        module = Scale()
        tf.saved_model.save(module, tmp, signatures=module.__call__)
        shutil.copy(Path(tmp) / "saved_model.pb", out / "savedmodel_as_graph.pb")
        shutil.copy(Path(tmp) / "fingerprint.pb", out / "fingerprint.pb")

    ckpt = tf.train.Checkpoint(w=tf.Variable(np.arange(3, dtype=np.float32), name="w"))
    with tempfile.TemporaryDirectory() as tmp:
        written = ckpt.write(os.path.join(tmp, "ckpt"))
        shutil.copy(written + ".index", out / "ckpt.index")
        shutil.copy(written + ".data-00000-of-00001", out / "ckpt.data-00000-of-00001")


def make_meta_graph(out: Path) -> None:
    import tensorflow as tf
    from google.protobuf import text_format

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        tf.identity(x * 2.0, name="y")
        meta = tf.compat.v1.train.export_meta_graph(graph=graph)
    (out / "model.meta").write_bytes(meta.SerializeToString(deterministic=True))
    (out / "model_meta.pbtxt").write_text(text_format.MessageToString(meta))


def make_linalg(out: Path) -> None:
    """Outputs: out_mm and out_einsum need only ops dftool knows; out_chol (Cholesky),
    out_inv (MatrixInverse + Cholesky), out_qr (Qr, two outputs) and out_det
    (MatrixDeterminant) each need one or more linear-algebra ops."""
    import tensorflow as tf

    rng = np.random.default_rng(SEED)
    feeds = {"a:0": rng.standard_normal((3, 3)).astype(np.float32),
             "b:0": rng.standard_normal((2, 4)).astype(np.float32),
             "c:0": rng.standard_normal((4, 3)).astype(np.float32)}
    graph = tf.Graph()
    with graph.as_default():
        a = tf.compat.v1.placeholder(tf.float32, [3, 3], name="a")
        b = tf.compat.v1.placeholder(tf.float32, [2, 4], name="b")
        c = tf.compat.v1.placeholder(tf.float32, [4, 3], name="c")
        spd = tf.add(tf.matmul(a, a, transpose_b=True), 3.0 * tf.eye(3), name="spd")
        chol = tf.linalg.cholesky(spd, name="chol")
        inv = tf.linalg.inv(spd, name="inv")
        q, r = tf.linalg.qr(a, name="qr")
        det = tf.linalg.det(spd, name="det")
        tf.identity(chol * 2.0, name="out_chol")
        tf.reduce_sum(inv + tf.linalg.cholesky(inv, name="chol_inv"), name="out_inv")
        tf.matmul(q, r, name="out_qr")
        tf.identity(det, name="out_det")
        tf.add(tf.matmul(b, c), 1.0, name="out_mm")
        tf.identity(tf.einsum("ij,jk->ik", b, c), name="out_einsum")
    fetches = ["out_mm:0", "out_einsum:0", "out_chol:0", "out_inv:0", "out_qr:0", "out_det:0"]
    with tf.compat.v1.Session(graph=graph) as session:
        values = session.run(fetches, {graph.get_tensor_by_name(k): v for k, v in feeds.items()})
    graph_def = graph.as_graph_def(add_shapes=True)
    (out / "linalg.pb").write_bytes(graph_def.SerializeToString(deterministic=True))
    np.savez(out / "feeds.npz", **feeds)
    np.savez(out / "expected.npz", **dict(zip(fetches, values)))
    case = {
        "tensorflow": tf.__version__,
        "feeds": sorted(feeds),
        "fetches": fetches,
        "needs": {"out_mm:0": [], "out_einsum:0": [], "out_chol:0": ["Cholesky"],
                  "out_inv:0": ["Cholesky", "MatrixInverse"], "out_qr:0": ["Qr"],
                  "out_det:0": ["MatrixDeterminant"]},
    }
    (out / "case.json").write_text(json.dumps(case, indent=2) + "\n")


def make_function_cond(out: Path) -> None:
    """A TF2 function graph (StatelessIf with branch functions): Cholesky sits in the true
    branch's body, out_sum needs no branch."""
    import tensorflow as tf

    @tf.function(input_signature=[tf.TensorSpec([3, 3], tf.float32, name="a"),
                                  tf.TensorSpec([], tf.bool, name="p")], autograph=False)
    def model(a, p):
        spd = tf.matmul(a, a, transpose_b=True) + 3.0 * tf.eye(3)
        y = tf.cond(p, lambda: tf.linalg.cholesky(spd), lambda: spd * 2.0)
        return {"out_cond": tf.identity(y, name="out_cond"),
                "out_sum": tf.identity(tf.reduce_sum(a) + 1.0, name="out_sum")}

    rng = np.random.default_rng(SEED + 1)
    feeds = {"a:0": rng.standard_normal((3, 3)).astype(np.float32), "p:0": np.array(True)}
    concrete = model.get_concrete_function()
    graph_def = concrete.graph.as_graph_def()
    values = model(tf.constant(feeds["a:0"]), tf.constant(feeds["p:0"]))
    (out / "function_cond.pb").write_bytes(graph_def.SerializeToString(deterministic=True))
    np.savez(out / "function_cond_feeds.npz", **feeds)
    np.savez(out / "function_cond_expected.npz", **{"out_cond:0": values["out_cond"].numpy(),
                                                    "out_sum:0": values["out_sum"].numpy()})


def main() -> int:
    FOREIGN.mkdir(parents=True, exist_ok=True)
    OPAQUE.mkdir(parents=True, exist_ok=True)
    for make, out in ((make_onnx, FOREIGN), (make_keras, FOREIGN), (make_tflite, FOREIGN),
                      (make_events, FOREIGN), (make_saved_model, FOREIGN), (make_meta_graph, FOREIGN),
                      (make_linalg, OPAQUE), (make_function_cond, OPAQUE)):
        make(out)
        print(f"{make.__name__}: done", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
