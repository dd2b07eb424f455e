"""`dftool run` through the real entry point: results, --output/--expect, and every failure
case with its exit code and one-line message."""
import numpy as np
import pytest

from graphtool import dtypes
from graphtool.builder import GraphBuilder

from .helpers import REPO_ROOT, run_dftool

SAMPLES = REPO_ROOT / "sample_graphs"


def error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.fixture()
def small_graph(tmp_path):
    """y = x * 2 + 1 on x float32[2]; z = log(x)."""
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [2], name="x")
    b.add(b.mul(x, 2.0), 1.0, name="y")
    b.op("Log", [x], name="z")
    path = tmp_path / "g.pb"
    path.write_bytes(b.to_graphdef().SerializeToString())
    feed = tmp_path / "x.npy"
    np.save(feed, np.array([1.0, 3.0], np.float32))
    return path, feed


@pytest.mark.parametrize("name", ["mlp", "convnet", "cond", "while_loop", "rnn", "multi_device"])
def test_every_sample_runs_as_the_readme_says(name, tmp_path):
    out = tmp_path / "out.npz"
    code, _, stderr = run_dftool("run", SAMPLES / f"{name}.pb", "--feeds", SAMPLES / f"{name}.feeds.npz",
                                 "--output", out)
    assert code == 0, stderr
    results = np.load(out)
    assert results.files and all(np.isfinite(results[k]).all() for k in results.files)


def test_sample_values(tmp_path):
    out = tmp_path / "out.npz"
    assert run_dftool("run", SAMPLES / "while_loop.pb", "--feeds", SAMPLES / "while_loop.feeds.npz",
                      "--fetch", "i_final", "--output", out)[0] == 0
    assert np.load(out)["i_final"] == 16
    assert run_dftool("run", SAMPLES / "mlp.pb", "--feeds", SAMPLES / "mlp.feeds.npz", "--fetch", "probs:0",
                      "--output", out)[0] == 0
    np.testing.assert_allclose(np.load(out)["probs:0"].sum(axis=1), 1.0, rtol=1e-5)


def test_output_keys_are_the_fetch_strings_as_given(small_graph, tmp_path):
    graph, feed = small_graph
    out = tmp_path / "r.npz"
    code, _, stderr = run_dftool("run", graph, "--feed", f"x={feed}", "--fetch", "y:0", "--fetch", "z",
                                 "--output", out)
    assert code == 0, stderr
    results = np.load(out)
    assert sorted(results.files) == ["y:0", "z"]
    np.testing.assert_allclose(results["y:0"], [3.0, 7.0])


def test_default_fetches_and_summary(small_graph):
    graph, feed = small_graph
    code, stdout, _ = run_dftool("run", graph, "--feed", f"x={feed}")
    assert code == 0
    assert "y  float32[2]  [3., 7.]" in stdout and stdout.count("\n") == 2


def test_expect_passes_and_fails(small_graph, tmp_path):
    graph, feed = small_graph
    good, bad = tmp_path / "good.npz", tmp_path / "bad.npz"
    np.savez(good, y=np.array([3.0, 7.0], np.float32))
    np.savez(bad, y=np.array([3.0, 7.5], np.float32))
    assert run_dftool("run", graph, "--feed", f"x={feed}", "--fetch", "y", "--expect", good)[0] == 0
    code, _, stderr = run_dftool("run", graph, "--feed", f"x={feed}", "--fetch", "y", "--expect", bad)
    assert code == 1 and "y: 1 of 2 values differ" in error_line(stderr)


@pytest.mark.parametrize("args, code, message", [
    (["--fetch", "y"], 2, "missing feed for placeholder 'x' (float32 [2])"),
    (["--feed", "x={feed}", "--fetch", "nope"], 2, "fetch 'nope': no node named 'nope'"),
    (["--feed", "w={feed}", "--fetch", "y"], 2, "feed 'w': no node named 'w'"),
    (["--feed", "x={wrong_shape}", "--fetch", "y"], 2, "feed 'x': shape [3] does not fit [2]"),
    (["--feed", "x={wrong_dtype}", "--fetch", "y"], 2, "feed 'x': dtype bool does not match the expected float32"),
    (["--feed", "x={missing}", "--fetch", "y"], 2, "--feed x 'MISSING': no such file"),
    (["--feed", "x", "--fetch", "y"], 2, "--feed 'x': expected NAME=FILE.npy"),
    (["--feed", "x={feed}", "--fetch", "z", "--check-numerics"], 1, "node 'z' (Log) produced Inf"),
    (["--feed", "x={feed}", "--device", "gpu"], 4, "--device gpu"),
    (["--feed", "x={feed}", "--device", "tpu"], 2, "unknown device 'tpu'"),
])
def test_failures_exit_with_one_line(small_graph, tmp_path, args, code, message):
    graph, feed = small_graph
    np.save(tmp_path / "shape.npy", np.zeros(3, np.float32))
    np.save(tmp_path / "dtype.npy", np.zeros(2, bool))
    np.save(tmp_path / "zero.npy", np.array([0.0, 1.0], np.float32))
    values = {"feed": feed, "wrong_shape": tmp_path / "shape.npy", "wrong_dtype": tmp_path / "dtype.npy",
              "missing": tmp_path / "MISSING"}
    if "--check-numerics" in args:
        values["feed"] = tmp_path / "zero.npy"
    args = [a.format(**values) for a in args]
    message = message.replace("MISSING", str(tmp_path / "MISSING"))
    returned, _, stderr = run_dftool("run", graph, *args)
    assert returned == code, stderr
    assert message in error_line(stderr)


