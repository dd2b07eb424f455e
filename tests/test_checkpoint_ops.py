"""Checkpoint ops through Session.run: TensorFlow's own tf.train.Saver graphs (plain and sharded,
tests/fixtures/checkpoints, made by tools/make_checkpoint_fixtures.py) restore TF's checkpoints
and save byte-identical ones; savers found in and added to graphs; SaveV2/RestoreV2 errors."""
import json
import os
import shutil

import numpy as np
import pytest

from graphtool import dtypes
from graphtool.checkpoint import BundleReader
from graphtool.checkpoint.saver_graph import add_saver, find_saver
from graphtool.checkpoint.writer import write_bundle
from graphtool.errors import InvalidGraphError, RuntimeFailure
from graphtool.exec.session import Session
from graphtool.ir import Graph
from graphtool.shapes import Shape

from .helpers import REPO_ROOT, const, load_graph

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "checkpoints"
CASES = ["tf_saver", "tf_saver_sharded", "tf_saver_v1"]


def _string(text) -> np.ndarray:
    return np.array(str(text).encode(), dtype=object)


def _case(name):
    directory = FIXTURES / name
    return directory, json.loads((directory / "case.json").read_text()), np.load(directory / "expected.npz")


def _as_bytes_array(value):
    if value.dtype == object:
        return np.array(list(value.reshape(-1)), dtype=bytes).reshape(value.shape) if value.size else value
    return value


def _check_values(session, case, expected):
    values = session.run([v["tensor"] for v in case["variables"]]).values
    for info, value in zip(case["variables"], values):
        want = expected[info["key"].replace("/", "__")]
        if "slice" in info:
            want = want[tuple(slice(o, o + n) for o, n in zip(info["slice_offset"], info["slice_shape"]))]
        value = _as_bytes_array(value)
        assert value.shape == want.shape and value.dtype == want.dtype, info["key"]
        assert np.array_equal(value, want), info["key"]


@pytest.mark.parametrize("name", CASES)
def test_find_saver_gives_tensorflows_saver_def_names(name):
    directory, case, _ = _case(name)
    saver = find_saver(load_graph(directory / "graph.pb"))
    assert (saver.filename_tensor, saver.save_tensor, saver.restore_op) == (
        case["saver"]["filename_tensor"], case["saver"]["save_tensor"], case["saver"]["restore_op"])
    assert saver.sharded == case["saver"]["sharded"]
    assert set(saver.keys) == {v["key"] for v in case["variables"]}


@pytest.mark.parametrize("name", CASES)
def test_tensorflow_checkpoint_restores_and_saves_back_byte_identical(name, tmp_path):
    directory, case, expected = _case(name)
    graph = load_graph(directory / "graph.pb")
    saver = find_saver(graph)
    session = Session(graph)
    # No init: the restore itself initializes every variable (ref and resource).
    session.run([], feeds={saver.filename_tensor: _string(directory / case["checkpoint"])}, targets=[saver.restore_op])
    _check_values(session, case, expected)
    (tmp_path / "out").mkdir()
    prefix = tmp_path / "out" / "model.ckpt"
    result = session.run([saver.save_tensor], feeds={saver.filename_tensor: _string(prefix)})
    assert result.values[0][()] == str(prefix).encode()          # the save tensor is the prefix written
    # V2: an index and one data shard; V1 (SaveSlices): one file named by the prefix itself.
    suffixes = [".data-00000-of-00001", ".index"] if case["saver"]["version"] == 2 else [""]
    for suffix in suffixes:
        ours = (tmp_path / "out" / f"model.ckpt{suffix}").read_bytes()
        assert ours == (directory / "ckpt" / f"model.ckpt{suffix}").read_bytes(), suffix
    assert sorted(os.listdir(tmp_path / "out")) == [f"model.ckpt{suffix}" for suffix in suffixes]
    assert case["dftool_save_identical_bytes"] and case["tensorflow_reads_dftool_save"]


