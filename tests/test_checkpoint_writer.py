"""The tensor-bundle writer (graphtool/checkpoint/writer.py, table_writer.py): it reproduces
TensorFlow's own files byte for byte (tests/fixtures/bundles, written by TF's SaveV2 and
MergeV2Checkpoints) and the dftool-written fixture TensorFlow read (tests/fixtures/checkpoints/
dftool_written, made by tools/make_checkpoint_fixtures.py); round trips; bad input."""
import json
import os
import re

import numpy as np
import pytest

from graphtool.checkpoint import BundleReader, CheckpointError, read_table
from graphtool.checkpoint.table_writer import (TableWriter, shortest_separator, short_successor,
                                               write_table)
from graphtool.checkpoint.writer import BundleWriter, merge_bundles, write_bundle

from .helpers import REPO_ROOT

BUNDLES = REPO_ROOT / "tests" / "fixtures" / "bundles"
DFTOOL_WRITTEN = REPO_ROOT / "tests" / "fixtures" / "checkpoints" / "dftool_written"


def _fixture_values(name):
    import ml_dtypes

    manifest = json.loads((BUNDLES / f"{name}.json").read_text())
    stored = np.load(BUNDLES / f"{name}.values.npz")
    values = {}
    for key, info in manifest.items():
        value = stored[key]
        if info["dtype"] == "bfloat16":
            value = value.view(ml_dtypes.bfloat16)
        elif info["dtype"] == "string":
            value = np.array([bytes(v) for v in value.reshape(-1)], dtype=object).reshape(value.shape)
        values[key] = value.reshape(info["shape"])
    return values


def _files(prefix):
    directory, base = os.path.split(str(prefix))
    return {name[len(base):]: (open(os.path.join(directory, name), "rb").read())
            for name in os.listdir(directory) if name.startswith(base + ".")}


# TF wrote each group as SaveV2 of one dict (sorted keys) per part, merged by MergeV2Checkpoints.
_GROUPS = {"dtypes": None, "many_keys": None,
           "sharded": [["shard_a/step", "shard_a/w"], ["shard_b/name", "shard_b/w"]]}


@pytest.mark.parametrize("name", sorted(_GROUPS))
def test_writer_reproduces_tensorflows_bundles_byte_for_byte(name, tmp_path):
    values = _fixture_values(name)
    parts = _GROUPS[name] or [sorted(values)]
    prefixes = []
    for index, keys in enumerate(parts):
        prefix = tmp_path / "tmp" / f"part{index}"
        write_bundle(prefix, {key: values[key] for key in sorted(keys)})
        prefixes.append(str(prefix))
    merge_bundles(prefixes, str(tmp_path / name), delete_old_dirs=False)
    ours, theirs = _files(tmp_path / name), _files(BUNDLES / name)
    assert sorted(ours) == sorted(suffix for suffix in theirs if suffix.startswith((".index", ".data")))
    for suffix, data in ours.items():
        assert data == theirs[suffix], suffix
    assert not list((tmp_path / "tmp").glob("*.index"))      # the merged parts' indexes are gone


def _write_dftool_fixture(directory):
    arrays = np.load(DFTOOL_WRITTEN / "inputs.npz")
    plan = json.loads((DFTOOL_WRITTEN / "inputs.json").read_text())
    writers = {}
    for step in plan:
        writer = writers.setdefault(step["shard"], BundleWriter(directory / f"part-{step['shard']}"))
        value = arrays[step["array"]]
        if value.dtype.kind == "S":
            value = np.array([bytes(v) for v in value.reshape(-1)], dtype=object).reshape(value.shape)
        if "spec" in step:
            writer.add_slice(step["key"], step["full_shape"], step["spec"], value)
        else:
            writer.add(step["key"], value)
    for shard in sorted(writers):
        writers[shard].finish()
    merge_bundles([str(directory / f"part-{s}") for s in sorted(writers)], str(directory / "ckpt" / "model.ckpt"))
    return directory / "ckpt" / "model.ckpt"


def test_dftool_written_fixture_is_reproduced_and_reads_as_tensorflow_read_it(tmp_path):
    prefix = _write_dftool_fixture(tmp_path)
    ours, committed = _files(prefix), _files(DFTOOL_WRITTEN / "ckpt" / "model.ckpt")
    assert ours == committed                        # the files TensorFlow read, byte for byte
    tf_meta = json.loads((DFTOOL_WRITTEN / "tf_read.json").read_text())
    tf_values = np.load(DFTOOL_WRITTEN / "tf_read.npz")
    reader = BundleReader(prefix)
    values = reader.read_all()
    assert sorted(values) == sorted(tf_meta)
    for key, info in tf_meta.items():
        value = values[key]
        assert value.dtype.name == info["dtype"] or (info["dtype"] == "string" and value.dtype == object), key
        assert list(value.shape) == info["shape"], key
        want = tf_values[key.replace("/", "__")]
        if value.dtype == object:
            value = np.array(list(value.reshape(-1)), dtype=bytes).reshape(value.shape)
        assert np.array_equal(value, want), key
    assert tf_meta["emb"]["restored_by_tf_saver_slices"]
    # The directories of the merged parts are left (they are tmp_path itself) but not their indexes.
    assert not (tmp_path / "part-0.index").exists() and not (tmp_path / "part-1.index").exists()


