#!/usr/bin/env python3
"""Record SavedModels and tensor bundles written by real TensorFlow, for dftool's loader tests.

Run it with a TensorFlow 2 environment (dftool and its tests never import TensorFlow), e.g.

    $TF_PYTHON tools/make_saved_model_fixtures.py            # everything
    $TF_PYTHON tools/make_saved_model_fixtures.py --only tf1_resource

Writes, under tests/fixtures/saved_models/:

    <case>/model/                       the SavedModel directory as TensorFlow wrote it
    <case>/manifest.json                signatures (inputs/outputs: key, tensor name, dtype, shape,
                                        method), TensorFlow version, notes
    <case>/<signature>/feeds.npz        inputs keyed by signature input key (input_1, x, ...)
    <case>/<signature>/expected.npz     TensorFlow's outputs keyed by signature output key
    <case>/<signature>/grads.npz        d sum(output)/d input from tf.GradientTape / tf.gradients,
                                        keyed "<output key>/<input key>" (float inputs only)

and under tests/fixtures/bundles/ tensor bundles written by TensorFlow's own SaveV2 /
MergeV2Checkpoints kernels (`<name>.index` + `<name>.data-*`), each with `<name>.json` (key ->
dtype, shape) and `<name>.values.npz` (the saved values; bfloat16 stored as its uint16 bits,
strings as bytes).

Every value is drawn from a per-case seeded generator. TensorFlow's SavedModel writer gives its
functions process-unique names, so a re-run changes saved_model.pb bytes but not what the files mean.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")   # plain kernels: results as on any CPU

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "saved_models"
BUNDLES = ROOT / "tests" / "fixtures" / "bundles"

CASES = {}


def case(func):
    CASES[func.__name__] = func
    return func


def _write_npz(path: Path, arrays: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **arrays)


def _signature_manifest(meta_graph) -> dict:
    from tensorflow.python.framework import dtypes

    def info(tensor_info):
        shape = None if tensor_info.tensor_shape.unknown_rank else \
            [d.size if d.size >= 0 else None for d in tensor_info.tensor_shape.dim]
        return {"name": tensor_info.name, "dtype": dtypes.as_dtype(tensor_info.dtype).name, "shape": shape}

    return {key: {"method": sig.method_name,
                  "inputs": {k: info(v) for k, v in sorted(sig.inputs.items())},
                  "outputs": {k: info(v) for k, v in sorted(sig.outputs.items())}}
            for key, sig in sorted(meta_graph.signature_def.items()) if not key.startswith("__")}


def _record(name: str, model_dir: Path, runs: dict, notes: str) -> None:
    """Write the manifest and each signature's feeds/expected/grads next to model_dir."""
    import tensorflow as tf
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString((model_dir / "saved_model.pb").read_bytes())
    meta = next(m for m in saved.meta_graphs if "serve" in m.meta_info_def.tags)
    manifest = {"case": name, "tensorflow": tf.__version__, "notes": notes,
                "signatures": _signature_manifest(meta), "recorded": sorted(runs)}
    for signature, (feeds, expected, grads) in runs.items():
        _write_npz(model_dir.parent / signature / "feeds.npz", feeds)
        _write_npz(model_dir.parent / signature / "expected.npz", expected)
        if grads:
            _write_npz(model_dir.parent / signature / "grads.npz", grads)
    (model_dir.parent / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def _tf2_runs(loaded, feeds_by_signature: dict, originals: dict) -> dict:
    """Call each signature of the reloaded SavedModel (the expected outputs). Gradients of every
    float output's sum with respect to every float input come from tf.GradientTape over the
    original Python callable (`originals[signature]`, returning the same keys): TensorFlow cannot
    differentiate some reloaded signatures (captured variables lose their handle data)."""
    import tensorflow as tf

    runs = {}
    for signature, feeds in feeds_by_signature.items():
        outputs = loaded.signatures[signature](**{k: tf.constant(v) for k, v in feeds.items()})
        tensors = {k: tf.constant(v) for k, v in feeds.items()}
        float_inputs = {k: t for k, t in tensors.items() if t.dtype.is_floating}
        with tf.GradientTape(persistent=True) as tape:
            for t in float_inputs.values():
                tape.watch(t)
            again = originals[signature](**tensors)
            sums = {k: tf.reduce_sum(v) for k, v in again.items() if v.dtype.is_floating}
        grads = {}
        for out_key, total in sums.items():
            np.testing.assert_allclose(again[out_key].numpy(), outputs[out_key].numpy(), rtol=1e-5, atol=1e-6)
            for in_key, tensor in float_inputs.items():
                g = tape.gradient(total, tensor)
                if g is not None:
                    grads[f"{out_key}/{in_key}"] = g.numpy()
        runs[signature] = (feeds, {k: v.numpy() for k, v in outputs.items()}, grads)
    return runs


@case
def keras_lstm(out: Path):
    """Keras 3 functional model: Embedding -> LSTM (a While over TensorLists) and a float side
    input, exported with model.export (signatures serving_default and serve)."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(12)
    tokens = keras.Input((6,), dtype="int32", name="input_1")
    features = keras.Input((3,), name="input_2")
    embedded = keras.layers.Embedding(20, 4, name="embedding")(tokens)
    hidden = keras.layers.LSTM(5, name="lstm")(embedded)
    joined = keras.layers.Concatenate(name="concat")([hidden, features])
    output = keras.layers.Dense(3, activation="tanh", name="dense")(joined)
    model = keras.Model([tokens, features], output, name="keras_lstm")
    model.export(str(out), format="tf_saved_model", verbose=False)

    rng = np.random.default_rng(12)
    feeds = {"input_1": rng.integers(0, 20, size=(2, 6)).astype(np.int32),
             "input_2": rng.standard_normal((2, 3)).astype(np.float32)}
    loaded = tf.saved_model.load(str(out))
    original = {"serving_default": lambda input_1, input_2: {"output_0": model([input_1, input_2])}}
    original["serve"] = original["serving_default"]
    return _tf2_runs(loaded, {"serving_default": feeds, "serve": feeds}, original), \
        "Keras 3 model.export; the LSTM keeps a functional While over TensorList ops"


@case
def module_two_signatures(out: Path):
    """tf.Module with two signatures: serving_default (dense layer) and iterate (a tf.while_loop
    reading variables in its body, a tf.cond, and tf.gather on a variable -> ResourceGather)."""
    import tensorflow as tf

    rng = np.random.default_rng(7)

    class Model(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(rng.standard_normal((4, 3)).astype(np.float32), name="w")
            self.b = tf.Variable(rng.standard_normal(3).astype(np.float32), name="b")
            self.m = tf.Variable((0.4 * rng.standard_normal((4, 4))).astype(np.float32), name="m")
            self.scale = tf.Variable(np.float32(1.5), name="scale")
            self.table = tf.Variable(rng.standard_normal((10, 4)).astype(np.float32), name="table")

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
        def predict(self, x):
            return tf.tanh(tf.matmul(x, self.w) + self.b)

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x"),
                                      tf.TensorSpec([], tf.int32, name="n"),
                                      tf.TensorSpec([None], tf.int32, name="ids")])
        def iterate(self, x, n, ids):
            h = x + tf.gather(self.table, ids)

            def body(i, h):
                return i + 1, tf.tanh(tf.matmul(h, self.m) + 0.1)

            steps, h = tf.while_loop(lambda i, h: i < n, body, (tf.constant(0), h))
            y = tf.cond(tf.reduce_sum(h) > 0.0, lambda: h * self.scale, lambda: h - self.scale)
            return {"y": y, "steps": steps}

    module = Model()
    tf.saved_model.save(module, str(out), signatures={"serving_default": module.predict,
                                                      "iterate": module.iterate})
    feeds = {"serving_default": {"x": rng.standard_normal((3, 4)).astype(np.float32)},
             "iterate": {"x": rng.standard_normal((2, 4)).astype(np.float32),
                         "n": np.int32(4), "ids": np.array([3, 7], np.int32)}}
    loaded = tf.saved_model.load(str(out))
    original = {"serving_default": lambda x: {"output_0": module.predict(x)}, "iterate": module.iterate}
    return _tf2_runs(loaded, feeds, original), "tf.Module saved with tf.saved_model.save; functional While/If"


@case
def module_stateful(out: Path):
    """tf.Module whose signature also updates a variable (a call counter): that variable cannot
    be frozen. TensorFlow's outputs are those of the first call."""
    import tensorflow as tf

    class Counter(tf.Module):
        def __init__(self):
            super().__init__()
            self.calls = tf.Variable(0.0, name="calls")
            self.scale = tf.Variable(np.float32(3.0), name="scale")

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
        def bump(self, x):
            self.calls.assign_add(1.0)
            return {"y": x * self.scale, "calls": self.calls.read_value()}

    module = Counter()
    tf.saved_model.save(module, str(out), signatures={"serving_default": module.bump})
    feeds = {"x": np.array([1.0, -2.0], np.float32)}
    loaded = tf.saved_model.load(str(out))
    outputs = loaded.signatures["serving_default"](x=tf.constant(feeds["x"]))
    return {"serving_default": (feeds, {k: v.numpy() for k, v in outputs.items()}, {})}, \
        "a signature that assigns a variable: only the read-only one is frozen"


@case
def module_lookup_tables(out: Path):
    """tf.Module with lookup tables: a StaticHashTable (string -> int64) and a
    StaticVocabularyTable with OOV hash buckets, filled by the SavedModel's
    __saved_model_init_op; string preprocessing (lower, strip) before the lookups."""
    import tensorflow as tf

    class Vocab(tf.Module):
        def __init__(self):
            super().__init__()
            self.exact = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(["cat", "dog", "ému"], tf.constant([3, 5, 7], tf.int64)), -1)
            self.vocab = tf.lookup.StaticVocabularyTable(
                tf.lookup.KeyValueTensorInitializer(["a", "b", "c"], tf.constant([0, 1, 2], tf.int64)), 3)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="words")])
        def lookup(self, words):
            clean = tf.strings.lower(tf.strings.strip(words))
            return {"exact": self.exact.lookup(clean), "ids": self.vocab.lookup(clean)}

    module = Vocab()
    tf.saved_model.save(module, str(out), signatures={"serving_default": module.lookup})
    feeds = {"words": np.array([b" Cat", b"dog ", b"a", b"zebra", "\u00e9mu".encode(), b"C"])}
    loaded = tf.saved_model.load(str(out))
    outputs = loaded.signatures["serving_default"](words=tf.constant(feeds["words"]))
    return {"serving_default": (feeds, {k: v.numpy() for k, v in outputs.items()}, {})}, \
        "tables filled by __saved_model_init_op, which dftool's loader makes every lookup wait for"


