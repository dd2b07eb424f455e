"""constfold: static shapes become Consts, constant subgraphs are evaluated, Mul/Add chain constants
combine; fetched names, side effects, frames, branches and control edges survive."""
import numpy as np
import pytest

from graphtool import dtypes
from graphtool.builder import GraphBuilder

from .pass_check import check_pass, ops


def _const_named(g, prefix):
    """The Const the pass made for node `prefix` (named 'prefix/constfold...')."""
    found = [n for n in g.nodes if n.op == "Const" and n.name.startswith(prefix + "/constfold")]
    assert found, f"no Const made for {prefix}: {[n.name for n in g.nodes]}"
    return found[0]


# --- MaterializeShapes -----------------------------------------------------------------------------
def test_static_shape_size_and_rank_become_consts():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [2, 3], name="x")
    b.reshape(x, b.shape_of(x, name="shape"), name="out")
    b.add(b.op("Size", [x], name="size"), b.op("Rank", [x], name="rank"), name="count")

    def structure(g):
        assert not {"Shape", "Size", "Rank"} & g.ops()
        const = _const_named(g, "shape")
        assert const.attr("value").tolist() == [2, 3] and not const.control_inputs  # x no longer needed

    result = check_pass("constfold", b.graph, ["out", "count"], structure=structure)
    assert result.stats["shapes_materialized"] == 3


def test_unknown_dims_keep_shape_and_size_but_rank_folds():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [None, 3], name="x")
    b.identity(b.shape_of(x, name="shape"), name="s")
    b.identity(b.op("Size", [x], name="size"), name="n")
    b.identity(b.op("Rank", [x], name="rank"), name="r")

    def structure(g):
        assert {"Shape", "Size"} <= g.ops() and "Rank" not in g.ops()

    check_pass("constfold", b.graph, ["s", "n", "r"], structure=structure)


def test_shape_n_materializes_only_its_known_outputs():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [2, 3], name="x")
    y = b.placeholder(dtypes.float32, [None], name="y")
    known, unknown = b.op("ShapeN", [[x, y]], name="shapes")
    b.identity(known, name="a")
    b.identity(unknown, name="b")

    def structure(g):
        assert g.node("a").op == "Const"  # Identity(Const) folds on, keeping the fetched name
        assert g.node("b").inputs[0] == g.tensor("shapes:1")

    check_pass("constfold", b.graph, ["a", "b"], structure=structure)


def test_broadcast_gradient_args_of_static_shapes_fold():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [4, 3], name="x")
    y = b.placeholder(dtypes.float32, [3], name="y")
    r0, r1 = b.op("BroadcastGradientArgs", [b.shape_of(x), b.shape_of(y)], name="bga")
    b.identity(r0, name="r0")
    b.identity(r1, name="r1")

    def structure(g):
        assert "BroadcastGradientArgs" not in g.ops() and "Shape" not in g.ops()
        assert g.node("r0").attr("value").tolist() == [] and g.node("r1").attr("value").tolist() == [0]

    check_pass("constfold", b.graph, ["r0", "r1"], structure=structure)


def test_integer_value_inferred_from_a_partial_shape_becomes_a_const():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [5, None], name="x")
    rows = b.op("StridedSlice", [b.shape_of(x), [0], [1], [1]], shrink_axis_mask=1, name="rows")
    b.range(0, rows, 1, name="out")

    def structure(g):
        assert ops(g) == ["Const", "Placeholder"]  # Shape and StridedSlice went with the value
        assert g.node("out").attr("value").tolist() == [0, 1, 2, 3, 4]

    result = check_pass("constfold", b.graph, ["out"], structure=structure)
    assert result.stats == {"values_materialized": 1, "nodes_folded": 1}


def test_fetched_shape_keeps_its_name():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [2, 3], name="x")
    b.shape_of(x, name="shape")

    def structure(g):
        assert g.node("shape").op == "Const"

    check_pass("constfold", b.graph, ["shape"], structure=structure)


def test_shape_in_a_cond_branch_stays_tied_to_the_branch():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [2, 3], name="x")
    p = b.placeholder(dtypes.bool_, [], name="p")
    b.cond(p, lambda: b.shape_of(b.relu(x), name="shape"), lambda: b.const([7, 7]), name="c")

    def structure(g):
        const = _const_named(g, "c/shape")
        assert [n.op for n in const.control_inputs] == ["Relu"]  # dead when the branch is not taken

    for taken in (True, False):
        feeds = {"x": np.ones((2, 3), np.float32), "p": np.array(taken)}
        check_pass("constfold", b.graph.copy(), ["c/Merge"], structure=structure, feeds=feeds)