def test_round_trip_every_kind_of_tensor(tmp_path):
    import ml_dtypes

    values = {
        "f32": np.arange(12, dtype=np.float32).reshape(3, 4), "f64": np.float64(-1.5),
        "bf16": np.array([1.5, -2], ml_dtypes.bfloat16), "u64": np.array([2**64 - 1], np.uint64),
        "c128": np.array([1 + 2j]), "b": np.array([[True], [False]]), "empty": np.zeros((2, 0, 3), np.int16),
        "s": np.array([[b"a", b"\xff\x00"], [b"", "text"]], dtype=object), "s0": np.array(b"scalar", dtype=object),
        "s_empty": np.zeros((0,), dtype=object),
    }
    write_bundle(tmp_path / "m", values)
    got = BundleReader(tmp_path / "m").read_all()
    for key, value in values.items():
        assert got[key].shape == value.shape and got[key].dtype == value.dtype, key
        expected = value if key != "s" else np.array([[b"a", b"\xff\x00"], [b"", b"text"]], dtype=object)
        assert np.array_equal(got[key], expected), key


def test_big_string_lengths_and_many_blocks(tmp_path):
    writer = BundleWriter(tmp_path / "m")
    long_text = np.array([b"x" * 200_000, b"y" * 3], dtype=object)
    writer.add("long", long_text)
    for i in range(3000):                          # an index block of many restart points
        writer.add(f"k/{i:05d}", np.int32(i))
    writer.finish()
    reader = BundleReader(tmp_path / "m")
    assert reader.read("long")[0] == b"x" * 200_000 and reader.read("k/02999") == 2999


def test_partitioned_tensor_parts_and_slices(tmp_path):
    full = np.arange(20, dtype=np.float32).reshape(5, 4)
    writer = BundleWriter(tmp_path / "m")
    writer.add_slice("emb", (5, 4), "5 4 0,2:-", full[:2])
    writer.add_slice("emb", (5, 4), "5 4 2,3:-", full[2:])
    writer.finish()
    reader = BundleReader(tmp_path / "m")
    assert np.array_equal(reader.read("emb"), full)
    assert np.array_equal(reader.read_slice("emb", "5 4 1,3:1,2"), full[1:4, 1:3])
    entry = reader.entry("emb")
    assert len(entry.slices) == 2 and not entry.slices[0].extent[1].HasField("length")


@pytest.mark.parametrize("build, message", [
    (lambda w: (w.add("a", np.float32(1)), w.add("a", np.float32(2))), "tensor 'a' saved twice"),
    (lambda w: w.add("", np.float32(1)), "empty name"),
    (lambda w: w.add("s", np.array([1, "x"], dtype=object)), "holds a int"),
    (lambda w: w.add_slice("p", (4,), "4 0,2", np.zeros(3, np.float32)), "needs a value of shape [2]"),
    (lambda w: w.add_slice("p", (4,), "5 0,2", np.zeros(2, np.float32)), "is for shape [5]"),
    (lambda w: w.add_slice("p", (4,), "4 3,2", np.zeros(2, np.float32)), "does not fit its shape"),
    (lambda w: (w.add("p", np.zeros(4)), w.add_slice("p", (4,), "4 0,2", np.zeros(2))), "saved whole and in parts"),
])
def test_bad_tensors_are_refused_and_nothing_is_written(tmp_path, build, message):
    writer = BundleWriter(tmp_path / "m")
    with pytest.raises(CheckpointError, match=re.escape(message)):
        build(writer)
        writer.finish()
    assert os.listdir(tmp_path) == []


def test_write_into_an_unwritable_place_names_the_file(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(CheckpointError, match="cannot create the checkpoint directory"):
        write_bundle(blocker / "sub" / "m", {"a": np.zeros(1)})


def test_a_rewrite_replaces_the_old_checkpoint_without_leftovers(tmp_path):
    write_bundle(tmp_path / "m", {"a": np.zeros(3)})
    write_bundle(tmp_path / "m", {"b": np.ones(2, np.int32)})
    assert sorted(os.listdir(tmp_path)) == ["m.data-00000-of-00001", "m.index"]   # no temp files left
    assert BundleReader(tmp_path / "m").keys() == ["b"]


def test_merge_errors(tmp_path):
    write_bundle(tmp_path / "a", {"x": np.zeros(1)})
    write_bundle(tmp_path / "b", {"x": np.ones(1)})
    with pytest.raises(CheckpointError, match="tensor 'x' is also in another checkpoint"):
        merge_bundles([str(tmp_path / "a"), str(tmp_path / "b")], str(tmp_path / "m"))
    with pytest.raises(CheckpointError, match="no such file"):
        merge_bundles([str(tmp_path / "missing")], str(tmp_path / "m"))
    with pytest.raises(CheckpointError, match="no checkpoint to merge"):
        merge_bundles([str(tmp_path / "missing")], str(tmp_path / "m"), allow_missing_files=True)


def test_table_writer_matches_the_reader_and_leveldb_separators():
    entries = [(f"key{i:04d}".encode(), bytes([i % 256]) * (i % 7)) for i in range(500)]
    data = write_table(entries, block_size=256)
    assert read_table(data, "t") == entries
    assert shortest_separator(b"abcdef", b"abzzz") == b"abd"
    assert shortest_separator(b"abc", b"abcd") == b"abc"
    assert shortest_separator(b"ab\xff", b"ac") == b"ab\xff"
    assert short_successor(b"\xff\xffa") == b"\xff\xffb" and short_successor(b"\xff") == b"\xff"
    writer = TableWriter()
    writer.add(b"b", b"")
    with pytest.raises(CheckpointError, match="out of order"):
        writer.add(b"a", b"")
