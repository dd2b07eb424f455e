"""Every way an input can be bad: `dftool inspect` exits 3 (2 for usage errors) with one line
`error: ...` naming the file and, where there is one, the node; never a traceback."""
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

from graphtool import dtypes
from tests.helpers import F32, const_def, error_line, graph_def, node_def, run_dftool, serialize, write_graph


def _write(path, data: bytes | str) -> str:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return str(path)


def _valid_graph_def():
    weights = np.arange(64, dtype=np.float32).reshape(8, 8)
    return graph_def(const_def("w", weights), node_def("y", "Identity", ["w"], T=F32))


# Each case writes a bad graph file into tmp_path; the error line must contain every `expected`
# string (the file is always checked separately).
def _missing_input(tmp):
    return write_graph(graph_def(const_def("a"), node_def("b", "Identity", ["nowhere"], T=F32)), tmp / "g.pb")


def _bad_output_index(tmp):
    return write_graph(graph_def(const_def("a"), node_def("b", "Identity", ["a:5"], T=F32)), tmp / "g.pb")


def _duplicate_names(tmp):
    return write_graph(graph_def(const_def("twice"), const_def("twice")), tmp / "g.pb")


def _unknown_op(tmp):
    return write_graph(graph_def(node_def("weird", "NoSuchOpAnywhere")), tmp / "g.pb")


def _missing_required_attr(tmp):
    return write_graph(graph_def(node_def("c", "Const", dtype=F32)), tmp / "g.pb")


def _wrong_attr_type(tmp):
    return write_graph(graph_def(const_def("a"), node_def("b", "Identity", ["a"], T=7)), tmp / "g.pb")


def _wrong_input_dtype(tmp):
    nodes = [const_def("ints", [1, 2], dtypes.int32), node_def("floats", "Identity", ["ints"], T=F32)]
    return write_graph(graph_def(*nodes), tmp / "g.pb")


def _cycle(tmp):
    nodes = [const_def("a"), node_def("add", "Identity", ["back"], T=F32),
             node_def("back", "Identity", ["add"], T=F32)]
    return write_graph(graph_def(*nodes), tmp / "g.pb")


def _exit_outside_frame(tmp):
    return write_graph(graph_def(const_def("a"), node_def("lost_exit", "Exit", ["a"], T=F32)), tmp / "g.pb")


def _next_iteration_outside_frame(tmp):
    nodes = [const_def("a"), node_def("lost_next", "NextIteration", ["a"], T=F32)]
    return write_graph(graph_def(*nodes), tmp / "g.pb")


def _text_syntax_error(tmp):
    text = 'node {\n  name: "a"\n  op: "Const"\n  attr { key: "dtype" value { type: DT_FLOAT } }\n  oops\n}\n'
    return _write(tmp / "g.pbtxt", text)


def _random_bytes(tmp):
    return _write(tmp / "g.pb", np.random.default_rng(7).bytes(500))


