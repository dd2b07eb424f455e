"""Ops dftool does not know are opaque, not fatal: such a graph loads, round-trips exactly, and
inspect/prune/place/partition/optimize work around the unknown nodes; run/profile/grad refuse
(exit 3) only fetches that need them, naming every unknown op needed.

The graph is tests/fixtures/opaque/linalg.pb (TensorFlow 2.21, tools/make_foreign_fixtures.py):
MatMul/Einsum outputs next to Cholesky/MatrixInverse/Qr/MatrixDeterminant ones. The tests rename
those four ops to `Custom>...` (as a graph using custom C++ ops looks), so the ops stay unknown
whatever op families dftool gains; test_the_real_tensorflow_graph uses the file as it is.
"""
import json

import numpy as np
import pytest

from graphtool import graph_io
from graphtool.ir import from_graphdef, to_graphdef
from graphtool.ops import lookup
from graphtool.proto.graph_pb2 import GraphDef
from graphtool import dtypes
from tests.helpers import F32, REPO_ROOT, const_def, error_line, graph_def, node_def, run_dftool, write_graph

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "opaque"
LINALG = ("Cholesky", "MatrixInverse", "Qr", "MatrixDeterminant")
CASE = json.loads((FIXTURE / "case.json").read_text())
EXPECTED = dict(np.load(FIXTURE / "expected.npz"))
FEEDS = dict(np.load(FIXTURE / "feeds.npz"))
KNOWN_FETCHES = ["out_mm:0", "out_einsum:0"]


def _custom_graph_def(strip_shapes=False) -> GraphDef:
    graph = graph_io.load_graphdef(str(FIXTURE / "linalg.pb"))
    for node in graph.node:
        if node.op in LINALG:
            node.op = "Custom>" + node.op
        if strip_shapes:
            node.attr.pop("_output_shapes", None)
    return graph


@pytest.fixture
def custom(tmp_path):
    return write_graph(_custom_graph_def(), tmp_path / "custom.pb")


def _feeds(tmp_path, names=("b:0", "c:0"), **extra):
    path = tmp_path / "feeds.npz"
    np.savez(path, **{n: FEEDS[n] for n in names}, **extra)
    return str(path)


def _run(graph, fetches, feeds, tmp_path, *extra):
    out = tmp_path / "out.npz"
    args = ["run", graph, "--feeds", feeds, "--output", str(out), *extra]
    for fetch in fetches:
        args += ["--fetch", fetch]
    rc, _, stderr = run_dftool(*args)
    assert rc == 0, stderr
    return dict(np.load(out))


def _opaque_nodes(path):
    graph = graph_io.load_graphdef(str(path))
    return {n.name: n for n in graph.node if n.op.startswith("Custom>")}


# --- loading ---------------------------------------------------------------------------------

def test_round_trip_is_exact():
    original = _custom_graph_def()
    graph = from_graphdef(original)
    assert to_graphdef(graph) == original
    assert (graph_io.serialize_graphdef(to_graphdef(graph), False)
            == original.SerializeToString(deterministic=True))


def test_odd_attrs_and_unused_outputs_round_trip(tmp_path):
    weird = node_def("weird", "Vendor>Fused", ["a", "a", "^b"], device="/device:CPU:0", T=F32,
                     Tout=[F32, dtypes.int32], fn="some_function", k=[1, 2, 3], flag=True,
                     _class=["loc:@a"])
    weird.attr["fn"].func.name = "some_function"
    weird.attr["fn"].func.attr["x"].i = 4
    original = graph_def(const_def("a"), const_def("b", 2.0), weird,
                         node_def("use", "Identity", ["weird:1"], T=dtypes.int32))
    assert to_graphdef(from_graphdef(original)) == original
    path = write_graph(original, tmp_path / "g.pb")
    rc, _, stderr = run_dftool("optimize", path, str(tmp_path / "o.pb"), "--fetch", "use")
    assert rc == 0, stderr
    assert [n for n in graph_io.load_graphdef(str(tmp_path / "o.pb")).node if n.name == "weird"] == [weird]