@case
def tf1_resource(out: Path):
    """A TF1 graph (v1 control flow) with resource variables, saved with the v1 SavedModelBuilder:
    variables read inside a v1 while loop (Enter on the resource handle) and a v1 cond (Switch
    on it), and an embedding lookup (ResourceGather). Needs no function lowering."""
    import tensorflow as tf

    v1 = tf.compat.v1
    rng = np.random.default_rng(3)
    graph = tf.Graph()
    v1.disable_control_flow_v2()   # global switch: turned back on below for the TF2 cases
    try:
        return _tf1_resource(out, graph, rng)
    finally:
        v1.enable_control_flow_v2()


def _tf1_resource(out: Path, graph, rng):
    import tensorflow as tf

    v1 = tf.compat.v1
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, 3], name="x")
        ids = v1.placeholder(tf.int32, [None], name="ids")
        w = v1.get_variable("dense/kernel", initializer=rng.standard_normal((3, 3)).astype(np.float32),
                            use_resource=True)
        b = v1.get_variable("dense/bias", initializer=rng.standard_normal(3).astype(np.float32),
                            use_resource=True)
        table = v1.get_variable("embedding", initializer=rng.standard_normal((8, 3)).astype(np.float32),
                                use_resource=True)
        gain = v1.get_variable("gain", initializer=np.float32(0.5), use_resource=True)
        h = tf.matmul(x, w) + b + v1.nn.embedding_lookup(table, ids)

        def body(i, h):
            return i + 1, tf.tanh(tf.matmul(h, w.read_value()) * gain.read_value())

        _, h = v1.while_loop(lambda i, h: i < 3, body, (tf.constant(0), h))
        y = tf.identity(v1.cond(tf.reduce_mean(h) > 0.0, lambda: h + b.read_value(),
                                lambda: h - gain.read_value()), name="y")
        emb = tf.identity(v1.nn.embedding_lookup(table, ids) * 2.0, name="emb")
        with v1.Session(graph=graph) as session:
            session.run(v1.global_variables_initializer())
            builder = v1.saved_model.Builder(str(out))
            sigs = {"serving_default": v1.saved_model.predict_signature_def({"x": x, "ids": ids}, {"y": y}),
                    "embed": v1.saved_model.predict_signature_def({"ids": ids}, {"emb": emb})}
            builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map=sigs)
            builder.save()
            # The gradient graph is built after the MetaGraph was exported, so it is not saved.
            grads = {"y/x": v1.gradients(tf.reduce_sum(y), x)[0]}
            feeds = {"x": rng.standard_normal((2, 3)).astype(np.float32),
                     "ids": np.array([1, 6], np.int32)}
            y_value, grad_x = session.run([y, grads["y/x"]], {x: feeds["x"], ids: feeds["ids"]})
            emb_value = session.run(emb, {ids: feeds["ids"]})
    runs = {"serving_default": (feeds, {"y": y_value}, {"y/x": grad_x}),
            "embed": ({"ids": feeds["ids"]}, {"emb": emb_value}, {})}
    return runs, "TF1 graph, v1 control flow, resource variables, SavedModelBuilder"


