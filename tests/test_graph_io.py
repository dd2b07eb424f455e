"""Reading and writing GraphDef files: formats, detection, atomic writes."""
import os

import numpy as np
import pytest
from google.protobuf import text_format

from graphtool import graph_io
from graphtool.errors import InvalidGraphError, RuntimeFailure
from graphtool.proto import GraphDef
from graphtool.tensor import from_ndarray


def _small_graph() -> GraphDef:
    graph_def = GraphDef()
    const = graph_def.node.add(name="c", op="Const")
    const.attr["dtype"].type = 1
    const.attr["value"].tensor.CopyFrom(from_ndarray(np.ones((2, 2), np.float32)))
    ident = graph_def.node.add(name="out", op="Identity", input=["c"])
    ident.attr["T"].type = 1
    graph_def.versions.producer = 1994
    return graph_def


@pytest.mark.parametrize("name", ["g.pb", "g.pbtxt"])
def test_save_and_load_round_trip(tmp_path, name):
    path = str(tmp_path / name)
    graph_io.save_graphdef(_small_graph(), path)
    assert graph_io.load_graphdef(path) == _small_graph()
    raw = open(path, "rb").read()
    assert raw.startswith(b"node") == name.endswith(".pbtxt")


@pytest.mark.parametrize("text", [False, True])
def test_format_is_detected_on_stdin(text):
    data = graph_io.serialize_graphdef(_small_graph(), text)
    assert graph_io.parse_graphdef(data, "<stdin>", None) == _small_graph()


def test_failed_write_leaves_the_old_file_untouched(tmp_path, monkeypatch):
    path = tmp_path / "out.pb"
    path.write_bytes(b"precious")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(RuntimeFailure, match="disk full.*untouched"):  # one line, exit 1
        graph_io.save_graphdef(_small_graph(), str(path))
    assert path.read_bytes() == b"precious"
    assert [p.name for p in tmp_path.iterdir()] == ["out.pb"]  # no temp file left behind


@pytest.mark.parametrize("data, message", [
    (b"", "empty"),
    (b"   \n", "empty"),
    (b'{"node": []}', "JSON"),
    (os.urandom(0) + bytes(range(256)) * 3, "not a GraphDef"),
    (b"node { name: 'a' op: ", "not a GraphDef"),
])
def test_garbage_is_invalid_input(data, message):
    with pytest.raises(InvalidGraphError, match=message):
        graph_io.parse_graphdef(data, "in.pb", None)


def test_truncated_binary_is_invalid(tmp_path):
    data = graph_io.serialize_graphdef(_small_graph(), False)
    path = tmp_path / "cut.pb"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InvalidGraphError, match="cut.pb"):
        graph_io.load_graphdef(str(path))


def test_text_syntax_error_reports_the_line(tmp_path):
    path = tmp_path / "bad.pbtxt"
    path.write_text("node {\n  name: 'a'\n  op: 'Const'\n  bogus_field: 3\n}\n")
    with pytest.raises(InvalidGraphError, match=r"bad.pbtxt.*4:"):
        graph_io.load_graphdef(str(path))


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(InvalidGraphError, match="no such file"):
        graph_io.load_graphdef(str(tmp_path / "nope.pb"))
    with pytest.raises(InvalidGraphError, match="is a directory"):
        graph_io.load_graphdef(str(tmp_path))


def test_text_output_is_tensorflow_text_format():
    text = graph_io.serialize_graphdef(_small_graph(), True).decode()
    parsed = GraphDef()
    text_format.Parse(text, parsed)
    assert parsed == _small_graph()


@pytest.mark.parametrize("length", [ord("{"), ord("[")])
def test_binary_graph_whose_first_node_length_is_a_bracket_is_read(tmp_path, length):
    # The binary form starts b"\n" + varint length: a first NodeDef of 123 (or 91) bytes makes it
    # start b"\n{" (b"\n["), which is not JSON.
    graph_def = GraphDef()
    node = graph_def.node.add(name="n", op="NoOp")
    node.device = "d" * (length - len(node.SerializeToString()) - 2)
    assert len(node.SerializeToString()) == length
    path = tmp_path / "g.pb"
    graph_io.save_graphdef(graph_def, str(path))
    assert path.read_bytes()[:2] == b"\n" + bytes([length])
    assert graph_io.load_graphdef(str(path)) == graph_def
    assert graph_io.parse_graphdef(path.read_bytes(), "<stdin>", None) == graph_def
