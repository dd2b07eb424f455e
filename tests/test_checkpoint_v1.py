"""TensorFlow's V1 checkpoint format (graphtool/checkpoint/v1.py) and the legacy ops: the files
TF's own Save and SaveSlices kernels wrote (tests/fixtures/checkpoints/legacy_ops, values as in
tools/make_checkpoint_fixtures.py) are reproduced byte for byte and read back by Restore,
RestoreSlice and RestoreV2's V1 fallback; errors as TF words them."""
import re

import numpy as np
import pytest

from graphtool import dtypes
from graphtool.checkpoint import CheckpointError
from graphtool.checkpoint.v1 import V1Reader, V1Writer
from graphtool.errors import RuntimeFailure
from graphtool.exec.session import Session
from graphtool.ir import Graph
from graphtool.shapes import Shape

from .helpers import REPO_ROOT, const

LEGACY = REPO_ROOT / "tests" / "fixtures" / "checkpoints" / "legacy_ops"
# What the fixture script saved (LEGACY_SAVE / LEGACY_SLICES there).
SAVED = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "s": np.array([b"x", b"yz"], dtype=object),
         "h": np.array([1.5, 2], np.float16), "b": np.array([True, False]),
         "c": np.array([1 + 2j], np.complex64), "c128": np.array([3 - 1j]), "sc": np.int64(5),
         "i8": np.array([-3, 4], np.int8), "u16": np.array([7], np.uint16), "e": np.zeros((0, 2))}
SLICES = [("p", "4 2 0,2:-", np.ones((2, 2), np.float32)), ("p", "4 2 2,2:-", np.full((2, 2), 2, np.float32)),
          ("v", "3 0,2", np.array([1, 2], np.int32)), ("q", "", np.float64(1))]


def test_writer_reproduces_tensorflows_save_and_save_slices_files(tmp_path):
    writer = V1Writer(tmp_path / "save.ckpt")
    for name, value in SAVED.items():
        writer.add(name, value)
    writer.finish()
    assert (tmp_path / "save.ckpt").read_bytes() == (LEGACY / "save.ckpt").read_bytes()
    writer = V1Writer(tmp_path / "save_slices.ckpt")
    for name, spec, value in SLICES:
        if spec:
            writer.add_slice(name, tuple(int(d) for d in spec.split()[:-1]), spec, value)
        else:
            writer.add(name, value)
    writer.finish()
    assert (tmp_path / "save_slices.ckpt").read_bytes() == (LEGACY / "save_slices.ckpt").read_bytes()


def test_reader_reads_every_tensor_tensorflow_saved():
    reader = V1Reader(LEGACY / "save.ckpt")
    for name, value in SAVED.items():
        got = reader.read(name)
        assert got.dtype == np.asarray(value).dtype and np.array_equal(got, value), name
    slices = V1Reader(LEGACY / "save*.ckpt")                   # a pattern: both files
    assert np.array_equal(slices.read("p"), np.concatenate([np.ones((2, 2)), np.full((2, 2), 2)]))
    assert np.array_equal(slices.read("p", "4 2 1,2:1,1"), [[1], [2]]) and slices.read("a").shape == (2, 3)
    with pytest.raises(CheckpointError, match=r"Error copying slice data: the saved slices of tensor 'v'"):
        slices.read("v")
    assert slices.read("v", "3 0,2").tolist() == [1, 2]


def _graph(op, inputs: dict, **attrs) -> Graph:
    g = Graph()
    refs = [const(g, name, np.array(value.encode(), dtype=object), dtype=dtypes.string).output(0)
            for name, value in inputs.items()]
    g.add_node(op, "restore", refs, attrs=attrs)
    return g


def test_restore_and_restore_slice_ops():
    restored = Session(_graph("Restore", {"pattern": str(LEGACY / "save.ckpt"), "name": "c128"},
                              dt=dtypes.complex128)).run(["restore:0"]).values[0]
    assert restored.tolist() == [3 - 1j]
    part = Session(_graph("RestoreSlice", {"pattern": str(LEGACY / "save_slices.ckpt"), "name": "p",
                                           "spec": "4 2 3,1:-"}, dt=dtypes.float32)).run(["restore:0"]).values[0]
    assert part.tolist() == [[2, 2]]