def test_timeout_stops_a_runaway_loop(tmp_path):
    b = GraphBuilder()
    (i,) = b.while_loop(lambda i: b.greater(i, -1), lambda i: [b.add(i, 1)], [b.const(0)], name="forever")
    b.identity(i, name="out")
    path = tmp_path / "forever.pb"
    path.write_bytes(b.to_graphdef().SerializeToString())
    code, _, stderr = run_dftool("run", path, "--timeout", "0.5", timeout=30)
    assert code == 1 and "timed out after 0.5 s" in error_line(stderr)


def test_output_is_not_written_on_failure(small_graph, tmp_path):
    graph, _ = small_graph
    out = tmp_path / "keep.npz"
    out.write_bytes(b"old")
    assert run_dftool("run", graph, "--fetch", "y", "--output", out)[0] == 2
    assert out.read_bytes() == b"old"


def _fixture_cases():
    import json

    root = REPO_ROOT / "tests" / "fixtures" / "tf"
    return [(p.parent.name, json.loads(p.read_text())) for p in sorted(root.glob("*/case.json"))]


@pytest.mark.parametrize("case, spec", _fixture_cases(), ids=[c for c, _ in _fixture_cases()])
def test_every_fixture_through_the_command_line(case, spec, capsys):
    """`dftool run GRAPH --feeds ... --fetch ... --expect expected.npz` exits 0 for every fixture
    (in-process entry point, to keep the suite fast)."""
    from cli.main import main

    folder = REPO_ROOT / "tests" / "fixtures" / "tf" / case
    args = ["run", str(folder / "graph.pb"), "--feeds", str(folder / "feeds.npz"), "-q",
            "--expect", str(folder / "expected.npz"), "--rtol", str(max(spec["rtol"], 1e-4)),
            "--atol", str(max(spec["atol"], 1e-5))]
    for fetch in spec["fetches"]:
        args += ["--fetch", fetch]
    assert main(args) == 0, capsys.readouterr().err


def test_inline_feed_values(tmp_path):
    """--feed NAME=VALUE: numbers, booleans, strings and nested lists, in the input's dtype."""
    out = tmp_path / "out.npz"
    code, _, err = run_dftool("run", SAMPLES / "cond.pb", "--feed", "p=true", "--feed", "x=[[1,2,3,4],[-1,0,5,2]]",
                              "--fetch", "y", "--output", out)
    assert code == 0, err
    inline = np.load(out)["y"]
    np.save(tmp_path / "x.npy", np.float32([[1, 2, 3, 4], [-1, 0, 5, 2]]))
    code, _, err = run_dftool("run", SAMPLES / "cond.pb", "--feed", "p=true", "--feed", f"x={tmp_path / 'x.npy'}",
                              "--fetch", "y", "--output", out)
    assert code == 0, err
    np.testing.assert_array_equal(inline, np.load(out)["y"])
    assert inline.dtype == np.float32

    b = GraphBuilder()
    n = b.placeholder(dtypes.int32, [], name="n")
    s = b.placeholder(dtypes.string, [2], name="s")
    b.op("Identity", [b.mul(n, 2)], name="twice")
    b.op("StringJoin", [[s, s]], separator="-", name="joined")
    graph = tmp_path / "g.pb"
    graph.write_bytes(b.to_graphdef().SerializeToString())
    code, _, err = run_dftool("run", graph, "--feed", "n=60", "--feed", 's=["ab","c"]', "--output", out)
    assert code == 0, err
    values = np.load(out, allow_pickle=True)
    assert int(values["twice"]) == 120
    assert [bytes(v) for v in values["joined"]] == [b"ab-ab", b"c-c"]


@pytest.mark.parametrize("feed, message", [
    ("n=1.5", "--feed n '1.5': has fractions, but feed 'n' is int32"),
    ("n=true", "--feed n 'true': feed 'n' is int32; write numbers"),
    ("n=[1,2]", "feed 'n': shape [2] does not fit [] (--feed n '[1,2]')"),
    ("n=[1,[2]]", "--feed n '[1,[2]]': not an array"),
    ("n=99999999999", "--feed n '99999999999': does not fit int32"),
    ("n=12abc", "--feed n '12abc': neither a file nor a value"),
    ('n="x"', "--feed n '\"x\"': not an array"),
    ("n=" + "[" * 30_000 + "]" * 30_000, "--feed n: the value is nested too deeply"),
])
def test_bad_inline_feed_values_are_one_line_usage_errors(tmp_path, feed, message):
    b = GraphBuilder()
    b.op("Identity", [b.placeholder(dtypes.int32, [], name="n")], name="out")
    graph = tmp_path / "g.pb"
    graph.write_bytes(b.to_graphdef().SerializeToString())
    code, _, err = run_dftool("run", graph, "--feed", feed)
    assert code == 2
    assert message in error_line(err)