def test_outputs_and_dtypes_come_from_the_graph():
    graph = from_graphdef(_custom_graph_def())
    qr = graph.node("qr")
    assert qr.num_outputs == 2      # _output_shapes lists two (only q:0 and q:1 are read)
    from graphtool.ops import opaque
    from graphtool.shape_inference import infer_shapes

    assert [str(d) for d in opaque.output_dtypes(qr)] == ["float32", "float32"]
    shapes = infer_shapes(graph)
    assert shapes.shape(graph.tensor("chol")).dims == (3, 3)
    assert shapes.shape(graph.tensor("out_chol")).dims == (3, 3)   # inference goes on past it
    assert shapes.shape(graph.tensor("out_det")).dims == ()

    bare = from_graphdef(_custom_graph_def(strip_shapes=True))
    shapes = infer_shapes(bare)
    assert not shapes.shape(bare.tensor("chol")).known_rank
    assert shapes.shape(bare.tensor("out_mm")).dims == (2, 3)
    assert bare.node("qr").num_outputs == 2   # out_qr reads qr:1


def test_dtype_from_type_attrs_when_no_consumer_says():
    graph = from_graphdef(graph_def(const_def("a"), node_def("u", "Vendor>Op", ["a"], T=F32),
                                    node_def("v", "Vendor>Op2", ["a"], Tout=[dtypes.int32, F32])))
    from graphtool.ops import opaque

    assert [str(d) for d in opaque.output_dtypes(graph.node("u"))] == ["float32"]
    graph.node("v")._num_outputs_hint = 2
    assert [str(d) for d in opaque.output_dtypes(graph.node("v"))] == ["int32", "float32"]


# --- execution refuses only what needs them --------------------------------------------------

def test_run_of_every_output_names_every_unknown_op(custom, tmp_path):
    rc, stdout, stderr = run_dftool("run", custom, "--feeds", _feeds(tmp_path, ("a:0", "b:0", "c:0")))
    line = error_line(stderr)
    assert rc == 3 and stdout == ""
    assert line.startswith(f"error: {custom}: cannot run the fetches: 5 node(s) of 4 op type(s)")
    for text in ("Custom>Cholesky (2 nodes: 'chol', 'chol_inv')", "Custom>MatrixInverse (1 node: 'inv')",
                 "Custom>Qr (1 node: 'qr')", "Custom>MatrixDeterminant (1 node: 'det')", "dftool prune"):
        assert text in line


def test_run_names_only_the_unknown_ops_the_fetch_needs(custom, tmp_path):
    rc, _, stderr = run_dftool("run", custom, "--feeds", _feeds(tmp_path, ("a:0",)), "--fetch", "out_inv")
    line = error_line(stderr)
    assert rc == 3
    assert "2 node(s) of 2 op type(s)" in line and "Custom>Cholesky (1 node: 'chol_inv')" in line
    assert "Qr" not in line and "Determinant" not in line


def test_profile_refuses_the_same_way(custom, tmp_path):
    rc, _, stderr = run_dftool("profile", custom, "--feeds", _feeds(tmp_path, ("a:0",)), "--fetch", "out_qr",
                               "--repeat", "1", "--warmup", "0")
    assert rc == 3 and "Custom>Qr (1 node: 'qr')" in error_line(stderr)


def test_fetches_that_do_not_need_them_run_on_the_whole_graph(custom, tmp_path):
    values = _run(custom, KNOWN_FETCHES, _feeds(tmp_path), tmp_path)
    for fetch in KNOWN_FETCHES:
        np.testing.assert_allclose(values[fetch], EXPECTED[fetch], rtol=1e-5, atol=1e-6)


def test_feeding_an_unknown_ops_output_runs_past_it(custom, tmp_path):
    chol = EXPECTED["out_chol:0"] / 2
    values = _run(custom, ["out_chol:0"], _feeds(tmp_path, (), **{"chol:0": chol}), tmp_path)
    np.testing.assert_allclose(values["out_chol:0"], EXPECTED["out_chol:0"], rtol=1e-6)


def test_prune_cuts_the_unknown_part_away_then_run_works(custom, tmp_path):
    pruned = tmp_path / "pruned.pb"
    rc, _, stderr = run_dftool("prune", custom, str(pruned), "--fetch", "out_mm", "--fetch", "out_einsum")
    assert rc == 0, stderr
    assert not any(n.op.startswith("Custom>") for n in graph_io.load_graphdef(str(pruned)).node)
    rc, _, stderr = run_dftool("inspect", str(pruned), "-q")
    assert rc == 0, stderr
    values = _run(str(pruned), KNOWN_FETCHES, _feeds(tmp_path), tmp_path)
    for fetch in KNOWN_FETCHES:
        np.testing.assert_allclose(values[fetch], EXPECTED[fetch], rtol=1e-5, atol=1e-6)


