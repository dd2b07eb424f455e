"""Generated inputs (graphtool/feeds/generated.py) and `run`/`profile --random-feeds --seed --shape`."""
import numpy as np
import pytest

from graphtool import dtypes
from graphtool.builder import GraphBuilder
from graphtool.errors import UsageError
from graphtool.feeds.generated import (apply_shape_overrides, describe, generate_feeds, parse_shape_overrides)
from graphtool.shape_inference import infer_shapes
from graphtool.shapes import Shape

from .helpers import REPO_ROOT, error_line, run_dftool

SAMPLES = REPO_ROOT / "sample_graphs"


def _mlp():
    """y = x @ w on x float32[?,3], w a [3,2] constant; also an int32 scalar n and a bool p."""
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [None, 3], name="x")
    b.op("MatMul", [x, b.const(np.ones((3, 2), np.float32), name="w")], name="y")
    b.placeholder(dtypes.int32, [], name="n")
    b.placeholder(dtypes.bool_, [4], name="p")
    return b.graph


# --- --shape parsing --------------------------------------------------------------------------
def test_shape_specs_parse_to_concrete_dims():
    assert parse_shape_overrides(["x=1,224,224,3", "y=[2, 5]", "s=", "t=[]"]) == {
        "x": (1, 224, 224, 3), "y": (2, 5), "s": (), "t": ()}


@pytest.mark.parametrize("spec, message", [
    ("x", "--shape 'x': expected NAME=DIMS, e.g. input=1,224,224,3"),
    ("=1,2", "--shape '=1,2': expected NAME=DIMS, e.g. input=1,224,224,3"),
    ("x=?,3", "--shape 'x=?,3': dim '?' is unknown; an override must make the shape concrete (give every dim a size)"),
    ("x=-1,3", "--shape 'x=-1,3': dim '-1' is unknown; an override must make the shape concrete (give every dim a size)"),
    ("x=2,a", "--shape 'x=2,a': 'a' is not a dim size (expected non-negative integers separated by commas)"),
    ("x=2,-5", "--shape 'x=2,-5': dim -5 is negative"),
    ("x=1,99999999999999999999", "--shape 'x=1,99999999999999999999': dim 99999999999999999999 is above the "
                                 "largest size a shape holds (2**63 - 1)"),
])
def test_bad_shape_specs_are_usage_errors(spec, message):
    with pytest.raises(UsageError) as caught:
        parse_shape_overrides([spec])
    assert str(caught.value) == message


def test_a_name_given_twice_is_refused():
    with pytest.raises(UsageError, match="--shape x: given twice"):
        parse_shape_overrides(["x=1,3", "x=2,3"])


# --- overrides ----------------------------------------------------------------------------------
def test_an_override_rewrites_the_declared_shape_and_inference_follows():
    graph = _mlp()
    apply_shape_overrides(graph, {"x": (4, 3)})
    assert graph.get("x").attr("shape") == Shape([4, 3])
    assert infer_shapes(graph).shape(graph.get("y").output(0)) == Shape([4, 2])


def test_a_known_dim_may_change_when_the_graph_allows_it():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [1, 3], name="x")
    b.op("Relu", [x], name="y")
    apply_shape_overrides(b.graph, {"x:0": (8, 3)})
    assert infer_shapes(b.graph).shape(b.graph.get("y").output(0)) == Shape([8, 3])


@pytest.mark.parametrize("shapes, message", [
    ({"x": (4,)}, "--shape x=4: placeholder 'x' has rank 2 ([?,3]); the override has rank 1"),
    ({"x": (4, 5)}, "--shape: placeholder 'x' as [4,5] conflicts with the graph: node 'y' (MatMul) with input "
                    "shapes [[4,5], [3,2]]: the inner dimensions must be equal, but are 5 and 3"),
    ({"w": (3, 2)}, "--shape w: 'w' is a Const, not a placeholder"),
    ({"xx": (1, 3)}, "--shape xx: no node named 'xx' in the graph"),
])
def test_conflicting_overrides_name_the_placeholder(shapes, message):
    with pytest.raises(UsageError) as caught:
        apply_shape_overrides(_mlp(), shapes)
    assert str(caught.value) == message


