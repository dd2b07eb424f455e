#!/usr/bin/env python3
"""Record checkpoints in both directions between TensorFlow and dftool, for the checkpoint tests.

Run it with a TensorFlow 2 environment; it runs dftool's side in dftool's own Python (a
subprocess: dftool never imports TensorFlow, TensorFlow's Python never imports dftool):

    $TF_PYTHON tools/make_checkpoint_fixtures.py --dftool-python .venv/bin/python

(or $DFTOOL_PYTHON names dftool's Python).

Writes, under tests/fixtures/checkpoints/:

    tf_saver/               a TF1 graph with a tf.compat.v1.train.Saver (write_version V2, not
        graph.pb            sharded) over ref and resource variables of every kind a checkpoint
        ckpt/model.ckpt.*   stores (float32/64, int32/64, bool, float16, complex64/128, string,
        ckpt/checkpoint     scalars, an empty tensor, a 32x40 float32 matrix, a variable
        expected.npz        partitioned in 3 parts), the checkpoint TF's Saver wrote after
        case.json           running `init`, TF's state file, the values (key -> array; strings as
                            fixed-width bytes) and case.json: the saver's node names, the init
                            op, every variable (node, checkpoint key, dtype, shape, the tensor
                            that reads it, its partition)
    tf_saver_sharded/       the same with Saver(sharded=True) (ShardedFilename, SaveV2 to a
                            _temp prefix, MergeV2Checkpoints)
    tf_saver_v1/            the same with Saver(write_version=V1): one V1 file (SaveSlices;
                            restored by RestoreV2, which reads V1 when there is no .index)
    legacy_ops/             V1 files TF's raw Save and SaveSlices kernels wrote (the values are
                            LEGACY_SAVE / LEGACY_SLICES in this script; the tests repeat them)
    dftool_written/         a checkpoint dftool's BundleWriter wrote (two SaveV2-style shards
        inputs.npz          merged by merge_bundles, strings, a partitioned tensor in slices)
        inputs.json         from inputs.npz/inputs.json, and what TensorFlow read from it:
        ckpt/model.ckpt.*   tf_read.npz (tf.train.load_checkpoint: key -> value) and
        tf_read.json        tf_read.json (key -> dtype, shape from TF's maps; plus the
                            partitioned tensor restored by a TF Saver through RestoreV2 slices)

The script checks, and stops if not: dftool restores TF's checkpoints through the graph's own
Saver (Session.run of save/restore_all) with equal values, and its SaveV2 then writes a
checkpoint TensorFlow reads with equal values (byte-for-byte equal to TF's own, recorded in
case.json as "dftool_save_identical_bytes"); TensorFlow reads dftool's checkpoint with equal values.
Every value comes from a seeded generator; re-running reproduces the files.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "checkpoints"


def variable_values(seed: int) -> dict[str, np.ndarray]:
    """The variables of the TF-written cases: name -> initial (= saved) value."""
    rng = np.random.default_rng(seed)
    return {
        "dense/kernel": rng.standard_normal((3, 4)).astype(np.float32),
        "dense/bias": rng.standard_normal(4).astype(np.float64),
        "counts": rng.integers(-1000, 1000, (2, 3)).astype(np.int32),
        "global_step": np.int64(12345678901),
        "mask": rng.random((2, 2)) > 0.5,
        "half": rng.standard_normal(5).astype(np.float16),
        "cplx64": (rng.standard_normal(3) + 1j * rng.standard_normal(3)).astype(np.complex64),
        "cplx128": (rng.standard_normal(2) + 1j * rng.standard_normal(2)).astype(np.complex128),
        "vocab": np.array([b"alpha", b"", b"\x00\xffbytes", "d\u00e9j\u00e0".encode()], dtype=object),
        "scalar_f": np.float32(2.5),
        "empty": np.zeros((0, 3), np.float32),
        "big": rng.standard_normal((32, 40)).astype(np.float32),
    }


RESOURCE_VARIABLES = ("dense/kernel", "global_step")     # the rest are ref variables (VariableV2)
PARTITIONED = ("embedding", (6, 4), 3)                   # name, full shape, parts


def _npz_value(value: np.ndarray) -> np.ndarray:
    value = np.asarray(value)
    if value.dtype == object:
        return np.array(list(value.reshape(-1)), dtype=bytes).reshape(value.shape) if value.size else \
            np.zeros(value.shape, dtype="S1")
    return value


def _json(path: Path, data) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


# --- TensorFlow's side -------------------------------------------------------------------------

def make_tf_saver_case(name: str, sharded: bool, version: int = 2) -> None:
    import tensorflow as tf

    directory = OUT / name
    shutil.rmtree(directory, ignore_errors=True)
    (directory / "ckpt").mkdir(parents=True)
    values = variable_values(18)
    rng = np.random.default_rng(19)
    part_name, part_shape, parts = PARTITIONED
    partitioned_value = rng.standard_normal(part_shape).astype(np.float32)
    graph = tf.Graph()
    variables = []
    with graph.as_default():
        for key, value in values.items():
            if key in RESOURCE_VARIABLES:
                var = tf.compat.v1.get_variable(key, initializer=tf.constant(value), use_resource=True)
                read = var._graph_element.name          # its ReadVariableOp
            else:
                if value.dtype == object:
                    init = tf.constant(list(value.reshape(-1)), dtype=tf.string)
                else:
                    init = tf.constant(value)
                var = tf.compat.v1.Variable(init, name=key, use_resource=False)
                read = var._ref().name
            variables.append({"node": var.op.name, "key": key, "dtype": var.dtype.base_dtype.name,
                              "shape": list(np.shape(value)), "tensor": read, "resource": key in RESOURCE_VARIABLES})
        part_var = tf.compat.v1.get_variable(part_name, initializer=tf.constant(partitioned_value),
                                             partitioner=tf.compat.v1.fixed_size_partitioner(parts),
                                             use_resource=False)
        for piece in part_var:
            info = piece._save_slice_info
            variables.append({"node": piece.op.name, "key": part_name, "dtype": "float32",
                              "shape": list(info.full_shape), "tensor": piece._ref().name, "resource": False,
                              "slice": info.spec, "slice_offset": list(info.var_offset),
                              "slice_shape": list(info.var_shape)})
        init = tf.compat.v1.global_variables_initializer()
        saver = tf.compat.v1.train.Saver(sharded=sharded, write_version=tf.compat.v1.train.SaverDef.V2
                                         if version == 2 else tf.compat.v1.train.SaverDef.V1)
    (directory / "graph.pb").write_bytes(graph.as_graph_def().SerializeToString(deterministic=True))
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    cwd = os.getcwd()
    os.chdir(directory)                      # a relative save path: the state file holds relative paths
    try:
        with tf.compat.v1.Session(graph=graph, config=config) as session:
            session.run(init)
            saver.save(session, "ckpt/model.ckpt", write_meta_graph=False)
    finally:
        os.chdir(cwd)
    expected = {key: _npz_value(v) for key, v in values.items()}
    expected[part_name] = partitioned_value
    np.savez(directory / "expected.npz", **{k.replace("/", "__"): v for k, v in expected.items()})
    case = {
        "tensorflow": tf.__version__,
        "init_op": init.name,
        "saver": {"filename_tensor": saver.saver_def.filename_tensor_name,
                  "save_tensor": saver.saver_def.save_tensor_name,
                  "restore_op": saver.saver_def.restore_op_name, "sharded": sharded, "version": version},
        "checkpoint": "ckpt/model.ckpt",
        "variables": variables,
        "expected_npz_keys": "checkpoint key with '/' written as '__'",
    }
    _json(directory / "case.json", case)
    check_tf_restores(directory, str(directory / "ckpt" / "model.ckpt"))


def check_tf_restores(directory: Path, prefix: str) -> None:
    """TF restores `prefix` through the case graph's own Saver with the expected values (what
    tf.train.load_checkpoint cannot show for V1 files: its V1 reader lacks complex, half and
    partitioned tensors)."""
    import tensorflow as tf

    case = json.loads((directory / "case.json").read_text())
    expected = np.load(directory / "expected.npz")
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString((directory / "graph.pb").read_bytes())
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(graph_def, name="")
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(case["saver"]["restore_op"], {case["saver"]["filename_tensor"]: prefix})
        values = session.run([v["tensor"] for v in case["variables"]])
    for info, value in zip(case["variables"], values):
        want = expected[info["key"].replace("/", "__")]
        if "slice" in info:
            want = want[tuple(slice(o, o + n) for o, n in zip(info["slice_offset"], info["slice_shape"]))]
        assert np.array_equal(_npz_value(np.asarray(value)), want), (prefix, info["key"])


def tf_read_checkpoint(prefix: str) -> tuple[dict, dict]:
    """What tf.train.load_checkpoint reads: key -> value, key -> {dtype, shape}."""
    import tensorflow as tf

    reader = tf.train.load_checkpoint(prefix)
    dtypes_ = reader.get_variable_to_dtype_map()
    shapes = reader.get_variable_to_shape_map()
    values = {key: reader.get_tensor(key) for key in sorted(dtypes_)}
    return values, {key: {"dtype": dtypes_[key].name, "shape": list(shapes[key])} for key in sorted(dtypes_)}


def tf_restore_slices(prefix: str, key: str, shape, parts: int) -> np.ndarray:
    """The partitioned tensor `key` restored by a TF Saver of a partitioned variable (RestoreV2
    with shape_and_slices), reassembled."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        var = tf.compat.v1.get_variable(key, shape=shape, dtype=tf.float32,
                                        partitioner=tf.compat.v1.fixed_size_partitioner(parts),
                                        initializer=tf.compat.v1.zeros_initializer(), use_resource=False)
        saver = tf.compat.v1.train.Saver([var])
        whole = tf.concat([piece._ref() for piece in var], axis=0)
    with tf.compat.v1.Session(graph=graph) as session:
        saver.restore(session, prefix)
        return session.run(whole)