@pytest.mark.parametrize("op, inputs, dt, message", [
    ("Restore", {"name": "zz"}, dtypes.float32, 'Tensor name "zz" not found in checkpoint files {pattern}'),
    ("Restore", {"name": "a"}, dtypes.int32,
     "Expected to restore a tensor of type int32, got a tensor of type float32 instead: tensor_name = a"),
    ("RestoreSlice", {"name": "a", "spec": "3 3 0,1:-"}, dtypes.float32,
     "Shape in shape_and_slice spec does not match the shape in the save file: [3,3], save file shape: [2,3]"),
])
def test_restore_errors_as_tensorflow_words_them(op, inputs, dt, message):
    pattern = str(LEGACY / "save.ckpt")
    with pytest.raises(RuntimeFailure) as failure:
        Session(_graph(op, {"pattern": pattern, **inputs}, dt=dt)).run(["restore:0"])
    assert f"node 'restore' ({op})" in str(failure.value) and message.format(pattern=pattern) in str(failure.value)


def test_no_matching_files(tmp_path):
    with pytest.raises(RuntimeFailure, match="Failed to find any matching files for .*nothing"):
        Session(_graph("Restore", {"pattern": str(tmp_path / "nothing*"), "name": "a"}, dt=dtypes.float32)).run(
            ["restore:0"])


def test_restore_v2_reads_a_v1_checkpoint():
    g = Graph()
    prefix = const(g, "prefix", np.array(str(LEGACY / "save.ckpt").encode(), dtype=object), dtype=dtypes.string)
    names = const(g, "names", np.array([b"s", b"a"], dtype=object), dtype=dtypes.string)
    specs = const(g, "specs", np.array([b"", b"2 3 1,1:-"], dtype=object), dtype=dtypes.string)
    g.add_node("RestoreV2", "restore", [prefix.output(0), names.output(0), specs.output(0)],
               attrs={"dtypes": [dtypes.string, dtypes.float32]})
    s, a = Session(g).run(["restore:0", "restore:1"]).values
    assert s.tolist() == [b"x", b"yz"] and a.tolist() == [[3, 4, 5]]


def test_save_and_save_slices_ops_write_v1(tmp_path):
    g = Graph()
    filename = g.add_node("Placeholder", "filename", attrs={"dtype": dtypes.string, "shape": Shape([])})
    names = const(g, "names", np.array([b"x", b"y"], dtype=object), dtype=dtypes.string)
    x, y = const(g, "x", np.float32(1.5)), const(g, "y", np.array([1, 2], np.int64), dtype=dtypes.int64)
    g.add_node("Save", "save", [filename.output(0), names.output(0), x.output(0), y.output(0)],
               attrs={"T": [dtypes.float32, dtypes.int64]})
    specs = const(g, "specs", np.array([b"", b"5 1,2"], dtype=object), dtype=dtypes.string)
    g.add_node("SaveSlices", "save_slices", [filename.output(0), names.output(0), specs.output(0), x.output(0),
                                             y.output(0)], attrs={"T": [dtypes.float32, dtypes.int64]})
    session = Session(g)
    session.run([], feeds={"filename": np.array(str(tmp_path / "a").encode(), dtype=object)}, targets=["save"])
    session.run([], feeds={"filename": np.array(str(tmp_path / "b").encode(), dtype=object)}, targets=["save_slices"])
    assert V1Reader(tmp_path / "a").read("y").tolist() == [1, 2]
    reader = V1Reader(tmp_path / "b")
    assert reader.shape("y") == (5,) and reader.read("y", "5 1,2").tolist() == [1, 2] and reader.read("x") == 1.5
    with pytest.raises(RuntimeFailure, match="no such directory"):
        session.run([], feeds={"filename": np.array(str(tmp_path / "no" / "c").encode(), dtype=object)},
                    targets=["save"])


@pytest.mark.parametrize("value, message", [
    (np.zeros(2, np.uint32), "Tensor slice serialization not implemented for dtype 22 (uint32)"),
    (np.zeros(2, dtypes.bfloat16.numpy), "Saving data type bfloat16 not yet supported"),
])
def test_dtypes_tensorflows_v1_format_cannot_hold(tmp_path, value, message):
    writer = V1Writer(tmp_path / "f")
    writer.add("t", value)
    with pytest.raises(CheckpointError, match=re.escape(message)):
        writer.finish()
    assert not (tmp_path / "f").exists()


def test_overlapping_slices_and_corrupt_files(tmp_path):
    writer = V1Writer(tmp_path / "f")
    writer.add_slice("p", (4,), "4 0,3", np.zeros(3))
    writer.add_slice("p", (4,), "4 2,2", np.zeros(2))
    with pytest.raises(CheckpointError, match="overlaps one saved before"):
        writer.finish()
    data = bytearray((LEGACY / "save.ckpt").read_bytes())
    data[20] ^= 0xFF
    (tmp_path / "bad").write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="checksum mismatch"):
        V1Reader(tmp_path / "bad")
