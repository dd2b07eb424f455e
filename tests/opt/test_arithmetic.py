"""arithmetic: every rule, and the cases where it must decline (broadcasting, fetched nodes,
strict_fp, loop frames, dtypes)."""
import numpy as np
import pytest

from graphtool import dtypes
from graphtool.builder import GraphBuilder

from .pass_check import check_pass, ops

CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"


def reads(graph, name, *inputs):
    """Assert node `name` reads exactly `inputs` (tensor names)."""
    assert [ref.name for ref in graph.node(name).inputs] == list(inputs)


# --- same input summed k times -> x * k --------------------------------------------------------------
def test_addn_of_one_tensor_becomes_a_mul_on_the_same_device():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [2, 3], name="x")
    with b.device(CPU1):
        b.op("AddN", [[x, x, x]], name="sum")
    b.relu(b.graph.node("sum").output(0), name="out")

    def structure(g):
        assert "sum" not in g and "AddN" not in ops(g)
        mul = g.node("sum/arithmetic")
        assert mul.op == "Mul" and mul.device == CPU1 and mul.inputs[0].name == "x"
        factor = mul.inputs[1].node
        assert factor.op == "Const" and factor.attr("value") == 3 and factor.attr("dtype") == dtypes.float32
        reads(g, "out", "sum/arithmetic")

    result = check_pass("arithmetic", b.graph, ["out"], structure=structure)
    assert result.stats == {"same_input_sums_to_mul": 1}


def test_a_tree_of_integer_adds_becomes_one_mul_even_under_strict_fp():
    b = GraphBuilder()
    x = b.placeholder(dtypes.int32, [4], name="x")
    b.identity(b.add(b.add(b.add(x, x, name="a1"), x, name="a2"), x, name="a3"), name="out")

    def structure(g):
        assert not {"a1", "a2", "a3"} & {n.name for n in g.nodes}
        assert g.node("a3/arithmetic").inputs[1].node.attr("value") == 4

    check_pass("arithmetic", b.graph, ["out"], structure=structure, strict_fp=True)


def test_a_lone_add_of_x_and_x_is_left_alone():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    b.identity(b.add(x, x), name="out")
    check_pass("arithmetic", b.graph, ["out"], expect_changed=False)


@pytest.mark.parametrize("copies, changed", [(3, True), (4, False)])
def test_strict_fp_allows_only_float_sums_that_round_like_the_product(copies, changed):
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    b.identity(b.op("AddN", [[x] * copies], name="sum"), name="out")
    check_pass("arithmetic", b.graph, ["out"], strict_fp=True, expect_changed=changed)


def test_a_fetched_sum_is_not_replaced():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    b.op("AddN", [[x, x]], name="sum")
    check_pass("arithmetic", b.graph, ["sum"], expect_changed=False)


def test_no_constant_is_created_inside_a_loop_frame():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    (_, y) = b.while_loop(lambda i, v: b.less(i, 3),
                          lambda i, v: [b.add(i, 1), b.op("AddN", [[v, v, v]], name="sum")],
                          [b.const(0), x], name="loop")
    b.identity(y, name="out")
    check_pass("arithmetic", b.graph, ["out"], expect_changed=False)


# --- hoisting small addends ---------------------------------------------------------------------------
def _hoistable(dtype, m_shape=(2, 3)):
    b = GraphBuilder()
    m1 = b.placeholder(dtype, list(m_shape), name="m1")
    m2 = b.placeholder(dtype, list(m_shape), name="m2")
    s = b.placeholder(dtype, [], name="s")
    left = b.add(m1, b.const(np.array([1, 2, 3], dtype.numpy)), name="left")   # a small constant
    right = b.add(s, m2, name="right")                                          # a scalar, on the left
    b.identity(b.add(left, right, name="total"), name="out")
    return b


def test_small_addends_are_hoisted_out_of_a_sum():
    def structure(g):
        assert "left" not in g and "right" not in g
        reads(g, "total", "total/arithmetic_tensors", "total/arithmetic_small")
        reads(g, "total/arithmetic_tensors", "m1", "m2")
        assert g.node("total/arithmetic_small").inputs[1].name == "s"

    result = check_pass("arithmetic", _hoistable(dtypes.float32).graph, ["out"], structure=structure)
    assert result.stats == {"small_addends_hoisted": 1}


def test_hoisting_reassociates_floats_so_strict_fp_skips_it_but_not_for_ints():
    check_pass("arithmetic", _hoistable(dtypes.float32).graph, ["out"], strict_fp=True, expect_changed=False)
    check_pass("arithmetic", _hoistable(dtypes.int32).graph, ["out"], strict_fp=True)


def test_no_hoisting_when_the_tensors_shapes_are_not_known_to_match():
    check_pass("arithmetic", _hoistable(dtypes.float32, m_shape=(None, 3)).graph, ["out"], expect_changed=False)