def test_prune_can_keep_an_unknown_op_and_feed_past_another(custom, tmp_path):
    pruned = tmp_path / "pruned.pb"
    rc, _, stderr = run_dftool("prune", custom, str(pruned), "--fetch", "out_inv", "--feed", "inv")
    assert rc == 0, stderr
    kept = _opaque_nodes(pruned)
    assert set(kept) == {"chol_inv"} and kept["chol_inv"] == _opaque_nodes(custom)["chol_inv"]


def test_grad_names_the_unknown_ops_on_the_path(custom, tmp_path):
    rc, _, stderr = run_dftool("grad", custom, str(tmp_path / "g.pb"), "--y", "out_inv", "--x", "a")
    line = error_line(stderr)
    assert rc == 3 and line.startswith(f"error: {custom}: cannot differentiate 'out_inv'")
    assert "Custom>Cholesky (1 node: 'chol_inv')" in line and "Custom>MatrixInverse (1 node: 'inv')" in line
    assert not (tmp_path / "g.pb").exists()
    # Past them, or beside them, gradients work.
    for y, x in (("out_inv", "inv"), ("out_mm", "b")):
        rc, _, stderr = run_dftool("grad", custom, str(tmp_path / "g.pb"), "--y", y, "--x", x)
        assert rc == (3 if x == "inv" else 0), stderr
    assert "Custom>Cholesky (1 node: 'chol_inv')" in error_line(
        run_dftool("grad", custom, str(tmp_path / "g.pb"), "--y", "out_inv", "--x", "inv")[2])


def test_grad_beside_unknown_ops_matches_the_product_rule(custom, tmp_path):
    graph = tmp_path / "g.pb"
    rc, _, stderr = run_dftool("grad", custom, str(graph), "--y", "out_mm", "--x", "b")
    assert rc == 0, stderr
    values = _run(str(graph), ["grad/b"], _feeds(tmp_path), tmp_path)
    # d sum(b @ c + 1) / d b = ones @ c^T
    np.testing.assert_allclose(values["grad/b"], np.ones((2, 3), np.float32) @ FEEDS["c:0"].T, rtol=1e-5)


# --- rearranging works around them -----------------------------------------------------------

def test_place_keeps_them_with_their_neighbours_and_reports_them(custom, tmp_path):
    placed = tmp_path / "placed.pb"
    rc, stdout, stderr = run_dftool("place", custom, str(placed), "--devices", "cpu:0,cpu:1", "--json")
    assert rc == 0, stderr
    report = json.loads(stdout)
    assert sorted(report["opaque"]) == ["chol", "chol_inv", "det", "inv", "qr"]
    assert "placed without a kernel check" in stderr
    graph = from_graphdef(graph_io.load_graphdef(str(placed)))
    for name in report["opaque"]:
        node = graph.node(name)
        neighbours = {p.device for p in node.input_nodes()} | {c.device for c in node.consumers()}
        assert node.device in neighbours, name


def test_place_honours_an_unknown_ops_requested_device(tmp_path):
    graph = _custom_graph_def()
    next(n for n in graph.node if n.name == "chol").device = "/device:CPU:1"
    path = write_graph(graph, tmp_path / "g.pb")
    placed = tmp_path / "placed.pb"
    rc, _, stderr = run_dftool("place", path, str(placed), "--devices", "cpu:0,cpu:1")
    assert rc == 0, stderr
    assert _opaque_nodes(placed)["chol"].device == "/job:localhost/replica:0/task:0/device:CPU:1"


def test_place_partition_run_with_an_unknown_op_on_another_device(tmp_path):
    graph = _custom_graph_def()
    for node in graph.node:
        node.device = "/device:CPU:1" if node.name in ("chol", "out_chol", "chol_inv") else "/device:CPU:0"
    path = write_graph(graph, tmp_path / "g.pb")
    parted = tmp_path / "parted.pb"
    rc, _, stderr = run_dftool("place", path, str(tmp_path / "placed.pb"))
    assert rc == 0, stderr
    rc, _, stderr = run_dftool("partition", str(tmp_path / "placed.pb"), str(parted))
    assert rc == 0, stderr
    nodes = graph_io.load_graphdef(str(parted)).node
    sends = [n for n in nodes if n.op == "_Send"]
    assert sends and {n.attr["T"].type for n in sends} == {1}   # float32, from the consumer's signature
    before, after = _opaque_nodes(path), _opaque_nodes(parted)
    assert set(before) == set(after)
    for name, node in before.items():
        assert (after[name].op, dict(after[name].attr)) == (node.op, dict(node.attr))
    values = _run(str(parted), KNOWN_FETCHES, _feeds(tmp_path), tmp_path)
    for fetch in KNOWN_FETCHES:
        np.testing.assert_allclose(values[fetch], EXPECTED[fetch], rtol=1e-5, atol=1e-6)
    rc, _, stderr = run_dftool("run", str(parted), "--feeds", _feeds(tmp_path, ("a:0",)), "--fetch", "out_chol")
    assert rc == 3 and "Custom>Cholesky (1 node: 'chol')" in error_line(stderr)


