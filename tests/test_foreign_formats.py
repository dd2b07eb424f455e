"""Files in other formats are refused by name, with a hint, exit 3, from a file or from stdin.

The files under tests/fixtures/foreign/ were written by the real tools (Keras, TensorFlow, onnx;
tools/make_foreign_fixtures.py)."""
import pytest

from graphtool import formats, graph_io
from graphtool.errors import InvalidGraphError
from tests.helpers import REPO_ROOT, const_def, error_line, graph_def, run_dftool, serialize, write_graph

FOREIGN = REPO_ROOT / "tests" / "fixtures" / "foreign"

# file -> (words the error line must hold, words of the hint)
CASES = {
    "model.onnx": (["an ONNX model"], ["onnx-tf", "TensorFlow graph"]),
    "model.h5": (["HDF5", "Keras .h5"], ["model.export(DIR)", "SavedModel"]),
    "model.keras": (["Keras v3 model archive"], ["model.export(DIR)"]),
    "model.tflite": (["TensorFlow Lite flatbuffer"], ["SavedModel or frozen GraphDef"]),
    "events.out.tfevents.fixture": (["TensorFlow event file"], ["summaries"]),
    "records.tfrecord": (["a TFRecord file"], []),
    "savedmodel_as_graph.pb": (["a SavedModel proto"], ["SavedModel directory (with variables/)"]),
    "fingerprint.pb": (["a SavedModel fingerprint"], ["SavedModel directory (with variables/)"]),
    "model.meta": (["a MetaGraphDef"], ["graph_def"]),
    "model_meta.pbtxt": (["a MetaGraphDef in text format"], ["graph_def"]),
    "ckpt.index": (["checkpoint index"], ["variable values only"]),
    "ckpt.data-00000-of-00001": (["checkpoint data shard"], ["variable values only"]),
}
# Data shards are raw tensor bytes: only their name says what they are.
NAMELESS = {"ckpt.data-00000-of-00001"}
# `dftool inspect` lists a checkpoint's tensors (tests/test_checkpoint_inspect.py): the graph
# commands refuse it.
CHECKPOINT_FILES = {"ckpt.index", "ckpt.data-00000-of-00001"}


def _check(args, source, words, hint, input=None):
    rc, stdout, stderr = run_dftool(*args, input=input)
    line = error_line(stderr)
    assert rc == 3, stderr
    assert stdout == ""
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert line.startswith(f"error: {source}: ") and "not a GraphDef" in line, line
    for word in words:
        assert word in line, (word, line)
    if hint:
        assert "(hint: " in line
        for word in hint:
            assert word in line.split("(hint: ", 1)[1], (word, line)
    return line


@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_by_name_from_a_file(name):
    words, hint = CASES[name]
    path = str(FOREIGN / name)
    _check(["run" if name in CHECKPOINT_FILES else "inspect", path], path, words, hint)


@pytest.mark.parametrize("name", sorted(CHECKPOINT_FILES))
def test_inspect_lists_a_checkpoint_by_its_files(name):
    rc, stdout, stderr = run_dftool("inspect", FOREIGN / name)
    assert rc == 0, stderr
    assert stdout.startswith(f"checkpoint {FOREIGN / 'ckpt'}: ")


@pytest.mark.parametrize("name", sorted(set(CASES) - NAMELESS))
def test_refused_by_name_from_stdin(name):
    words, hint = CASES[name]
    _check(["inspect", "-"], "<stdin>", words, hint, input=(FOREIGN / name).read_bytes())


@pytest.mark.parametrize("args", [["prune", "{}", "out.pb", "--fetch", "y"], ["run", "{}"],
                                  ["optimize", "{}", "out.pb"], ["place", "{}", "out.pb"]])
def test_every_command_refuses_the_same_way(tmp_path, args):
    path = str(FOREIGN / "savedmodel_as_graph.pb")
    argv = [a.replace("{}", path).replace("out.pb", str(tmp_path / "out.pb")) for a in args]
    _check(argv, path, ["a SavedModel proto"], ["SavedModel directory"])
    assert not (tmp_path / "out.pb").exists()


def test_a_checkpoint_data_shard_on_stdin_is_still_invalid_input():
    rc, _, stderr = run_dftool("inspect", "-", input=(FOREIGN / "ckpt.data-00000-of-00001").read_bytes())
    assert rc == 3 and error_line(stderr).startswith("error: <stdin>: ")


def test_text_saved_model_is_named():
    data = b"saved_model_schema_version: 1\nmeta_graphs {\n  graph_def {\n  }\n}\n"
    with pytest.raises(InvalidGraphError, match="a SavedModel in text format"):
        graph_io.parse_graphdef(data, "sm.pbtxt", "text")


def test_real_graphs_are_not_mistaken_for_foreign_files():
    paths = sorted((REPO_ROOT / "tests" / "fixtures" / "tf").glob("*/graph.pb"))
    paths += sorted((REPO_ROOT / "sample_graphs").glob("*.pb*"))
    assert len(paths) > 20
    for path in paths:
        data = path.read_bytes()
        assert formats.identify(data, path.name) is None, path
        graph_io.load_graphdef(str(path))


# --- the hint says what the bytes are --------------------------------------------------------

def test_binary_garbage_in_a_pb_gets_no_pbtxt_hint(tmp_path):
    path = tmp_path / "g.pb"
    path.write_bytes(bytes(range(256)) * 3)
    rc, _, stderr = run_dftool("inspect", str(path))
    line = error_line(stderr)
    assert rc == 3 and "not a valid binary GraphDef" in line
    assert ".pbtxt" not in line


def test_text_in_a_pb_says_use_a_pbtxt_name(tmp_path):
    path = tmp_path / "g.pb"
    path.write_bytes(serialize(graph_def(const_def("a")), text=True))
    rc, _, stderr = run_dftool("inspect", str(path))
    line = error_line(stderr)
    assert rc == 3 and "text-format GraphDef" in line and "use a .pbtxt name" in line


def test_binary_in_a_pbtxt_says_use_a_pb_name(tmp_path):
    path = tmp_path / "g.pbtxt"
    path.write_bytes(serialize(graph_def(const_def("a", [1.0, 2.0]))))
    rc, _, stderr = run_dftool("inspect", str(path))
    line = error_line(stderr)
    assert rc == 3 and "not a valid text GraphDef" in line and "use a .pb name" in line


# --- the sniffers on hand-made bytes -----------------------------------------------------------

def test_hdf5_after_a_user_block():
    data = b"\0" * 512 + b"\x89HDF\r\n\x1a\n" + b"\0" * 100
    assert formats.identify(data).kind == "keras-h5"


def test_a_zip_without_keras_files_is_a_zip():
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("model/saved_model.pb", b"x")
    assert formats.identify(buffer.getvalue()).what == "a zip archive holding a SavedModel"


def test_a_tfrecord_with_a_bad_length_checksum_is_not_recognised():
    data = bytearray((FOREIGN / "records.tfrecord").read_bytes())
    assert formats.identify(bytes(data)).kind == "tfrecord"
    data[8] ^= 0xFF
    assert formats.identify(bytes(data)) is None


def test_a_graph_whose_first_node_is_named_like_a_tflite_identifier_is_a_graph(tmp_path):
    graph = graph_def(const_def("TFL3_input"))
    assert serialize(graph)[4:8] == b"TFL3"
    assert formats.identify(serialize(graph)) is None
    rc, _, stderr = run_dftool("inspect", "-q", write_graph(graph, tmp_path / "g.pb"))
    assert rc == 0, stderr