# --- neutral operands ---------------------------------------------------------------------------------
NEUTRAL_CASES = [("Mul", "x", 1.0), ("Mul", "c", 1.0), ("AddV2", "x", 0.0), ("AddV2", "c", 0.0),
                 ("Sub", "x", 0.0), ("RealDiv", "x", 1.0), ("Div", "x", 1.0)]


@pytest.mark.parametrize("op, first, constant", NEUTRAL_CASES)
def test_neutral_operand_is_removed(op, first, constant):
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [None, 3], name="x")
    c = b.const(np.full([1, 3], constant, np.float32), name="c")   # broadcasts without growing x
    b.relu(b.op(op, [x, c] if first == "x" else [c, x], name="y"), name="out")

    def structure(g):
        assert "y" not in g and "c" not in g  # the orphaned constant goes too
        reads(g, "out", "x")

    check_pass("arithmetic", b.graph, ["out"], structure=structure)


@pytest.mark.parametrize("x_shape, c_shape", [([3], [2, 3]), ([1], [3]), (None, [1])])
def test_a_constant_that_broadcasts_x_to_another_shape_is_kept(x_shape, c_shape):
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, x_shape, name="x")
    b.relu(b.mul(x, np.ones(c_shape, np.float32), name="y"), name="out")
    feeds = {"x": np.ones([3] if x_shape is None else x_shape, np.float32)}
    check_pass("arithmetic", b.graph, ["out"], expect_changed=False, feeds=feeds)


def test_a_constant_that_is_not_all_neutral_is_kept():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [2], name="x")
    b.relu(b.mul(x, np.array([1, 2], np.float32), name="y"), name="out")
    check_pass("arithmetic", b.graph, ["out"], expect_changed=False)


def test_fetched_and_kept_nodes_are_not_bypassed():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    b.relu(b.mul(x, 1.0, name="y"), name="out")
    b.mul(x, 1.0, name="kept")
    check_pass("arithmetic", b.graph, ["y", "kept"], expect_changed=False)
    check_pass("arithmetic", b.graph, ["out"], keep=["kept", "y"], expect_changed=False)


@pytest.mark.parametrize("op, zero, dtype, changed", [
    ("AddV2", 0.0, np.float32, False),   # -0.0 + 0.0 is +0.0
    ("AddV2", -0.0, np.float32, True),   # x + (-0.0) is x, signed zeros included
    ("Sub", 0.0, np.float32, True),
    ("Sub", -0.0, np.float32, False),
    ("AddV2", 0, np.int32, True),
])
def test_strict_fp_keeps_additions_of_zero_that_flip_the_sign_of_zero(op, zero, dtype, changed):
    b = GraphBuilder()
    x = b.placeholder(dtypes.from_numpy(np.dtype(dtype)), [3], name="x")
    b.relu(b.op(op, [x, np.array(zero, dtype)], name="y"), name="out")
    check_pass("arithmetic", b.graph, ["out"], strict_fp=True, expect_changed=changed)


def test_control_inputs_of_a_bypassed_node_pass_to_its_users():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    init = b.no_op(name="init")
    with b.control_dependencies([init]):
        y = b.mul(x, 1.0, name="y")
    b.relu(y, name="out")

    def structure(g):
        assert "y" not in g and [n.name for n in g.node("out").control_inputs] == ["init"]

    check_pass("arithmetic", b.graph, ["out"], structure=structure)


def test_in_a_cond_branch_users_inherit_the_constants_pivot():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    pred = b.placeholder(dtypes.bool_, [], name="pred")
    b.identity(b.cond(pred, lambda: b.relu(b.mul(x, 1.0, name="y"), name="r"), lambda: b.tanh(x)), name="out")

    def structure(g):
        assert "cond/y" not in g
        assert "cond/switch_t" in [n.name for n in g.node("cond/r").control_inputs]

    for taken in (True, False):
        feeds = {"x": np.array([1.0, -2.0, 3.0], np.float32), "pred": np.array(taken)}
        check_pass("arithmetic", b.graph.copy(), ["out"], structure=structure, feeds=feeds)


def test_identities_inside_a_loop_body_are_removed():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    (_, y) = b.while_loop(lambda i, v: b.less(i, 3),
                          lambda i, v: [b.add(i, 1), b.tanh(b.op("Neg", [b.op("Neg", [v])]))],
                          [b.const(0), x], name="loop")
    b.identity(y, name="out")

    def structure(g):
        assert "Neg" not in ops(g)

    check_pass("arithmetic", b.graph, ["out"], structure=structure)


# --- inverse pairs and no-op shape/type changes ------------------------------------------------------
def test_double_negation_is_removed():
    b = GraphBuilder()
    x = b.placeholder(dtypes.int32, [3], name="x")
    b.identity(b.op("Neg", [b.op("Neg", [x])]), name="out")
    check_pass("arithmetic", b.graph, ["out"], structure=lambda g: reads(g, "out", "x"))