def _truncated(tmp):
    data = serialize(_valid_graph_def())
    return _write(tmp / "g.pb", data[: len(data) // 2])


def _empty(tmp):
    return _write(tmp / "g.pb", b"")


def _json_file(tmp):
    return _write(tmp / "g.pb", '{"node": []}')


def _directory(tmp):
    (tmp / "adir.pb").mkdir()
    return str(tmp / "adir.pb")


def _missing_file(tmp):
    return str(tmp / "absent.pb")


BAD_FILES = {
    "missing file": (_missing_file, ["no such file"]),
    "directory": (_directory, ["directory"]),
    "random bytes": (_random_bytes, ["not a valid binary GraphDef"]),
    "truncated protobuf": (_truncated, ["not a valid binary GraphDef"]),
    "empty file": (_empty, ["empty"]),
    "JSON in a .pb": (_json_file, []),
    "input names a missing node": (_missing_input, ["'b'", "'nowhere'"]),
    "bad output index": (_bad_output_index, ["'b'", "a:5", "1 output"]),
    "duplicate node names": (_duplicate_names, ["duplicate", "'twice'"]),
    "unknown op": (_unknown_op, ["'weird'", "NoSuchOpAnywhere"]),
    "missing required attr": (_missing_required_attr, ["'c'", "'value'"]),
    "wrong attr type": (_wrong_attr_type, ["'b'", "'T'", "type", "int"]),
    "input of the wrong dtype": (_wrong_input_dtype, ["'floats'", "float32", "'ints'", "int32"]),
    "cycle without NextIteration": (_cycle, ["cycle", "add", "back"]),
    "Exit outside any frame": (_exit_outside_frame, ["'lost_exit'", "outside"]),
    "NextIteration outside any frame": (_next_iteration_outside_frame, ["'lost_next'", "outside"]),
    "text syntax error": (_text_syntax_error, ["5:"]),
}


def _assert_invalid(args, expected, *, names, input=None, code=3, user=None, result_on_stdout=False):
    rc, stdout, stderr = run_dftool(*args, input=input, user=user)
    line = error_line(stderr)
    assert rc == code, stderr
    assert result_on_stdout or stdout == ""
    for text in [names, *expected]:
        assert text in line, f"{text!r} not in {line!r}"
    return line


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_bad_graph_file_is_one_error_line(tmp_path, case):
    make, expected = BAD_FILES[case]
    path = make(tmp_path)
    # inspect reports what it can first (on stdout: -q keeps the result asked for; stderr has only
    # the error); run refuses at once.
    _assert_invalid(["inspect", "-q", path], expected, names=path, result_on_stdout=True)
    _assert_invalid(["run", path], expected, names=path)


# A file that parses but holds an invalid graph: inspect summarises it, then exits 3.
BROKEN_GRAPHS = [case for case in BAD_FILES if BAD_FILES[case][0] not in
                 (_missing_file, _directory, _random_bytes, _truncated, _empty, _json_file, _text_syntax_error)]


@pytest.mark.parametrize("case", BROKEN_GRAPHS)
def test_inspect_of_a_broken_graph_reports_then_exits_3(tmp_path, case):
    make, expected = BAD_FILES[case]
    path = make(tmp_path)
    rc, stdout, stderr = run_dftool("inspect", path)
    assert rc == 3
    assert stdout.startswith(f"graph {path}: ")   # the summary, on stdout
    line = error_line(stderr)
    assert line.startswith(f"error: {path}: ")
    for text in expected:
        assert text in line


NOBODY = 65534


@pytest.fixture
def unprivileged_user():
    """The uid to run dftool as so that file permissions apply: None for an ordinary user; for
    root (who reads any file) the `nobody` user, if Python and the repo work for it."""
    if os.geteuid() != 0:
        return None
    try:
        rc, _, stderr = run_dftool("--version", user=NOBODY)
    except OSError as exc:  # e.g. the interpreter lives under /root
        rc, stderr = None, str(exc)
    if rc != 0:
        pytest.skip(f"running as root, and dftool cannot run as nobody: {stderr.strip()[-200:]}")
    return NOBODY


@pytest.fixture
def open_dir():
    """A directory everyone may enter (pytest's tmp_path is private to its owner)."""
    with tempfile.TemporaryDirectory() as name:
        os.chmod(name, 0o755)
        yield Path(name)


def test_unreadable_file(open_dir, unprivileged_user):
    path = write_graph(_valid_graph_def(), open_dir / "secret.pb")
    os.chmod(path, 0)
    _assert_invalid(["inspect", path], ["permission denied"], names=path, user=unprivileged_user)


def test_file_in_a_directory_you_cannot_enter(open_dir, unprivileged_user):
    (open_dir / "private").mkdir(mode=0o700)
    path = write_graph(_valid_graph_def(), open_dir / "private" / "g.pb")
    _assert_invalid(["inspect", path], ["permission denied"], names=path, user=unprivileged_user)


def test_json_on_stdin():
    _assert_invalid(["inspect", "-"], ["JSON"], names="<stdin>", input='{"node": []}')


def test_garbage_on_stdin():
    _assert_invalid(["inspect", "-"], ["not a GraphDef"], names="<stdin>",
                    input=np.random.default_rng(3).bytes(300))


def test_empty_stdin():
    _assert_invalid(["inspect", "-"], ["empty"], names="<stdin>", input=b"")


def test_debug_adds_a_traceback(tmp_path):
    path = _missing_input(tmp_path)
    rc, _, stderr = run_dftool("--debug", "inspect", path)
    assert rc == 3
    assert "Traceback (most recent call last)" in stderr
    assert stderr.splitlines()[-1].startswith("error: ")


def test_debug_after_the_command_works_too(tmp_path):
    rc, _, stderr = run_dftool("inspect", _unknown_op(tmp_path), "--debug")
    assert rc == 3 and "Traceback" in stderr


@pytest.mark.parametrize("args, mentions", [
    (["inspect", "--no-such-flag", "g.pb"], "--no-such-flag"),
    (["inspect"], "GRAPH"),
    (["no-such-command"], "no-such-command"),
])
def test_usage_errors_exit_2_with_one_line(args, mentions):
    rc, stdout, stderr = run_dftool(*args)
    line = error_line(stderr)
    assert rc == 2 and stdout == ""
    assert mentions in line