# --- generation ---------------------------------------------------------------------------------
def test_every_unfed_placeholder_gets_a_value_of_its_dtype_and_shape():
    graph = _mlp()
    feeds = generate_feeds(graph, seed=3, skip=[graph.get("n")])
    assert list(feeds) == ["x", "p"]
    assert feeds["x"].dtype == np.float32 and feeds["x"].shape == (1, 3)
    assert ((feeds["x"] >= 0.5) & (feeds["x"] < 1.5)).all()
    assert feeds["p"].dtype == np.bool_ and feeds["p"].shape == (4,)
    again = generate_feeds(_mlp(), seed=3, skip=[])
    np.testing.assert_array_equal(again["x"], feeds["x"])   # the same seed, the same values
    assert not np.array_equal(generate_feeds(_mlp(), seed=4)["x"], feeds["x"])
    assert describe(feeds, 3) == "generated 2 feed(s) with seed 3: x float32[1,3], p bool[4]"


def test_unknown_dims_take_the_caller_default_and_overrides_win():
    graph = _mlp()
    assert generate_feeds(graph, unknown_dim=2)["x"].shape == (2, 3)
    apply_shape_overrides(graph, {"x": (5, 3)})
    assert generate_feeds(graph, shapes={"x": (5, 3)})["x"].shape == (5, 3)


def test_the_batch_follows_the_first_shape_override():
    b = GraphBuilder()
    b.placeholder(dtypes.float32, [None, 3], name="x")
    b.placeholder(dtypes.float32, [None, None], name="y")
    apply_shape_overrides(b.graph, {"x": (4, 3)})
    feeds = generate_feeds(b.graph, shapes={"x": (4, 3)})
    assert feeds["x"].shape == (4, 3) and feeds["y"].shape == (4, 1)


def test_a_saved_model_input_is_named_by_its_signature_key():
    from graphtool.prune import SIGNATURE_INPUT_ATTR

    graph = _mlp()
    graph.get("x").set_attr(SIGNATURE_INPUT_ATTR, "input_1", "string")
    feeds = generate_feeds(graph, skip=[graph.get("n"), graph.get("p")])
    assert describe(feeds, 0, graph) == "generated 1 feed(s) with seed 0: input_1 float32[1,3]"


def test_placeholder_with_default_keeps_its_default_unless_a_shape_names_it():
    b = GraphBuilder()
    default = b.const(np.zeros((2, 2), np.float32), name="d")
    b.op("PlaceholderWithDefault", [default], name="pwd", dtype=dtypes.float32, shape=Shape([None, 2]))
    assert generate_feeds(b.graph) == {}
    apply_shape_overrides(b.graph, {"pwd": (3, 2)})
    assert generate_feeds(b.graph, shapes={"pwd": (3, 2)})["pwd"].shape == (3, 2)


# --- the CLI ------------------------------------------------------------------------------------
def test_run_random_feeds_names_what_it_generated():
    code, stdout, stderr = run_dftool("run", SAMPLES / "mlp.pb", "--random-feeds", "--shape", "x=3,16", "--seed", "7")
    assert code == 0, stderr
    assert stderr.strip() == "generated 1 feed(s) with seed 7: x float32[3,16]"
    assert stdout.startswith("probs  float32[3, 10]")


def test_explicit_feeds_win_over_generated_ones():
    code, stdout, stderr = run_dftool("run", SAMPLES / "cond.pb", "--random-feeds", "--feed", "p=true",
                                      "--fetch", "cond/switch_t")
    assert code == 0, stderr
    assert stderr.strip() == "generated 1 feed(s) with seed 0: x float32[1,4]"
    assert stdout.split() == ["cond/switch_t", "bool[]", "[", "True]"]