def test_save_after_init_then_restore_in_a_fresh_session(tmp_path):
    directory, case, expected = _case("tf_saver")
    graph = load_graph(directory / "graph.pb")
    saver = find_saver(graph)
    first = Session(graph)
    first.run([], targets=[case["init_op"]])
    first.run([saver.save_tensor], feeds={saver.filename_tensor: _string(tmp_path / "m")})
    second = Session(graph)
    second.run([], feeds={saver.filename_tensor: _string(tmp_path / "m")}, targets=[saver.restore_op])
    _check_values(second, case, expected)


def _variables_graph() -> Graph:
    g = Graph()
    init_w = const(g, "w/init", np.arange(6, dtype=np.float32).reshape(2, 3))
    w = g.add_node("VariableV2", "w", attrs={"dtype": dtypes.float32, "shape": Shape([2, 3])})
    g.add_node("Assign", "w/Assign", [w.output(0), init_w.output(0)], attrs={"T": dtypes.float32})
    handle = g.add_node("VarHandleOp", "layer/step", attrs={"dtype": dtypes.int64, "shape": Shape([]),
                                                            "shared_name": "layer/step"})
    init_s = const(g, "layer/step/init", np.int64(41), dtype=dtypes.int64)
    g.add_node("AssignVariableOp", "layer/step/Assign", [handle.output(0), init_s.output(0)],
               attrs={"dtype": dtypes.int64})
    g.add_node("ReadVariableOp", "layer/step/read", [handle.output(0)], attrs={"dtype": dtypes.int64})
    g.add_node("NoOp", "init", control_inputs=[g.node("w/Assign"), g.node("layer/step/Assign")])
    return g


def test_add_saver_covers_every_variable_with_tensorflows_names(tmp_path):
    graph = _variables_graph()
    assert find_saver(graph) is None
    saver = add_saver(graph)
    assert (saver.filename_tensor, saver.save_tensor, saver.restore_op) == (
        "save/Const:0", "save/control_dependency:0", "save/restore_all")
    assert saver.keys == ("layer/step", "w") and find_saver(graph) == saver
    session = Session(graph)
    session.run([], targets=["init"])
    session.run([saver.save_tensor], feeds={saver.filename_tensor: _string(tmp_path / "m")})
    stored = BundleReader(tmp_path / "m").read_all()
    assert stored["layer/step"] == 41 and np.array_equal(stored["w"], np.arange(6).reshape(2, 3))
    # Restore other values (written directly) into a fresh session.
    write_bundle(tmp_path / "other", {"w": np.full((2, 3), 7, np.float32), "layer/step": np.int64(5)})
    fresh = Session(graph)
    fresh.run([], feeds={saver.filename_tensor: _string(tmp_path / "other")}, targets=[saver.restore_op])
    w, step = fresh.run(["w:0", "layer/step/read:0"]).values
    assert step == 5 and np.array_equal(w, np.full((2, 3), 7))
    second = add_saver(graph)                 # a second saver takes the next scope, as TF names it
    assert second.restore_op == "save_1/restore_all"


def test_add_saver_needs_variables():
    g = Graph()
    const(g, "c", 1.0)
    with pytest.raises(InvalidGraphError, match="no variables"):
        add_saver(g)


def _restore_graph(names, specs, dtype_list) -> Graph:
    g = Graph()
    prefix = g.add_node("Placeholder", "prefix", attrs={"dtype": dtypes.string, "shape": Shape([])})
    name_node = const(g, "names", np.array([n.encode() for n in names], dtype=object), dtype=dtypes.string)
    spec_node = const(g, "specs", np.array([s.encode() for s in specs], dtype=object), dtype=dtypes.string)
    g.add_node("RestoreV2", "restore", [prefix.output(0), name_node.output(0), spec_node.output(0)],
               attrs={"dtypes": dtype_list})
    return g


