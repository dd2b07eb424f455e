"""No silent surprises (issue 16, point 4): each case through the real entry point, with its
message and exit code."""
import os

import numpy as np
import pytest

from graphtool import graph_io
from graphtool.ir import from_graphdef, to_graphdef

from .helpers import REPO_ROOT, error_line, load_graph, run_dftool, run_dftool_on_terminal

SAMPLES = REPO_ROOT / "sample_graphs"
MLP = SAMPLES / "mlp.pb"
MLP_FEEDS = SAMPLES / "mlp.feeds.npz"


def pinned_mlp(tmp_path, every: int = 1) -> str:
    """The MLP sample with every `every`-th node pinned to /device:GPU:0."""
    graph = from_graphdef(graph_io.load_graphdef(str(MLP)))
    for index, node in enumerate(graph.nodes):
        if index % every == 0:
            node.device = "/device:GPU:0"
    path = str(tmp_path / f"gpu_{every}.pb")
    graph_io.save_graphdef(to_graphdef(graph), path)
    return path


# --- a GPU that is not there --------------------------------------------------------------------

def _gpu_present() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:   # no cupy, no driver, no device
        return False


@pytest.mark.skipif(_gpu_present(), reason="a GPU is present: this checks the no-GPU fallback")
@pytest.mark.parametrize("every", [1, 2], ids=["whole graph", "half the nodes"])
def test_a_gpu_pinned_graph_without_a_gpu_runs_on_the_cpu_with_one_notice(tmp_path, every):
    code, stdout, stderr = run_dftool("run", pinned_mlp(tmp_path, every), "--feeds", MLP_FEEDS)
    assert code == 0, stderr
    assert stdout.startswith("probs  float32[4, 10]")
    pinned = 11 if every == 1 else 6
    assert stderr.splitlines() == [line for line in stderr.splitlines() if line.startswith("soft placement: ")]
    assert len(stderr.splitlines()) == 1, stderr
    assert stderr.startswith(f"soft placement: {pinned} node(s) asking for gpu:0 run on cpu:0 (")
    assert "-v names them" in stderr
    code, _, verbose = run_dftool("run", pinned_mlp(tmp_path, every), "--feeds", MLP_FEEDS, "-v")
    assert code == 0 and "node 'dense/MatMul' asked for gpu:0, runs on cpu:0" in verbose
    code, _, quiet = run_dftool("run", pinned_mlp(tmp_path, every), "--feeds", MLP_FEEDS, "-q")
    assert code == 0 and quiet == ""


# --- --output's extension ------------------------------------------------------------------------

def test_output_npy_with_one_fetch_writes_an_npy_file(tmp_path):
    code, _, stderr = run_dftool("run", MLP, "--feeds", MLP_FEEDS, "--output", tmp_path / "all.npz")
    assert code == 0, stderr
    code, _, stderr = run_dftool("run", MLP, "--feeds", MLP_FEEDS, "--output", tmp_path / "probs.npy")
    assert code == 0 and "wrote 1 tensor(s)" in stderr
    array = np.load(tmp_path / "probs.npy", allow_pickle=False)
    assert isinstance(array, np.ndarray) and array.shape == (4, 10)
    np.testing.assert_array_equal(array, np.load(tmp_path / "all.npz")["probs"])


def test_output_npy_with_several_fetches_is_refused(tmp_path):
    code, _, stderr = run_dftool("run", MLP, "--feeds", MLP_FEEDS, "--fetch", "probs", "--fetch", "dense/Relu",
                                 "--output", tmp_path / "r.npy")
    assert code == 2
    assert "an .npy file holds one array, and there are 2 fetches" in error_line(stderr)
    assert not (tmp_path / "r.npy").exists()


@pytest.mark.parametrize("name", ["r.txt", "r.json", "results"])
def test_output_with_another_extension_is_refused(tmp_path, name):
    code, stdout, stderr = run_dftool("run", MLP, "--feeds", MLP_FEEDS, "--output", tmp_path / name)
    assert code == 2 and stdout == ""
    assert "dftool writes results as .npz (or .npy for one fetch)" in error_line(stderr)
    assert not (tmp_path / name).exists()


# --- a graph OUT's extension ----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["out.onnx", "out.json"])
def test_graph_out_with_an_extension_dftool_does_not_write_is_refused(tmp_path, name):
    code, _, stderr = run_dftool("optimize", MLP, tmp_path / name)
    assert code == 2
    line = error_line(stderr)
    assert f"dftool writes GraphDefs (.pb binary, .pbtxt text), not '{os.path.splitext(name)[1]}'" in line
    assert "--binary or --text" in line and not (tmp_path / name).exists()