# --- FoldGraph -------------------------------------------------------------------------------------
def test_constant_chain_folds_into_one_const():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    five = b.add(b.const(2.0), b.const(3.0), name="five")
    b.mul(x, b.maximum(five, b.const([1.0, 6.0, 2.0]), name="m"), name="out")

    def structure(g):
        assert ops(g) == ["Const", "Mul", "Placeholder"]
        assert g.node("out").inputs[1].node.attr("value").tolist() == [5.0, 6.0, 5.0]

    result = check_pass("constfold", b.graph, ["out"], structure=structure)
    assert result.stats["nodes_folded"] == 2


def test_multi_output_node_gives_one_const_per_used_output():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [2], name="x")
    parts = b.op("Split", [b.const(0), b.const(np.arange(6, dtype=np.float32))], num_split=3, name="split")
    b.add(x, parts[0], name="first")
    b.add(x, parts[2], name="last")

    def structure(g):
        assert "Split" not in g.ops() and "split" not in g
        assert {n.name for n in g.nodes if n.op == "Const"} == {"split/constfold_0", "split/constfold_2"}
        assert g.node("last").inputs[1].node.attr("value").tolist() == [4.0, 5.0]

    check_pass("constfold", b.graph, ["first", "last"], structure=structure)


def test_fetched_node_keeps_its_name():
    b = GraphBuilder()
    b.add(b.const(2.0), b.const(3.0), name="five")

    def structure(g):
        assert g.node("five").op == "Const" and len(g) == 1

    check_pass("constfold", b.graph, ["five"], structure=structure)


def test_kept_node_is_left_alone():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [], name="x")
    b.mul(x, b.add(b.const(2.0), b.const(3.0), name="five"), name="out")
    check_pass("constfold", b.graph, ["out"], keep=["five"], expect_changed=False)


def test_outputs_over_the_size_limit_are_not_folded():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [], name="x")
    big = b.op("Fill", [b.const([3, 1024, 1024]), b.const(1.0)], name="big")  # 12 MiB > 10 MiB default
    b.mul(x, b.reduce_sum(big, [0, 1, 2]), name="out")

    def structure(g):
        assert "Fill" in g.ops()

    result = check_pass("constfold", b.graph, ["out"], structure=structure, expect_changed=False)
    assert result.stats == {"fold_too_big": 1}


def test_random_and_stateful_nodes_are_not_folded():
    b = GraphBuilder()
    noise = b.op("RandomUniform", [b.const([3])], dtype=dtypes.float32, seed=1, seed2=2, name="noise")
    checked = b.op("CheckNumerics", [b.const([1.0, 2.0, 3.0])], message="bad", name="checked")
    b.add(b.add(noise, checked), b.mul(b.const(2.0), b.const(3.0), name="six"), name="out")

    def structure(g):
        assert {"RandomUniform", "CheckNumerics", "AddV2"} <= g.ops() and "Mul" not in g.ops()

    result = check_pass("constfold", b.graph, ["out"], structure=structure)
    assert result.stats == {"nodes_folded": 1}


def test_a_failing_fold_is_left_for_run_time():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [], name="x")
    bad = b.graph.add_node("Reshape", "bad", inputs=[b.const(np.zeros(6, np.float32)), b.const([4])],
                           attrs={"T": dtypes.float32, "Tshape": dtypes.int32})
    b.graph.add_node("Identity", "bad_user", inputs=[bad.output(0)], attrs={"T": dtypes.float32})
    b.identity(x, name="out")
    result = check_pass("constfold", b.graph, ["out"], expect_changed=False)
    assert result.stats == {"fold_failed": 1}


def test_folded_node_keeps_its_control_inputs_and_those_of_its_constants():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [], name="x")
    first = b.identity(x, name="first")
    second = b.identity(x, name="second")
    with b.control_dependencies([second]):
        three = b.const(3.0, name="three")
    with b.control_dependencies([first]):
        five = b.add(b.const(2.0), three, name="five")
    b.mul(x, five, name="out")

    def structure(g):
        const = _const_named(g, "five")
        assert {n.name for n in const.control_inputs} == {"first", "second"}

    check_pass("constfold", b.graph, ["out"], structure=structure)