@case
def tf1_ref_variables(out: Path):
    """A classic TF1 graph: reference variables (VariableV2, read through their `read` Identity
    inside a v1 while loop and a v1 cond), saved with the v1 SavedModelBuilder."""
    import tensorflow as tf

    v1 = tf.compat.v1
    rng = np.random.default_rng(5)
    graph = tf.Graph()
    v1.disable_control_flow_v2()
    try:
        with graph.as_default():
            x = v1.placeholder(tf.float32, [None, 4], name="x")
            w = v1.get_variable("w", initializer=rng.standard_normal((4, 4)).astype(np.float32) * 0.5,
                                use_resource=False)
            b = v1.get_variable("b", initializer=rng.standard_normal(4).astype(np.float32), use_resource=False)
            _, h = v1.while_loop(lambda i, h: i < 2, lambda i, h: (i + 1, tf.nn.relu(tf.matmul(h, w) + b)),
                                 (tf.constant(0), x))
            probs = tf.nn.softmax(v1.cond(tf.reduce_sum(h) > 0.0, lambda: h * 2.0, lambda: h + b), name="probs")
            with v1.Session(graph=graph) as session:
                session.run(v1.global_variables_initializer())
                builder = v1.saved_model.Builder(str(out))
                sig = v1.saved_model.predict_signature_def({"x": x}, {"probs": probs})
                builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map={"serving_default": sig})
                builder.save()
                grad_x = v1.gradients(tf.reduce_sum(probs), x)[0]
                feeds = {"x": rng.standard_normal((3, 4)).astype(np.float32)}
                value, grad = session.run([probs, grad_x], {x: feeds["x"]})
    finally:
        v1.enable_control_flow_v2()
    return {"serving_default": (feeds, {"probs": value}, {"probs/x": grad})}, \
        "TF1 graph, reference variables (VariableV2), v1 control flow, SavedModelBuilder"