# --- dftool's side (run in dftool's Python) ----------------------------------------------------

def dftool_inputs(seed: int) -> tuple[dict, list]:
    """What dftool writes: arrays, and how (key, shard, slice spec) in the order written."""
    rng = np.random.default_rng(seed)
    arrays = {
        "w": rng.standard_normal((4, 3)).astype(np.float32),
        "b": rng.standard_normal(3).astype(np.float64),
        "step": np.array(7, np.int64),
        "flags": np.array([True, False, True]),
        "h": rng.standard_normal((2, 2)).astype(np.float16),
        "c": (rng.standard_normal(2) + 1j * rng.standard_normal(2)).astype(np.complex64),
        "i8": rng.integers(-128, 128, 5).astype(np.int8),
        "u16": rng.integers(0, 65535, 3).astype(np.uint16),
        "names": np.array([b"one", b"", b"thr\x00ee"], dtype="S6"),
        "empty": np.zeros((0,), np.int32),
        "emb_part0": rng.standard_normal((3, 2)).astype(np.float32),
        "emb_part1": rng.standard_normal((2, 2)).astype(np.float32),
    }
    plan = [
        {"shard": 0, "key": "dense/w", "array": "w"},
        {"shard": 0, "key": "dense/b", "array": "b"},
        {"shard": 0, "key": "global_step", "array": "step"},
        {"shard": 0, "key": "emb", "array": "emb_part0", "full_shape": [5, 2], "spec": "5 2 0,3:-"},
        {"shard": 1, "key": "flags", "array": "flags"},
        {"shard": 1, "key": "half", "array": "h"},
        {"shard": 1, "key": "complex", "array": "c"},
        {"shard": 1, "key": "int8", "array": "i8"},
        {"shard": 1, "key": "uint16", "array": "u16"},
        {"shard": 1, "key": "names", "array": "names"},
        {"shard": 1, "key": "empty", "array": "empty"},
        {"shard": 1, "key": "emb", "array": "emb_part1", "full_shape": [5, 2], "spec": "5 2 3,2:-"},
    ]
    return arrays, plan