def test_without_random_feeds_a_missing_feed_stays_an_error():
    code, _, stderr = run_dftool("run", SAMPLES / "mlp.pb", "--shape", "x=3,16")
    assert code == 2
    assert error_line(stderr).startswith("error: missing feed for placeholder 'x' (float32 [3,16])")


def test_a_conflicting_shape_is_one_error_line():
    code, _, stderr = run_dftool("profile", SAMPLES / "mlp.pb", "--random-feeds", "--shape", "x=3,15")
    assert code == 2
    assert error_line(stderr).startswith("error: --shape: placeholder 'x' as [3,15] conflicts with the graph: "
                                         "node 'dense/MatMul' (MatMul)")


# --- values that fit their use (graphtool/feeds/constraints.py) ----------------------------------
def _int_placeholder(b, name, shape, dtype=None):
    return b.placeholder(dtype or dtypes.int32, shape, name=name)


def test_indices_stay_within_the_gathered_dim_and_one_hot_depth():
    b = GraphBuilder()
    table = b.const(np.zeros((1000, 4), np.float32), name="table")
    ids = _int_placeholder(b, "ids", [64])
    b.op("GatherV2", [table, b.identity(ids, name="ids_copy"), b.const(np.int32(0), name="axis")], name="rows")
    cols = _int_placeholder(b, "cols", [64])
    b.op("GatherV2", [b.const(np.zeros((2, 5), np.float32), name="t2"), cols, b.const(np.int32(1), name="ax1")],
         name="picked")
    labels = _int_placeholder(b, "labels", [64])
    b.op("OneHot", [labels, b.const(np.int32(7), name="depth"), b.const(1.0, name="on"), b.const(0.0, name="off")],
         name="hot")
    feeds = generate_feeds(b.graph, seed=1)
    assert feeds["ids"].min() >= 0 and feeds["ids"].max() < 1000 and feeds["ids"].max() > 3  # the whole range
    assert feeds["cols"].max() < 5 and feeds["labels"].max() < 7


def test_divisors_permutations_shapes_and_axes_fit():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [None, 3, 4], name="x")
    den = _int_placeholder(b, "den", [50])
    b.op("FloorDiv", [b.const(np.arange(50, dtype=np.int32), name="num"), den], name="q")
    perm = _int_placeholder(b, "perm", [3])
    b.op("Transpose", [x, perm], name="t")
    shape = _int_placeholder(b, "shape", [3])
    b.op("Reshape", [x, shape], name="r")
    axis = _int_placeholder(b, "axis", [])
    b.op("Sum", [x, axis], name="s")
    b.op("Reshape", [x, b.const(np.array([2, 12], np.int32), name="fixed")], name="r2")
    feeds = generate_feeds(b.graph)
    assert (feeds["den"] != 0).all()
    assert sorted(feeds["perm"]) == [0, 1, 2]
    assert feeds["x"].shape == (2, 3, 4)            # the Reshape to [2,12] fixes the unknown dim
    assert feeds["shape"].tolist() == [2, 3, 4]     # the input's own shape
    assert 0 <= int(feeds["axis"]) < 3


def test_a_sparse_tensor_is_consistent():
    b = GraphBuilder()
    indices = _int_placeholder(b, "indices", [None, 2], dtypes.int64)
    values = b.placeholder(dtypes.float32, [None], name="values")
    dense_shape = _int_placeholder(b, "dense_shape", [2], dtypes.int64)
    b.op("SparseFillEmptyRows", [indices, values, dense_shape, b.const(0.0, name="default")], name="filled")
    feeds = generate_feeds(b.graph, unknown_dim=3)
    assert feeds["dense_shape"].tolist() == [3, 2]
    assert feeds["indices"].tolist() == [[0, 0], [1, 0], [2, 0]]
    assert feeds["values"].shape == (3,)