def test_binary_or_text_says_which_form_an_unusual_out_gets(tmp_path):
    code, _, stderr = run_dftool("prune", MLP, tmp_path / "g.onnx", "--fetch", "probs", "--binary")
    assert code == 0, stderr
    written = (tmp_path / "g.onnx").read_bytes()
    assert not written.lstrip().startswith(b"node {")
    assert "probs" in load_graph(tmp_path / "g.onnx")
    code, _, stderr = run_dftool("place", MLP, tmp_path / "g.json", "--text")
    assert code == 0, stderr
    assert (tmp_path / "g.json").read_text().lstrip().startswith("node {")
    code, _, stderr = run_dftool("place", MLP, tmp_path / "g.pb", "--text", "--binary")
    assert code == 2 and "--text and --binary cannot be combined" in error_line(stderr)


# --- a binary graph for a terminal -----------------------------------------------------------------

def run_with_terminal_stdout(*args) -> tuple[int, bytes, str]:
    """dftool with stdout on a pseudo-terminal: (code, what the terminal got, stderr)."""
    code, shown, stderr = run_dftool_on_terminal(*args, stream="stdout")
    return code, shown, stderr.decode()


def test_a_binary_graph_for_a_terminal_is_refused_with_a_hint():
    code, shown, stderr = run_with_terminal_stdout("optimize", MLP, "-")
    assert code == 2 and shown == b""
    line = error_line(stderr)
    assert "refusing to write a binary GraphDef to the terminal" in line
    assert "--text" in line and "redirect" in line
    code, shown, stderr = run_with_terminal_stdout("optimize", MLP, "-", "--text", "-q")
    assert code == 0, stderr
    assert b"node {" in shown


# --- feeds of another dtype ------------------------------------------------------------------------

@pytest.fixture()
def mlp_feed(tmp_path):
    x = np.load(MLP_FEEDS)["x"]
    assert x.dtype == np.float32
    return x, tmp_path


def test_a_float64_feed_for_a_float32_placeholder_is_refused(mlp_feed):
    x, tmp_path = mlp_feed
    np.save(tmp_path / "x64.npy", x.astype(np.float64))
    code, stdout, stderr = run_dftool("run", MLP, "--feed", f"x={tmp_path / 'x64.npy'}")
    assert code == 2 and stdout == ""
    line = error_line(stderr)
    assert "feed 'x': dtype float64 does not match the expected float32" in line
    assert "--cast-feeds" in line


def test_cast_feeds_allows_same_kind_casts_explicitly(mlp_feed):
    x, tmp_path = mlp_feed
    np.save(tmp_path / "x64.npy", x.astype(np.float64))
    np.savez(tmp_path / "feeds64.npz", x=x.astype(np.float64))
    code, expected, _ = run_dftool("run", MLP, "--feeds", MLP_FEEDS)
    for feed in (("--feed", f"x={tmp_path / 'x64.npy'}"), ("--feeds", tmp_path / "feeds64.npz")):
        code, stdout, stderr = run_dftool("run", MLP, *feed, "--cast-feeds")
        assert code == 0, stderr
        assert stdout == expected


def test_an_int32_feed_for_a_float32_placeholder_needs_cast_feeds_too(mlp_feed):
    x, tmp_path = mlp_feed
    np.save(tmp_path / "x32.npy", np.rint(x * 4).astype(np.int32))
    code, _, stderr = run_dftool("run", MLP, "--feed", f"x={tmp_path / 'x32.npy'}")
    assert code == 2 and "dtype int32 does not match the expected float32" in error_line(stderr)
    code, stdout, stderr = run_dftool("run", MLP, "--feed", f"x={tmp_path / 'x32.npy'}", "--cast-feeds")
    assert code == 0 and stdout.startswith("probs  float32[4, 10]")


def test_a_lossless_float_widening_needs_no_flag(mlp_feed):
    x, tmp_path = mlp_feed
    np.save(tmp_path / "x16.npy", x.astype(np.float16))
    code, stdout, stderr = run_dftool("run", MLP, "--feed", f"x={tmp_path / 'x16.npy'}")
    assert code == 0, stderr