@case
def tf1_partitioned(out: Path):
    """A TF1 graph with a partitioned resource variable (3 parts of 4, 3 and 3 rows, stored as
    slices of one checkpoint tensor), joined back (ConcatV2 of the parts) and gathered from."""
    import tensorflow as tf

    v1 = tf.compat.v1
    rng = np.random.default_rng(11)
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(11)
        ids = v1.placeholder(tf.int32, [None], name="ids")
        table = v1.get_variable("table", shape=[10, 3], partitioner=v1.fixed_size_partitioner(3),
                                initializer=v1.random_normal_initializer(), use_resource=True)
        full = tf.identity(tf.convert_to_tensor(table), name="full")
        rows = tf.identity(tf.gather(full, ids) * 2.0, name="rows")
        with v1.Session(graph=graph) as session:
            session.run(v1.global_variables_initializer())
            builder = v1.saved_model.Builder(str(out))
            sig = v1.saved_model.predict_signature_def({"ids": ids}, {"rows": rows, "table": full})
            builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map={"serving_default": sig})
            builder.save()
            feeds = {"ids": rng.integers(0, 10, 6).astype(np.int32)}
            rows_value, table_value = session.run([rows, full], {ids: feeds["ids"]})
    return {"serving_default": (feeds, {"rows": rows_value, "table": table_value}, {})}, \
        "TF1 graph, a partitioned resource variable saved as slices"


# --- tensor bundles ------------------------------------------------------------------------------