DFTOOL_WRITE = r"""
import json, sys, tempfile, os
import numpy as np
from graphtool.checkpoint.writer import BundleWriter, merge_bundles
directory = sys.argv[1]
arrays = np.load(os.path.join(directory, "inputs.npz"))
plan = json.load(open(os.path.join(directory, "inputs.json")))
with tempfile.TemporaryDirectory() as tmp:
    writers = {}
    for step in plan:
        writer = writers.setdefault(step["shard"], BundleWriter(os.path.join(tmp, "part-%d" % step["shard"])))
        value = arrays[step["array"]]
        if value.dtype.kind == "S":
            value = np.array([bytes(v) for v in value.reshape(-1)], dtype=object).reshape(value.shape)
        if "spec" in step:
            writer.add_slice(step["key"], step["full_shape"], step["spec"], value)
        else:
            writer.add(step["key"], value)
    for shard in sorted(writers):
        writers[shard].finish()
    merge_bundles([os.path.join(tmp, "part-%d" % s) for s in sorted(writers)],
                  os.path.join(directory, "ckpt", "model.ckpt"))
"""

DFTOOL_SESSION = r"""
import json, sys
import numpy as np
from graphtool.loader import load_graph
from graphtool.exec.session import Session
from graphtool.checkpoint.saver_graph import find_saver
directory, out_prefix = sys.argv[1], sys.argv[2]
case = json.load(open(directory + "/case.json"))
graph = load_graph(directory + "/graph.pb")
saver = find_saver(graph)
assert saver.filename_tensor == case["saver"]["filename_tensor"], saver
assert saver.save_tensor == case["saver"]["save_tensor"], saver
assert saver.restore_op == case["saver"]["restore_op"], saver
session = Session(graph)
prefix = np.array((directory + "/" + case["checkpoint"]).encode(), dtype=object)
session.run([], feeds={saver.filename_tensor: prefix}, targets=[saver.restore_op])
values = session.run([v["tensor"] for v in case["variables"]]).values
expected = np.load(directory + "/expected.npz")
for info, value in zip(case["variables"], values):
    want = expected[info["key"].replace("/", "__")]
    if "slice" in info:
        want = want[tuple(slice(o, o + n) for o, n in zip(info["slice_offset"], value.shape))]
    if value.dtype == object:
        value = np.array(list(value.reshape(-1)), dtype=bytes).reshape(value.shape) if value.size else value
    assert value.shape == want.shape and np.array_equal(value, want), (info["key"], value, want)
session.run([saver.save_tensor], feeds={saver.filename_tensor: np.array(out_prefix.encode(), dtype=object)})
print("ok")
"""