def test_restore_v2_slices_and_output_shapes(tmp_path):
    value = np.arange(12, dtype=np.float32).reshape(4, 3)
    write_bundle(tmp_path / "m", {"a": value, "b": np.array([b"x"], dtype=object)})
    g = _restore_graph(["a", "b", "a"], ["", "", "4 3 1,2:-"], [dtypes.float32, dtypes.string, dtypes.float32])
    a, b, part = Session(g).run(["restore:0", "restore:1", "restore:2"],
                                feeds={"prefix": _string(tmp_path / "m")}).values
    assert np.array_equal(a, value) and b.tolist() == [b"x"] and np.array_equal(part, value[1:3])
    from graphtool.shape_inference import infer_shapes

    shapes = infer_shapes(g)
    assert shapes.shape(g.node("restore").output(2)) == Shape([2, 3])
    assert shapes.shape(g.node("restore").output(0)) == Shape.unknown()   # "": the stored shape


@pytest.mark.parametrize("names, specs, dtype_list, message", [
    (["missing"], [""], [dtypes.float32], "Key missing not found in checkpoint {prefix}"),
    (["a"], [""], [dtypes.float64], "tensor_name = a; expected dtype float64 does not equal original dtype float32"),
    (["a"], ["5 3 0,2:-"], [dtypes.float32], "has shape [4, 3], the restore asks for a slice of shape [5, 3]"),
    (["a", "a"], [""], [dtypes.float32, dtypes.float32], "shape_and_slices should have 2 elements"),
])
def test_restore_v2_errors_name_the_node_and_the_checkpoint(tmp_path, names, specs, dtype_list, message):
    write_bundle(tmp_path / "m", {"a": np.zeros((4, 3), np.float32)})
    g = _restore_graph(names, specs, dtype_list)
    with pytest.raises(RuntimeFailure) as failure:
        Session(g).run([f"restore:{i}" for i in range(len(dtype_list))], feeds={"prefix": _string(tmp_path / "m")})
    text = str(failure.value)
    assert "node 'restore' (RestoreV2)" in text and message.format(prefix=tmp_path / "m") in text


def test_restore_v2_missing_and_corrupt_checkpoints(tmp_path):
    g = _restore_graph(["a"], [""], [dtypes.float32])
    with pytest.raises(RuntimeFailure, match=r"Failed to find any matching files for .*nothing"):
        Session(g).run(["restore:0"], feeds={"prefix": _string(tmp_path / "nothing")})
    write_bundle(tmp_path / "m", {"a": np.zeros(4, np.float32)})
    data = tmp_path / "m.data-00000-of-00001"
    data.write_bytes(b"\x01" + data.read_bytes()[1:])
    with pytest.raises(RuntimeFailure, match=r"checksum mismatch for tensor 'a'"):
        Session(g).run(["restore:0"], feeds={"prefix": _string(tmp_path / "m")})
    (tmp_path / "m.index").write_bytes(b"garbage")
    with pytest.raises(RuntimeFailure, match=r"m.index: truncated"):
        Session(g).run(["restore:0"], feeds={"prefix": _string(tmp_path / "m")})


def _save_graph(tensors: dict, specs=None) -> Graph:
    g = Graph()
    prefix = g.add_node("Placeholder", "prefix", attrs={"dtype": dtypes.string, "shape": Shape([])})
    names = list(tensors)
    name_node = const(g, "names", np.array([n.encode() for n in names], dtype=object), dtype=dtypes.string)
    spec_node = const(g, "specs", np.array([s.encode() for s in (specs or [""] * len(names))], dtype=object),
                      dtype=dtypes.string)
    values = [const(g, f"v{i}", value, dtype=dtype).output(0) for i, (value, dtype) in enumerate(tensors.values())]
    g.add_node("SaveV2", "save", [prefix.output(0), name_node.output(0), spec_node.output(0), *values],
               attrs={"dtypes": [dtype for _, dtype in tensors.values()]})
    return g


def test_save_v2_partitioned_slices(tmp_path):
    full = np.arange(8, dtype=np.float32).reshape(4, 2)
    g = _save_graph({"p": (full[:1], dtypes.float32), "q": (np.int32(3), dtypes.int32)}, ["4 2 0,1:-", ""])
    Session(g).run([], feeds={"prefix": _string(tmp_path / "m")}, targets=["save"])
    reader = BundleReader(tmp_path / "m")
    assert np.array_equal(reader.read_slice("p", "4 2 0,1:-"), full[:1]) and reader.read("q") == 3