def test_cast_feeds_never_turns_floats_into_integers(tmp_path):
    from graphtool import dtypes
    from graphtool.builder import GraphBuilder

    b = GraphBuilder()
    b.op("Identity", [b.placeholder(dtypes.int32, [2], name="i")], name="out")
    (tmp_path / "g.pb").write_bytes(b.to_graphdef().SerializeToString())
    np.save(tmp_path / "f.npy", np.array([1.5, 2.0], np.float32))
    code, _, stderr = run_dftool("run", tmp_path / "g.pb", "--feed", f"i={tmp_path / 'f.npy'}", "--cast-feeds")
    assert code == 2 and "dtype float32 does not match the expected int32" in error_line(stderr)


# --- an OUT that cannot be written ------------------------------------------------------------------

def _directory(path):
    path.mkdir()
    return path


@pytest.mark.parametrize("make_out", [
    lambda tmp, ext: tmp / "missing" / f"out{ext}",             # no such directory
    lambda tmp, ext: _directory(tmp / f"dir{ext}"),              # a directory
    lambda tmp, ext: tmp / ("n" * 300 + ext),                     # a name longer than file systems allow
    lambda tmp, ext: tmp / "file.pb" / f"out{ext}",              # a path through a file
], ids=["missing directory", "directory", "name too long", "through a file"])
def test_an_unwritable_out_is_a_clean_usage_error(tmp_path, make_out):
    (tmp_path / "file.pb").write_bytes(b"")
    for args in (("optimize", MLP, make_out(tmp_path, ".pb")),
                 ("run", MLP, "--feeds", MLP_FEEDS, "--output", make_out(tmp_path, ".npz")),
                 ("inspect", MLP, "--report", make_out(tmp_path, ".json"))):
        code, stdout, stderr = run_dftool(*args)
        assert code == 2, stderr
        assert "internal error" not in error_line(stderr)
        assert args[0] == "inspect" or stdout == ""


# --- unknown names ------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, expected", [
    (("run", MLP, "--feeds", MLP_FEEDS, "--fetch", "prob"), "fetch 'prob': no node named 'prob'"),
    (("run", MLP, "--feeds", MLP_FEEDS, "--target", "dense/matmul"), "target 'dense/matmul'"),
    (("profile", MLP, "--feeds", MLP_FEEDS, "--fetch", "prob"), "fetch 'prob'"),
    (("grad", MLP, "{out}", "--y", "prob"), "y 'prob'"),
    (("grad", MLP, "{out}", "--y", "probs", "--x", "dense/kernl"), "x 'dense/kernl'"),
    (("optimize", MLP, "{out}", "--keep", "dense/relu"), "--keep dense/relu"),
    (("optimize", MLP, "{out}", "--fetch", "prob"), "--fetch prob"),
    (("prune", MLP, "{out}", "--fetch", "prob"), "--fetch prob"),
    (("prune", MLP, "{out}", "--fetch", "probs", "--feed", "dense/Relu_"), "--feed dense/Relu_"),
], ids=lambda v: v[0] if isinstance(v, tuple) else None)
def test_unknown_names_get_did_you_mean(tmp_path, args, expected):
    args = [str(tmp_path / "out.pb") if a == "{out}" else a for a in args]
    code, _, stderr = run_dftool(*args)
    assert code == 2
    line = error_line(stderr)
    assert expected in line and "did you mean '" in line, line


def test_the_suggestion_names_the_close_node():
    code, _, stderr = run_dftool("run", MLP, "--feeds", MLP_FEEDS, "--fetch", "matmul")
    assert code == 2 and "did you mean 'dense/MatMul' or 'logits/MatMul'?" in error_line(stderr)


def test_an_unknown_feed_gets_suggestions_and_the_placeholders(tmp_path):
    np.save(tmp_path / "x.npy", np.load(MLP_FEEDS)["x"])
    code, _, stderr = run_dftool("run", MLP, "--feed", f"X={tmp_path / 'x.npy'}")
    assert code == 2
    line = error_line(stderr)
    assert "feed 'X': no node named 'X' in the graph" in line
    assert "did you mean 'x'?" in line and "the graph's placeholders: x (float32 [?,16])" in line


@pytest.mark.parametrize("option", ["--passes", "--skip"])
def test_an_unknown_pass_gets_did_you_mean(tmp_path, option):
    code, _, stderr = run_dftool("optimize", MLP, tmp_path / "o.pb", option, "constfold,dcee")
    assert code == 2
    line = error_line(stderr)
    assert "unknown pass 'dcee'" in line and "did you mean 'dce'?" in line and "valid passes: " in line