def test_fold_inside_a_while_loop_stays_in_its_frame():
    b = GraphBuilder()

    def body(i, acc):
        return [b.add(i, 1), b.add(acc, b.mul(b.const(2.0), b.const(3.0), name="six"))]

    i, acc = b.while_loop(lambda i, acc: b.less(i, 4), body, [b.const(0), b.const(0.0)], name="loop")
    b.identity(acc, name="out")

    def structure(g):
        assert "Mul" not in g.ops()
        const = _const_named(g, "loop/six")
        frames = g.frames()
        assert frames.frame_of[const].name and frames.frame_of[const] is frames.frame_of[g.node("loop/AddV2_1")]
        assert const.control_inputs  # tied to the loop's pivot: it runs once per iteration

    check_pass("constfold", b.graph, ["out"], structure=structure)


def test_shape_inside_a_while_loop_keeps_a_control_edge():
    b = GraphBuilder()
    x = b.placeholder(dtypes.int32, [2], name="x")

    def body(i, v):
        return [b.add(i, b.reduce_sum(b.shape_of(v, name="shape"), [0])), v]

    i, _ = b.while_loop(lambda i, v: b.less(i, 5), body, [b.const(0), x], name="loop")
    b.identity(i, name="out")

    def structure(g):
        assert "Shape" not in g.ops()
        const = _const_named(g, "loop/Sum")  # Shape became a Const, then Sum of it folded on
        frames = g.frames()
        assert frames.frame_of[const] is frames.frame_of[g.node("loop/AddV2")] and const.control_inputs

    check_pass("constfold", b.graph, ["out"], structure=structure)


def test_shape_after_a_while_loop_needs_no_control_edge():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [2], name="x")
    _, v = b.while_loop(lambda i, v: b.less(i, 3), lambda i, v: [b.add(i, 1), b.mul(v, 2.0)],
                        [b.const(0), x], name="loop")
    b.identity(b.shape_of(v, name="shape"), name="out")

    def structure(g):
        assert g.node("out").op == "Const" and not g.node("out").control_inputs

    check_pass("constfold", b.graph, ["out"], structure=structure)


def test_node_with_only_control_users_hands_them_to_its_const():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [], name="x")
    five = b.add(b.const(2.0), b.const(3.0), name="five")
    with b.control_dependencies([five]):
        b.identity(x, name="out")

    def structure(g):
        assert [n.name for n in g.node("out").control_inputs] == ["five/constfold"]

    check_pass("constfold", b.graph, ["out"], structure=structure)


def test_fold_in_a_cond_branch_is_dead_when_the_branch_is_not_taken():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [], name="x")
    p = b.placeholder(dtypes.bool_, [], name="p")
    b.cond(p, lambda: b.add(b.const(2.0), b.const(3.0), name="five"), lambda: b.mul(x, 2.0), name="c")

    def structure(g):
        assert _const_named(g, "c/five").control_inputs

    for taken in (True, False):
        feeds = {"x": np.float32(1.5), "p": np.array(taken)}
        check_pass("constfold", b.graph.copy(), ["c/Merge"], structure=structure, feeds=feeds)


# --- SimplifyGraph ---------------------------------------------------------------------------------
@pytest.mark.parametrize("outer_const_first", [True, False])
@pytest.mark.parametrize("inner_const_first", [True, False])
def test_mul_chain_constants_combine(outer_const_first, inner_const_first):
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    c2 = b.const(4.0, name="c2")
    inner = b.mul(c2, x, name="inner") if inner_const_first else b.mul(x, c2, name="inner")
    c1 = b.const(0.5, name="c1")
    b.mul(c1, inner, name="out") if outer_const_first else b.mul(inner, c1, name="out")

    def structure(g):
        assert ops(g) == ["Const", "Mul", "Placeholder"]
        assert g.node("out").inputs[1].node.attr("value") == 2.0

    result = check_pass("constfold", b.graph, ["out"], structure=structure)
    assert result.stats == {"mul_chains_combined": 1}


# (outer op, outer const slot, inner op, inner const slot, combined op, combined constant) for
# x and constants 4 (inner) and 0.5 (outer); divisions only by the constant.
_MUL_DIV_FORMS = [("RealDiv", 1, "Mul", 0, "Mul", 8.0), ("RealDiv", 1, "Mul", 1, "Mul", 8.0),
                  ("Mul", 0, "RealDiv", 1, "Mul", 0.125), ("Mul", 1, "RealDiv", 1, "Mul", 0.125),
                  ("RealDiv", 1, "RealDiv", 1, "RealDiv", 2.0)]