def test_save_v2_of_an_uninitialized_variable_fails_and_writes_nothing(tmp_path):
    g = Graph()
    prefix = g.add_node("Placeholder", "prefix", attrs={"dtype": dtypes.string, "shape": Shape([])})
    w = g.add_node("VariableV2", "w", attrs={"dtype": dtypes.float32, "shape": Shape([2])})
    names = const(g, "names", np.array([b"w"], dtype=object), dtype=dtypes.string)
    specs = const(g, "specs", np.array([b""], dtype=object), dtype=dtypes.string)
    g.add_node("SaveV2", "save", [prefix.output(0), names.output(0), specs.output(0), w.output(0)],
               attrs={"dtypes": [dtypes.float32]})
    with pytest.raises(RuntimeFailure, match="Attempting to use uninitialized value w"):
        Session(g).run([], feeds={"prefix": _string(tmp_path / "out" / "m")}, targets=["save"])
    assert not (tmp_path / "out" / "m.index").exists()


def test_sharded_filename_and_filespec():
    g = Graph()
    base = const(g, "base", np.array(b"dir/model", dtype=object), dtype=dtypes.string)
    shard = const(g, "shard", np.int32(3), dtype=dtypes.int32)
    count = const(g, "count", np.int32(12), dtype=dtypes.int32)
    g.add_node("ShardedFilename", "name", [base.output(0), shard.output(0), count.output(0)])
    g.add_node("ShardedFilespec", "spec", [base.output(0), count.output(0)])
    name, spec = Session(g).run(["name:0", "spec:0"]).values
    assert name[()] == b"dir/model-00003-of-00012" and spec[()] == b"dir/model-?????-of-00012"


def test_merge_v2_checkpoints_op(tmp_path):
    write_bundle(tmp_path / "tmp" / "a", {"x": np.zeros(2, np.float32)})
    write_bundle(tmp_path / "tmp" / "b", {"y": np.ones(3, np.int64)})
    g = Graph()
    sources = const(g, "sources", np.array([str(tmp_path / "tmp" / n).encode() for n in "ab"], dtype=object),
                    dtype=dtypes.string)
    dest = const(g, "dest", np.array(str(tmp_path / "m").encode(), dtype=object), dtype=dtypes.string)
    g.add_node("MergeV2Checkpoints", "merge", [sources.output(0), dest.output(0)])
    Session(g).run([], targets=["merge"])
    reader = BundleReader(tmp_path / "m")
    assert reader.num_shards == 2 and reader.read("y").tolist() == [1, 1, 1]
    assert not (tmp_path / "tmp").exists()              # delete_old_dirs: the emptied directory goes
    shutil.rmtree(tmp_path)


def test_saver_runs_from_host_memory_on_a_strict_gpu_double(tmp_path, monkeypatch):
    """On a GPU the checkpoint kernels run on the host (strings): device variables are copied
    down to save and the restored values uploaded; the files equal TF's. (The prefix is the
    Saver's default, "model" in the working directory: feeding the filename on a multi-device
    session is a separate matter, see the report of issue 18's checkpoint part.)"""
    from graphtool.exec.sim_gpu import SimulatedGPUDevice

    directory, case, expected = _case("tf_saver")
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(directory / "ckpt" / f"model.ckpt{suffix}", tmp_path / f"model{suffix}")
    monkeypatch.chdir(tmp_path)
    graph = load_graph(directory / "graph.pb")
    saver = find_saver(graph)
    session = Session(graph, device=SimulatedGPUDevice(strict=True), threads=1)
    session.run([], targets=[saver.restore_op])
    _check_values(session, case, expected)
    for suffix in (".index", ".data-00000-of-00001"):
        (tmp_path / f"model{suffix}").unlink()
    session.run([saver.save_tensor])
    for suffix in (".index", ".data-00000-of-00001"):
        assert (tmp_path / f"model{suffix}").read_bytes() == (directory / "ckpt" / f"model.ckpt{suffix}").read_bytes()