@pytest.mark.parametrize("first, second, changed", [([1, 2, 0], [2, 0, 1], True), ([1, 2, 0], [1, 2, 0], False)])
def test_transposes_that_undo_each_other_are_removed(first, second, changed):
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [2, 3, 4], name="x")
    inner = b.op("Transpose", [x, np.array(first, np.int32)], name="t1")
    b.identity(b.op("Transpose", [inner, np.array(second, np.int32)], name="t2"), name="out")
    structure = (lambda g: reads(g, "out", "x")) if changed else None
    check_pass("arithmetic", b.graph, ["out"], structure=structure, expect_changed=changed)


# [?, 3] -> [-1, 3]: the element count fixes the one unknown dim; not so beside a 0 dim, with two
# unknown dims, or when a known dim changes.
@pytest.mark.parametrize("x_shape, target, changed", [
    ([2, 3], [-1, 3], True), ([None, 3], [-1, 3], True), ([None], [-1], True), ([None, 0], [-1, 0], False),
    ([None, None], [-1, 2], False), ([None, 6], [-1, 3], False)])
def test_reshape_to_its_own_known_shape_is_removed(x_shape, target, changed):
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, x_shape, name="x")
    b.identity(b.reshape(x, target, name="r"), name="out")
    check_pass("arithmetic", b.graph, ["out"], expect_changed=changed)


def test_cast_to_the_same_type_is_removed():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [3], name="x")
    b.identity(b.cast(x, "float32", name="c"), name="out")
    check_pass("arithmetic", b.graph, ["out"], structure=lambda g: reads(g, "out", "x"))


@pytest.mark.parametrize("source, middle, changed", [
    ("int32", "int64", True), ("float16", "float32", True), ("bfloat16", "float32", True), ("bool", "int32", True),
    ("float32", "float16", False), ("int64", "float64", False), ("int32", "float32", False)])
def test_cast_round_trips_are_removed_only_when_exact(source, middle, changed):
    b = GraphBuilder()
    x = b.placeholder(source, [3], name="x")
    b.identity(b.cast(b.cast(x, middle, name="there"), source, name="back"), name="out")
    feeds = {"x": np.array([70000.5, -1.25, 3.0], np.float32)} if source == "float32" else None
    check_pass("arithmetic", b.graph, ["out"], expect_changed=changed, feeds=feeds)


@pytest.mark.parametrize("x_shape, axis, squeeze_dims, changed", [
    ([2, 3], 1, [1], True), ([2, 3], -1, [-1], True), ([2, 3], 0, [], True),
    ([None, 3], 0, [], False),    # the unknown dim might be 1 and be squeezed too
    ([2, 1], 0, [2], False)])     # removes x's own size-1 dim, not the inserted one
def test_squeeze_undoing_expand_dims_is_removed(x_shape, axis, squeeze_dims, changed):
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, x_shape, name="x")
    b.identity(b.squeeze(b.expand_dims(x, axis), squeeze_dims), name="out")
    check_pass("arithmetic", b.graph, ["out"], expect_changed=changed)


@pytest.mark.parametrize("x_shape, squeeze_dims, axis, changed", [
    ([2, 1, 3], [1], 1, True), ([2, 1, 3], [], -2, True), ([2, 1, 3], [1], 0, False)])
def test_expand_dims_undoing_squeeze_is_removed(x_shape, squeeze_dims, axis, changed):
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, x_shape, name="x")
    b.identity(b.expand_dims(b.squeeze(x, squeeze_dims), axis), name="out")
    check_pass("arithmetic", b.graph, ["out"], expect_changed=changed)


def test_a_squeeze_of_an_unknown_dim_is_kept():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [2, None, 3], name="x")
    b.identity(b.expand_dims(b.squeeze(x, [1]), 1), name="out")
    check_pass("arithmetic", b.graph, ["out"], expect_changed=False, feeds={"x": np.ones([2, 1, 3], np.float32)})


def test_strict_fp_checks_the_sign_of_bfloat16_zeros_too():
    b = GraphBuilder()
    x = b.placeholder(dtypes.bfloat16, [3], name="x")
    b.relu(b.add(x, b.const(0.0, dtypes.bfloat16), name="y"), name="out")
    check_pass("arithmetic", b.graph, ["out"], strict_fp=True, expect_changed=False)


def test_reduction_over_no_axis_is_removed():
    from graphtool.builder import GraphBuilder

    b = GraphBuilder()
    x = b.placeholder("float32", [2, 3], name="x")
    total = b.op("Sum", [x, b.const(np.zeros([0], np.int32))], name="sum_nothing", keep_dims=False)
    b.relu(total, name="out")
    check_pass("arithmetic", b.graph, ["out"], structure=lambda g: "sum_nothing" not in g)


def test_fetched_reduction_over_no_axis_becomes_an_identity_of_the_same_name():
    from graphtool.builder import GraphBuilder

    b = GraphBuilder()
    x = b.placeholder("float32", [2, 3], name="x")
    b.op("Sum", [x, b.const(np.zeros([0], np.int32))], name="sum_nothing", keep_dims=True)

    def structure(g):
        assert g.node("sum_nothing").op == "Identity" and ops(g).count("Const") == 0

    check_pass("arithmetic", b.graph, ["sum_nothing"], structure=structure)