@pytest.mark.parametrize("outer_op,outer_slot,inner_op,inner_slot,combined_op,combined", _MUL_DIV_FORMS)
def test_mul_div_chain_constants_combine(outer_op, outer_slot, inner_op, inner_slot, combined_op, combined):
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    c2 = b.const(np.float32(4.0), name="c2")
    inner = b.op(inner_op, [c2, x] if inner_slot == 0 else [x, c2], name="inner")
    c1 = b.const(np.float32(0.5), name="c1")
    b.op(outer_op, [c1, inner] if outer_slot == 0 else [inner, c1], name="out")

    def structure(g):
        assert ops(g) == sorted(["Const", combined_op, "Placeholder"])
        assert g.node("out").op == combined_op and g.node("out").inputs[1].node.attr("value") == combined

    result = check_pass("constfold", b.graph, ["out"], structure=structure)
    assert result.stats == {"mul_div_chains_combined": 1}


@pytest.mark.parametrize("dtype", [dtypes.float32, dtypes.int32])
def test_division_of_a_constant_by_x_and_integer_division_stay(dtype):
    b = GraphBuilder()
    x = b.placeholder(dtype, [3], name="x")
    inner = b.op("RealDiv" if dtype is dtypes.float32 else "Mul", [b.const(np.array(4, dtype.numpy)), x], name="inner")
    b.op("RealDiv" if dtype is dtypes.float32 else "FloorDiv", [inner, b.const(np.array(2, dtype.numpy))], name="out")
    before = sorted(n.op for n in b.graph.nodes)

    def structure(g):
        assert sorted(n.op for n in g.nodes) == before

    check_pass("constfold", b.graph, ["out"], structure=structure, expect_changed=False)


# (outer op, outer const slot, inner op, inner const slot): every sign combination.
_ADD_SUB_FORMS = [(outer, oslot, inner, islot) for outer in ("AddV2", "Sub") for oslot in (0, 1)
                  for inner in ("AddV2", "Sub") for islot in (0, 1)]


@pytest.mark.parametrize("dtype", [dtypes.float32, dtypes.int32])
@pytest.mark.parametrize("outer_op,outer_slot,inner_op,inner_slot", _ADD_SUB_FORMS)
def test_add_sub_chain_constants_combine(dtype, outer_op, outer_slot, inner_op, inner_slot):
    b = GraphBuilder()
    x = b.placeholder(dtype, [3], name="x")
    c2 = b.const(np.array([1, 2, 3], dtype.numpy), name="c2")
    inner = b.op(inner_op, [c2, x] if inner_slot == 0 else [x, c2], name="inner")
    c1 = b.const(np.array(10, dtype.numpy), name="c1")
    b.op(outer_op, [c1, inner] if outer_slot == 0 else [inner, c1], name="out")

    def structure(g):
        assert "inner" not in g and g.node("out").op in ("AddV2", "Sub") and len(g) == 3

    result = check_pass("constfold", b.graph, ["out"], structure=structure)
    assert result.stats == {"add_sub_chains_combined": 1}


def test_chain_constant_may_broadcast_when_the_result_shape_stays():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    b.mul(b.const(np.full((2, 1), 3.0, np.float32)), b.mul(x, 2.0, name="inner"), name="out")

    def structure(g):
        assert g.node("out").inputs[1].node.attr("value").shape == (2, 1)

    check_pass("constfold", b.graph, ["out"], structure=structure)


def test_inner_node_with_other_users_is_not_combined():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    inner = b.mul(x, 2.0, name="inner")
    b.mul(inner, 3.0, name="out")
    b.identity(inner, name="other")
    check_pass("constfold", b.graph, ["out", "other"], expect_changed=False)


def test_strict_fp_skips_simplify_but_still_folds():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    b.mul(b.mul(x, 3.0, name="inner"), b.add(b.const(0.5), b.const(0.25), name="c"), name="out")

    def structure(g):
        assert "inner" in g and g.node("out").inputs[0].node.name == "inner"

    result = check_pass("constfold", b.graph, ["out"], structure=structure, strict_fp=True)
    assert result.stats == {"nodes_folded": 1}


def test_an_op_without_a_T_attr_reading_a_division_is_left_alone():
    # GatherV2 (typed by Tparams) consuming a RealDiv: the chain rules must look at its op first.
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    scaled = b.op("RealDiv", [x, b.const(np.array(2, np.float32))], name="scaled")
    b.op("GatherV2", [scaled, b.const(np.array([2, 0], np.int32)), b.const(np.array(0, np.int32))], name="out")
    before = sorted(n.op for n in b.graph.nodes)

    def structure(g):
        assert sorted(n.op for n in g.nodes) == before

    check_pass("constfold", b.graph, ["out"], structure=structure, expect_changed=False)