def test_text_fits_the_parser():
    from graphtool.proto import example_pb2

    b = GraphBuilder()
    numbers = b.placeholder(dtypes.string, [3], name="numbers")
    b.op("StringToNumber", [numbers], name="n", out_type=dtypes.int32)
    records = b.placeholder(dtypes.string, [2], name="records")
    b.op("DecodeCSV", [records, [b.const(np.array([0], np.int32), name="d0"), b.const(np.array([b""]), name="d1"),
                                 b.const(np.array([0.0], np.float32), name="d2")]], name="csv", field_delim="|")
    serialized = b.placeholder(dtypes.string, [], name="serialized")
    b.op("ParseSingleExample", [serialized, [b.const(np.array([0.0], np.float32), name="dd")]], name="parsed",
         num_sparse=1, sparse_keys=["ids"], dense_keys=["score"], sparse_types=[dtypes.int64],
         Tdense=[dtypes.float32], dense_shapes=[Shape([2])])
    free = b.placeholder(dtypes.string, [2], name="free")
    feeds = generate_feeds(b.graph)
    assert all(value.isdigit() for value in feeds["numbers"])
    assert feeds["records"].tolist() == [b"1|text|0.5", b"1|text|0.5"]
    example = example_pb2.Example.FromString(feeds["serialized"].item())
    assert list(example.features.feature["score"].float_list.value) == [0.5, 0.5]
    assert list(example.features.feature["ids"].int64_list.value) == [1]
    assert all(len(text) == 16 and text.isalpha() for text in feeds["free"])
    del free


# --- default fetches: the real outputs ----------------------------------------------------------
def test_loop_counters_probes_and_pivots_are_left_out_with_reasons():
    from graphtool.ir.queries import picked_outputs

    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    counter, total = b.while_loop(lambda i, acc: b.less(i, 5), lambda i, acc: (b.add(i, 1), b.add(acc, x)),
                                  [b.const(np.int32(0), name="zero"), b.const(np.zeros(3, np.float32), name="acc0")])
    p = b.placeholder(dtypes.bool_, [], name="p")
    b.cond(p, lambda: b.mul(x, 2.0), lambda: b.add(x, 1.0), name="branch")
    b.op("IsVariableInitialized", [b.op("VariableV2", [], name="v", shape=Shape([2]), dtype=dtypes.float32)],
         name="probe", dtype=dtypes.float32)
    picked, left_out = picked_outputs(b.graph)
    assert [ref.name for ref in picked] == ["branch/Merge"]
    assert [(left.tensor.name, left.reason) for left in left_out] == [
        (counter.name, "a while loop's counter"),
        (total.name, "a loop variable's Exit nobody uses"),
        ("branch/Merge:1", "a Merge's value_index (which branch ran)"),
        ("probe", "a variable-initialized probe")]


# --- the CLI: optimize --verify, inspect, variables --------------------------------------------
def test_optimize_verify_takes_the_seed_and_shape(tmp_path):
    out = tmp_path / "o.pb"
    code, _, stderr = run_dftool("optimize", SAMPLES / "mlp.pb", out, "--verify", "--shape", "x=3,16", "--seed", "2")
    assert code == 0, stderr
    assert "verified on generated feeds (seed 2) within" in stderr
    code, _, stderr = run_dftool("optimize", SAMPLES / "mlp.pb", out, "--shape", "x=3,16")
    assert code == 2
    assert error_line(stderr) == "error: --shape needs --verify (it sets what --verify feeds)"
    code, _, stderr = run_dftool("optimize", SAMPLES / "mlp.pb", out, "--verify", "--shape", "x=3")
    assert code == 2
    assert error_line(stderr) == "error: --shape x=3: placeholder 'x' has rank 2 ([?,16]); the override has rank 1"


def test_inspect_lists_the_outputs_left_out_and_why():
    code, stdout, stderr = run_dftool("inspect", SAMPLES / "while_loop.pb", "--json")
    assert code == 0, stderr
    import json

    report = json.loads(stdout)
    assert [o["name"] for o in report["outputs"]] == ["i_final", "acc"]
    assert report["left_out_outputs"] == [{"name": "accumulate/Exit", "op": "Exit", "reason": "a while loop's counter"}]