def test_optimize_leaves_them_untouched(custom, tmp_path):
    out = tmp_path / "opt.pb"
    rc, _, stderr = run_dftool("optimize", custom, str(out))
    assert rc == 0, stderr
    assert _opaque_nodes(out) == _opaque_nodes(custom)
    rc, _, stderr = run_dftool("optimize", custom, str(out), "--fetch", "out_mm", "--fetch", "out_einsum",
                               "--verify")
    assert rc == 0, stderr


def test_optimize_does_not_fold_merge_or_drop_them(tmp_path):
    """Constant inputs do not make an unknown op foldable, two identical ones are not merged (it
    may be stateful), and an unused one stays (it may act on state)."""
    nodes = [const_def("k", [1.0, 2.0]),
             node_def("u1", "Vendor>Op", ["k"], T=F32), node_def("u2", "Vendor>Op", ["k"], T=F32),
             node_def("y1", "Identity", ["u1"], T=F32), node_def("y2", "Identity", ["u2"], T=F32),
             node_def("alone", "Vendor>Effect", ["k"], T=F32)]
    path = write_graph(graph_def(*nodes), tmp_path / "g.pb")
    out = tmp_path / "o.pb"
    rc, _, stderr = run_dftool("optimize", path, str(out), "--fetch", "y1", "--fetch", "y2")
    assert rc == 0, stderr
    kept = {n.name: n for n in graph_io.load_graphdef(str(out)).node}
    for name in ("u1", "u2", "alone"):
        assert kept[name] == next(n for n in nodes if n.name == name)


# --- inspect -----------------------------------------------------------------------------------

def test_inspect_summarises_everything_then_exits_3(custom):
    rc, stdout, stderr = run_dftool("inspect", custom)
    lines = stdout.splitlines() + stderr.splitlines()   # the summary on stdout, then the error
    assert rc == 3 and len(stderr.splitlines()) == 1
    assert lines[0].startswith(f"graph {custom}: 31 nodes")
    assert any("unknown ops" in line for line in lines)
    assert any(line.startswith("Custom>Cholesky") and "2" in line and "chol, chol_inv" in line for line in lines)
    assert any(line.startswith("out_chol ") and "[3,3]" in line for line in lines)   # shapes past it
    at = lines.index("run it with (4 output(s) needing unknown ops left out):")
    assert lines[at + 1].strip().endswith("--fetch out_mm --fetch out_einsum")
    last = lines[-1]
    assert last.startswith(f"error: {custom}: 5 node(s) of 4 op type(s) dftool does not know")
    assert sum(line.startswith("error:") for line in lines) == 1


def test_inspect_json_lists_unknown_ops_with_counts(custom):
    rc, stdout, stderr = run_dftool("inspect", custom, "--json", "-q")
    assert rc == 3
    report = json.loads(stdout)
    assert report["unknown_ops"][0] == {"op": "Custom>Cholesky", "count": 2, "nodes": ["chol", "chol_inv"]}
    assert {e["op"]: e["count"] for e in report["unknown_ops"]} == {
        "Custom>Cholesky": 2, "Custom>MatrixDeterminant": 1, "Custom>MatrixInverse": 1, "Custom>Qr": 1}
    assert report["problems"] == []
    assert sum(f["kind"] == "unknown_op" for f in report["findings"]) == 4
    assert report["node_count"] == 31 and len(report["inputs"]) == 3
    assert {o["name"]: o["needs_unknown_ops"] for o in report["outputs"]} == {
        "out_mm": [], "out_einsum": [], "out_chol": ["Custom>Cholesky"],
        "out_inv": ["Custom>Cholesky", "Custom>MatrixInverse"], "out_qr": ["Custom>Qr"],
        "out_det": ["Custom>MatrixDeterminant"]}
    assert error_line(stderr).startswith(f"error: {custom}: ")