def _bundle_values(rng) -> dict:
    import ml_dtypes

    return {
        "float32": rng.standard_normal((3, 4)).astype(np.float32),
        "float64": rng.standard_normal(5),
        "float16": rng.standard_normal((2, 2)).astype(np.float16),
        "bfloat16": rng.standard_normal(6).astype(ml_dtypes.bfloat16),
        "int8": rng.integers(-128, 127, 7).astype(np.int8),
        "int16": rng.integers(-3000, 3000, (2, 3)).astype(np.int16),
        "int32": rng.integers(-10**6, 10**6, (4,)).astype(np.int32),
        "int64": np.array([-(2**40), 0, 2**50], np.int64),
        "uint8": rng.integers(0, 255, (3, 1)).astype(np.uint8),
        "uint16": np.array([0, 65535], np.uint16),
        "uint32": np.array([7, 2**31 + 5], np.uint32),
        "uint64": np.array([2**63 + 11], np.uint64),
        "bool": np.array([[True, False], [False, True]]),
        "complex64": (rng.standard_normal(3) + 1j * rng.standard_normal(3)).astype(np.complex64),
        "complex128": rng.standard_normal(2) + 1j * rng.standard_normal(2),
        "scalar": np.float32(2.5),
        "empty": np.zeros((0, 3), np.float32),
        "strings": np.array([b"hello", b"", "gr\u00fc\u00dfe".encode(), b"x" * 300], dtype=object),
        "nested/scope/long_variable_name_to_share_a_prefix/kernel": rng.standard_normal((2, 3)).astype(np.float32),
        "nested/scope/long_variable_name_to_share_a_prefix/bias": rng.standard_normal(3).astype(np.float32),
    }


def _save_v2(prefix: str, values: dict) -> None:
    import tensorflow as tf

    names = sorted(values)
    tensors = [tf.constant(values[k]) if values[k].dtype != object else tf.constant(list(values[k]), tf.string)
               for k in names]
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names), tensors=tensors)


def _bundle_manifest(values: dict) -> dict:
    return {k: {"dtype": "string" if v.dtype == object else str(v.dtype), "shape": list(np.shape(v))}
            for k, v in sorted(values.items())}


def _bundle_npz(values: dict) -> dict:
    import ml_dtypes

    out = {}
    for key, value in values.items():
        if value.dtype == ml_dtypes.bfloat16:
            value = value.view(np.uint16)
        elif value.dtype == object:
            value = np.array(list(value), dtype=bytes)   # fixed-width bytes; none ends in NUL
        out[key] = value
    return out


def make_bundles() -> None:
    """dtypes: one shard, every dtype a bundle stores as raw bytes plus strings; many_keys: enough
    entries for several restart points; sharded: two SaveV2 shards merged by MergeV2Checkpoints."""
    import tensorflow as tf

    shutil.rmtree(BUNDLES, ignore_errors=True)
    BUNDLES.mkdir(parents=True)
    rng = np.random.default_rng(2024)
    groups = {
        "dtypes": [_bundle_values(rng)],
        "many_keys": [{f"layer_{i:03d}/sublayer/weights": rng.standard_normal(2).astype(np.float32)
                       for i in range(120)}],
        "sharded": [{"shard_a/w": rng.standard_normal((2, 2)).astype(np.float32),
                     "shard_a/step": np.int64(42)},
                    {"shard_b/w": rng.standard_normal(3).astype(np.float32),
                     "shard_b/name": np.array([b"second shard"], dtype=object)}],
    }
    for name, parts in groups.items():
        with tempfile.TemporaryDirectory() as tmp:
            prefixes = []
            for index, values in enumerate(parts):
                prefix = os.path.join(tmp, f"part{index}")
                _save_v2(prefix, values)
                prefixes.append(prefix)
            tf.raw_ops.MergeV2Checkpoints(checkpoint_prefixes=prefixes, destination_prefix=str(BUNDLES / name),
                                          delete_old_dirs=False)
        merged = {k: v for values in parts for k, v in values.items()}
        (BUNDLES / f"{name}.json").write_text(json.dumps(_bundle_manifest(merged), indent=2) + "\n")
        _write_npz(BUNDLES / f"{name}.values.npz", _bundle_npz(merged))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="cases (or 'bundles') to regenerate")
    args = parser.parse_args()
    wanted = args.only or [*CASES, "bundles"]
    unknown = [w for w in wanted if w not in CASES and w != "bundles"]
    if unknown:
        parser.error(f"unknown case(s): {', '.join(unknown)}; known: {', '.join(CASES)}, bundles")
    import tensorflow as tf

    for name in wanted:
        if name == "bundles":
            make_bundles()
            print("wrote tensor bundles to", BUNDLES.relative_to(ROOT))
            continue
        case_dir = OUT / name
        shutil.rmtree(case_dir, ignore_errors=True)
        model_dir = case_dir / "model"
        runs, notes = CASES[name](model_dir)
        _record(name, model_dir, runs, notes)
        size = sum(p.stat().st_size for p in case_dir.rglob("*") if p.is_file())
        print(f"{name}: {size:,} bytes, signatures {', '.join(runs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