def test_run_on_generated_inputs_starts_variables_from_their_initializers():
    graph = REPO_ROOT / "tests" / "fixtures" / "tf_stateful" / "stateful_ref_embedding" / "graph.pb"
    code, stdout, stderr = run_dftool("run", graph, "--random-feeds", "--fetch", "table_initialized")
    assert code == 0, stderr
    assert stderr.splitlines() == ["generated 2 feed(s) with seed 0: ids int32[4], updates float32[2,3]",
                                   "ran the initializers of 1 variable(s) first (as --init would): table/Assign"]
    assert stdout.split()[:2] == ["table_initialized", "bool[]"]


@pytest.mark.parametrize("graph, picked, left_out", [
    ("checkpoints/tf_saver", ["dense/bias/read", "counts/read"], [
        ("dense/kernel/IsInitialized/VarIsInitializedOp", "a variable-initialized probe"),
        ("save/control_dependency", "a saver's save result (fetching it writes a checkpoint)")]),
    ("tf/cond", ["out", "pair_first", "pair_second", "nested"], [
        ("cond_nested/switch_f", "a cond pivot (the predicate switched on itself)")]),
    ("tf_stateful/stateful_resource_embedding", ["loss", "table_value"], [
        ("table/Read/ReadVariableOp", "a resource variable's creation-time read"),
        ("gradients/sub_grad/Shape", "gradient bookkeeping nobody uses")]),
])
def test_tensorflow_bookkeeping_is_not_an_output(graph, picked, left_out):
    """On graphs TensorFlow wrote: a graph of variables alone fetches their reads (never the
    saver's save result); cond pivots, creation-time reads and gradient leftovers are left out."""
    from graphtool.ir.queries import picked_outputs
    from tests.helpers import load_graph

    chosen, left = picked_outputs(load_graph(REPO_ROOT / "tests" / "fixtures" / graph / "graph.pb"))
    names = [ref.name for ref in chosen]
    assert all(name in names for name in picked), names
    reasons = [(entry.tensor.name, entry.reason) for entry in left]
    assert all(entry in reasons for entry in left_out), reasons
    assert not any(name.startswith(("save/", "gradients/")) or "IsInitialized" in name for name in names)


def test_a_seed_without_random_feeds_is_refused():
    code, _, stderr = run_dftool("run", SAMPLES / "mlp.pb", "--seed", "3", "--feeds", SAMPLES / "mlp.feeds.npz")
    assert code == 2
    assert error_line(stderr) == "error: --seed needs --random-feeds (it seeds the generated feeds)"


def test_slices_tiles_segments_and_sequence_lengths_fit():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [4, 5], name="x")
    begin, size = _int_placeholder(b, "begin", [2]), _int_placeholder(b, "size", [2])
    b.op("Slice", [x, begin, size], name="sliced")
    multiples = _int_placeholder(b, "multiples", [2])
    b.op("Tile", [x, multiples], name="tiled")
    lengths = _int_placeholder(b, "lengths", [5], dtypes.int64)
    b.op("ReverseSequence", [x, lengths], name="reversed", seq_dim=0, batch_dim=1)
    segments = _int_placeholder(b, "segments", [4])
    b.op("UnsortedSegmentSum", [x, segments, b.const(np.int32(2), name="num")], name="summed")
    nd = _int_placeholder(b, "nd", [6, 2])
    b.op("GatherNd", [b.const(np.zeros((3, 9), np.float32), name="params"), nd], name="picked")
    feeds = generate_feeds(b.graph, seed=5)
    assert feeds["begin"].tolist() == [0, 0] and feeds["size"].tolist() == [4, 5]
    assert set(feeds["multiples"].tolist()) <= {1, 2}
    assert feeds["lengths"].max() <= 4 and feeds["lengths"].dtype == np.int64
    assert set(feeds["segments"].tolist()) <= {0, 1}
    assert feeds["nd"].max() < 3