def test_inspect_verbosity_shows_every_node(tmp_path):
    graph = _custom_graph_def()
    for k in range(4):   # five Cholesky nodes: the plain table shows three of them
        graph.node.add().CopyFrom(next(n for n in graph.node if n.name == "chol"))
        graph.node[-1].name = f"chol_extra_{k}"
    path = write_graph(graph, tmp_path / "g.pb")
    _, plain, _ = run_dftool("inspect", path)
    _, verbose, _ = run_dftool("inspect", path, "-v")
    _, very, _ = run_dftool("inspect", path, "-vv")
    def row(text):
        return next(line for line in text.splitlines() if line.startswith("Custom>Cholesky "))

    assert "chol_extra_3" not in row(plain) and "3 more; -v lists all" in row(plain)
    assert "chol_extra_3" in row(verbose) and "unknown-op nodes" not in verbose
    assert "unknown-op nodes" in very and "float32 [3,3]; float32 [3,3]" in very   # qr's two outputs


def test_inspect_reports_every_problem_and_every_unknown_op(tmp_path):
    nodes = [const_def("a"), node_def("bad_type", "Identity", ["a"], T=7),
             node_def("short", "AddV2", ["a"], T=F32), node_def("x", "Vendor>One", ["a"]),
             node_def("y", "Vendor>Two", ["x"]), node_def("z", "Vendor>Two", ["y"])]
    path = write_graph(graph_def(*nodes), tmp_path / "g.pb")
    rc, stdout, stderr = run_dftool("inspect", path, "--json")
    report = json.loads(stdout)
    assert rc == 3
    assert len(report["problems"]) == 2
    assert any("'bad_type'" in p for p in report["problems"]) and any("'short'" in p for p in report["problems"])
    assert [(e["op"], e["count"]) for e in report["unknown_ops"]] == [("Vendor>Two", 2), ("Vendor>One", 1)]
    line = stderr.splitlines()[-1]
    assert "(and 1 more problem(s))" in line and "3 node(s) of 2 op type(s)" in line


def test_inspect_reports_nodes_it_could_not_build(tmp_path):
    nodes = [const_def("a"), node_def("b", "Identity", ["nowhere"], T=F32), const_def("a"),
             node_def("c", "Identity", ["also_missing"], T=F32), node_def("ok", "Identity", ["a"], T=F32)]
    path = write_graph(graph_def(*nodes), tmp_path / "g.pb")
    rc, stdout, stderr = run_dftool("inspect", path, "--json")
    report = json.loads(stdout)
    assert rc == 3
    assert report["problems"] == ["duplicate node name 'a'",
                                  "node 'b' input 'nowhere' names a missing node 'nowhere'",
                                  "node 'c' input 'also_missing' names a missing node 'also_missing'"]
    assert report["node_count"] == 4


def test_the_real_tensorflow_graph():
    """linalg.pb as TensorFlow wrote it: whatever ops of it dftool lacks are all named."""
    path = str(FIXTURE / "linalg.pb")
    ops = {n.op for n in graph_io.load_graphdef(path).node}
    unknown = sorted(op for op in ops if lookup(op) is None)
    rc, stdout, stderr = run_dftool("inspect", path, "--json", "-q")
    report = json.loads(stdout)
    assert sorted(e["op"] for e in report["unknown_ops"]) == unknown
    assert rc == (3 if unknown else 0)
    rc, _, stderr = run_dftool("prune", path, "-", "--fetch", "out_einsum:0")
    assert rc == 0, stderr


def test_a_read_past_the_declared_outputs_is_a_problem(tmp_path):
    graph = _custom_graph_def()
    next(n for n in graph.node if n.name == "out_det").input[0] = "det:1"   # det lists one output
    path = write_graph(graph, tmp_path / "g.pb")
    for args in (["inspect", "-q", path], ["prune", path, "-", "--fetch", "out_mm"]):
        rc, _, stderr = run_dftool(*args)
        line = error_line(stderr)
        assert rc == 3 and "'det:1'" in line and "lists 1 output(s) in _output_shapes" in line


def _untyped_chain(tmp_path, devices=("", "")):
    """a -> Vendor>First -> Vendor>Second: nothing tells the dtype between the two."""
    nodes = [const_def("a", [1.0, 2.0]), node_def("first", "Vendor>First", ["a"], device=devices[0]),
             node_def("second", "Vendor>Second", ["first"], device=devices[1])]
    return write_graph(graph_def(*nodes), tmp_path / "g.pb")