def run_dftool(python: str, code: str, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([python, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=600)
    if result.returncode:
        sys.exit(f"dftool side failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def make_dftool_written(python: str) -> None:
    directory = OUT / "dftool_written"
    shutil.rmtree(directory, ignore_errors=True)
    (directory / "ckpt").mkdir(parents=True)
    arrays, plan = dftool_inputs(20)
    np.savez(directory / "inputs.npz", **arrays)
    _json(directory / "inputs.json", plan)
    run_dftool(python, DFTOOL_WRITE, str(directory))
    prefix = str(directory / "ckpt" / "model.ckpt")
    values, meta = tf_read_checkpoint(prefix)
    emb = next(step for step in plan if step["key"] == "emb")
    # A TF Saver of a partitioned variable reads the slices back (RestoreV2 with shape_and_slices).
    restored = tf_restore_slices(prefix, "emb", emb["full_shape"], 2)
    assert np.array_equal(restored, values["emb"])
    for step in plan:
        want = arrays[step["array"]]
        got = values[step["key"]]
        if "spec" in step:
            start, length = (int(v) for v in step["spec"].split()[-1].split(":")[0].split(","))
            got = got[start:start + length]
        if want.dtype.kind == "S":
            got = np.array(list(np.asarray(got).reshape(-1)), dtype=want.dtype).reshape(want.shape)
        assert got.dtype == want.dtype and np.array_equal(got, want), step
    np.savez(directory / "tf_read.npz", **{k.replace("/", "__"): _npz_value(np.asarray(v, dtype=object)
                                                                             if np.asarray(v).dtype.kind in "OS" else v)
                                           for k, v in values.items()})
    meta["emb"]["restored_by_tf_saver_slices"] = True
    _json(directory / "tf_read.json", meta)


def case_version(directory: Path) -> int:
    return json.loads((directory / "case.json").read_text())["saver"]["version"]


LEGACY_SAVE = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "s": np.array([b"x", b"yz"], dtype=object),
               "h": np.array([1.5, 2], np.float16), "b": np.array([True, False]),
               "c": np.array([1 + 2j], np.complex64), "c128": np.array([3 - 1j]), "sc": np.int64(5),
               "i8": np.array([-3, 4], np.int8), "u16": np.array([7], np.uint16), "e": np.zeros((0, 2))}
LEGACY_SLICES = [("p", "4 2 0,2:-", np.ones((2, 2), np.float32)), ("p", "4 2 2,2:-", np.full((2, 2), 2, np.float32)),
                 ("v", "3 0,2", np.array([1, 2], np.int32)), ("q", "", np.float64(1))]


def make_legacy_op_files() -> None:
    """legacy_ops/: V1 files written by TF's own Save and SaveSlices kernels (values in the script)."""
    import tensorflow as tf

    directory = OUT / "legacy_ops"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)

    def constant(value):
        return tf.constant(list(value), tf.string) if value.dtype == object else tf.constant(value)

    tf.raw_ops.Save(filename=str(directory / "save.ckpt"), tensor_names=list(LEGACY_SAVE),
                    data=[constant(v) for v in LEGACY_SAVE.values()])
    tf.raw_ops.SaveSlices(filename=str(directory / "save_slices.ckpt"), tensor_names=[n for n, _, _ in LEGACY_SLICES],
                          shapes_and_slices=[s for _, s, _ in LEGACY_SLICES],
                          data=[constant(np.asarray(v)) for _, _, v in LEGACY_SLICES])
    restored = tf.raw_ops.Restore(file_pattern=str(directory / "save_*.ckpt"), tensor_name="p", dt=tf.float32)
    assert np.array_equal(restored.numpy(), np.concatenate([v for n, _, v in LEGACY_SLICES if n == "p"]))


def check_dftool_session(python: str, name: str) -> None:
    """dftool restores TF's checkpoint through the graph's Saver, saves it again; TF reads that."""
    import tensorflow as tf

    directory = OUT / name
    with tempfile.TemporaryDirectory() as tmp:
        out_prefix = os.path.join(tmp, "dftool", "model.ckpt")
        os.makedirs(os.path.dirname(out_prefix))          # (a V1 save does not create it, in TF neither)
        run_dftool(python, DFTOOL_SESSION, str(directory), out_prefix)
        check_tf_restores(directory, out_prefix)
        suffixes = (".index", ".data-00000-of-00001") if case_version(directory) == 2 else ("",)
        committed = directory / "ckpt"
        identical = all(Path(out_prefix + suffix).read_bytes() == (committed / f"model.ckpt{suffix}").read_bytes()
                        for suffix in suffixes)
    case = json.loads((directory / "case.json").read_text())
    case["dftool_save_identical_bytes"] = identical
    case["tensorflow_reads_dftool_save"] = True
    _json(directory / "case.json", case)
    print(f"{name}: dftool restored and re-saved; TF {tf.__version__} reads it; identical bytes: {identical}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dftool-python", default=os.environ.get("DFTOOL_PYTHON"),
                        help="the Python dftool is installed in (default: $DFTOOL_PYTHON)")
    args = parser.parse_args()
    if not args.dftool_python:
        parser.error("name dftool's Python with --dftool-python or $DFTOOL_PYTHON")
    OUT.mkdir(parents=True, exist_ok=True)
    make_tf_saver_case("tf_saver", sharded=False)
    make_tf_saver_case("tf_saver_sharded", sharded=True)
    make_tf_saver_case("tf_saver_v1", sharded=False, version=1)
    make_legacy_op_files()
    make_dftool_written(args.dftool_python)
    for name in ("tf_saver", "tf_saver_sharded", "tf_saver_v1"):
        check_dftool_session(args.dftool_python, name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