def test_feeding_an_output_of_unknown_dtype_is_a_usage_error(tmp_path):
    rc, _, stderr = run_dftool("prune", _untyped_chain(tmp_path), "-", "--fetch", "second", "--feed", "first")
    line = error_line(stderr)
    assert rc == 2 and "--feed first:0" in line and "an op dftool does not know" in line


def test_an_edge_of_unknown_dtype_cannot_cross_devices(tmp_path):
    path = _untyped_chain(tmp_path, ("/device:CPU:0", "/device:CPU:1"))
    placed = str(tmp_path / "placed.pb")
    rc, _, stderr = run_dftool("place", path, placed)
    assert rc == 0, stderr
    rc, _, stderr = run_dftool("partition", placed, str(tmp_path / "parted.pb"))
    line = error_line(stderr)
    assert rc == 3 and "'first' (Vendor>First" in line and "nothing in the graph tells its dtype" in line
    assert not (tmp_path / "parted.pb").exists()


def test_an_unknown_op_inside_a_while_loop(tmp_path):
    graph = graph_io.load_graphdef(str(REPO_ROOT / "sample_graphs" / "while_loop.pb"))
    next(n for n in graph.node if n.name == "double/Mul").op = "Vendor>Mul"
    path = write_graph(graph, tmp_path / "wl.pb")
    rc, stdout, _ = run_dftool("inspect", path, "--json", "-q")
    report = json.loads(stdout)
    assert rc == 3 and len(report["frames"]) == 2
    needs = {o["name"]: o["needs_unknown_ops"] for o in report["outputs"]}
    assert needs["i_final"] == ["Vendor>Mul"] and needs["acc"] == []
    feeds = str(REPO_ROOT / "sample_graphs" / "while_loop.feeds.npz")
    original = _run(str(REPO_ROOT / "sample_graphs" / "while_loop.pb"), ["acc"], feeds, tmp_path)
    assert np.array_equal(_run(path, ["acc"], feeds, tmp_path)["acc"], original["acc"])
    rc, _, stderr = run_dftool("run", path, "--feeds", feeds, "--fetch", "i_final")
    assert rc == 3 and "Vendor>Mul (1 node: 'double/Mul')" in error_line(stderr)


# --- inside library functions (a TF2 function graph) ------------------------------------------

@pytest.fixture
def function_cond(tmp_path):
    graph = graph_io.load_graphdef(str(FIXTURE / "function_cond.pb"))
    for function in graph.library.function:
        for node in function.node_def:
            if node.op in LINALG:
                node.op = "Custom>" + node.op
    return write_graph(graph, tmp_path / "function_cond.pb")


def test_inspect_finds_unknown_ops_in_function_bodies(function_cond):
    rc, stdout, stderr = run_dftool("inspect", function_cond, "--json", "-q")
    report = json.loads(stdout)
    assert rc == 3
    assert report["unknown_ops"] == [{"op": "Custom>Cholesky", "count": 1,
                                      "nodes": ["cond/Cholesky (in cond_true_14)"]}]
    needs = {o["name"]: o["needs_unknown_ops"] for o in report["outputs"]}
    assert needs == {"Identity": ["Custom>Cholesky"], "Identity_1": []}
    assert report["run_command"].endswith("--fetch Identity_1")
    assert "Custom>Cholesky (1 node: 'cond/Cholesky (in cond_true_14)')" in error_line(stderr)


def test_a_function_graph_runs_what_needs_no_unknown_op(function_cond, tmp_path):
    feeds = str(FIXTURE / "function_cond_feeds.npz")
    expected = dict(np.load(FIXTURE / "function_cond_expected.npz"))
    values = _run(function_cond, ["out_sum:0"], feeds, tmp_path)
    np.testing.assert_allclose(values["out_sum:0"], expected["out_sum:0"], rtol=1e-6)
    rc, _, stderr = run_dftool("run", "-q", function_cond, "--feeds", feeds, "--fetch", "out_cond")
    line = error_line(stderr)   # -q: without the notice that the cond was lowered
    assert rc == 3 and "Custom>Cholesky (1 node: " in line and "Cholesky'" in line
    out = tmp_path / "lowered.pb"
    rc, _, stderr = run_dftool("optimize", function_cond, str(out), "--passes", "lower")
    assert rc == 0, stderr
    lowered = graph_io.load_graphdef(str(out))
    assert [n.op for n in lowered.node if n.op.startswith("Custom>")] == ["Custom>Cholesky"]
    values = _run(str(out), ["out_sum:0"], feeds, tmp_path)
    np.testing.assert_allclose(values["out_sum:0"], expected["out_sum:0"], rtol=1e-6)
