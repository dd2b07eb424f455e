"""The gradient driver without control flow: sums over consumers, broadcasting, non-scalar y,
structurally zero gradients, integer paths, naming, devices, second derivatives and every error."""
import numpy as np
import pytest

from graphtool.builder import GraphBuilder
from graphtool.errors import RuntimeFailure, UsageError
from graphtool.exec.session import Session
from graphtool.grad.driver import add_gradients, default_xs, gradient_name, gradients

from .grad_check import check_gradients, numeric_gradient, random_feeds

AXIS0 = np.array([0], np.int32)
CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"


def _sum(b, x, axes=AXIS0, name="y"):
    return b.op("Sum", [x, axes], name=name)


def test_gradients_from_several_consumers_are_summed():
    b = GraphBuilder()
    x = b.placeholder("float64", [3], name="x")
    w = b.placeholder("float64", [3], name="w")
    _sum(b, b.add(b.mul(b.tanh(x), x), b.mul(x, w)))
    check_gradients(b.graph, "y", ["x", "w"], random_feeds(0, x=3, w=3))
    summed = b.graph.get("grad/x_grad/AddN")
    assert summed is not None and summed.op == "AddN" and len(summed.inputs) == 3


def test_broadcasting_is_reduced_to_each_input_shape():
    b = GraphBuilder()
    x = b.placeholder("float64", [3, 1], name="x")
    w = b.placeholder("float64", [1, 4], name="w")
    c = b.placeholder("float64", [], name="c")
    _sum(b, b.mul(b.add(b.mul(x, w), c), w), np.array([0, 1], np.int32))
    feeds = random_feeds(1, x=(3, 1), w=(1, 4), c=())
    check_gradients(b.graph, "y", ["x", "w", "c"], feeds)
    values = Session(b.graph).run(["grad/x", "grad/w", "grad/c"], feeds).values
    assert [v.shape for v in values] == [(3, 1), (1, 4), ()]


def test_non_scalar_y_is_differentiated_as_its_sum():
    b = GraphBuilder()
    x = b.placeholder("float64", [2, 3], name="x")
    b.mul(b.sigmoid(x), x, name="y")
    errors = check_gradients(b.graph, "y", ["x"], random_feeds(2, x=(2, 3)))
    assert errors["x"] < 1e-8


def test_y_of_unknown_shape_is_seeded_with_ones_like_it():
    b = GraphBuilder()
    x = b.placeholder("float64", [None, 2], name="x")
    b.tanh(x, name="y")
    check_gradients(b.graph, "y", ["x"], random_feeds(3, x=(4, 2)))
    assert b.graph.get("grad/grad_ys").inputs[0].node.op == "Shape"


def test_unconnected_x_gets_zeros_and_a_warning():
    b = GraphBuilder()
    x = b.placeholder("float64", [3], name="x")
    b.placeholder("float64", [2, 2], name="unused")
    _sum(b, b.tanh(x))
    report = add_gradients(b.graph, "y", ["x", "unused"])
    assert [entry.zero for entry in report.gradients] == [False, True]
    assert len(report.warnings) == 1 and "'unused'" in report.warnings[0] and "zeros" in report.warnings[0]
    value = Session(b.graph).run(["grad/unused"], {"x": np.ones(3), "unused": np.ones((2, 2))}).values[0]
    np.testing.assert_array_equal(value, np.zeros((2, 2)))


def test_integer_paths_carry_no_gradient():
    """y = x * float(int(x)): the integer round trip is a constant to the gradient (its derivative
    is zero almost everywhere, so finite differences agree)."""
    b = GraphBuilder()
    x = b.placeholder("float64", [3], name="x")
    n = b.placeholder("int32", [3], name="n")
    rounded = b.cast(b.cast(x, "int32"), "float64")
    _sum(b, b.add(b.mul(x, rounded), b.cast(n, "float64")))
    feeds = {"x": np.array([1.3, -2.6, 4.2]), "n": np.array([1, 2, 3], np.int32)}
    report = add_gradients(b.graph, "y", ["x", "n"])
    session = Session(b.graph)
    grad_x, grad_n = session.run(["grad/x", "grad/n"], feeds).values
    np.testing.assert_allclose(grad_x, [1.0, -2.0, 4.0])
    np.testing.assert_allclose(grad_x, numeric_gradient(session, "y", feeds, "x"), atol=1e-6)
    assert grad_n.dtype == np.int32 and not grad_n.any()
    assert report.gradients[1].zero and "int32" in report.warnings[0]
    assert not any(node.name.startswith("grad/Cast") for node in b.graph.nodes)


def test_gradient_names_follow_the_cli_contract():
    b = GraphBuilder()
    x = b.placeholder("float64", [2, 4], name="x")
    halves = b.op("Split", [1, x], num_split=2, name="split")
    w = b.placeholder("float64", [2, 3], name="w")
    b.op("Sum", [b.matmul(halves[1], w, name="dense/MatMul"), np.array([0, 1], np.int32)], name="loss")
    report = add_gradients(b.graph, "loss", ["split:1", "w", "x"], prefix="d/e")
    assert [entry.name for entry in report.gradients] == ["d/e/split_1", "d/e/w", "d/e/x"]
    assert gradient_name("split:1", "d/e") == "d/e/split_1" and gradient_name("w:0") == "grad/w"
    assert b.graph.get("d/e/dense/MatMul_grad/MatMul").op == "MatMul"
    new = [n for n in b.graph.nodes if n.name.startswith("d/e/")]
    assert len(new) == report.nodes_added and all(n.op == "Identity" for n in new if n.name in
                                                   ("d/e/split_1", "d/e/w", "d/e/x"))
    feeds = random_feeds(4, x=(2, 4), w=(2, 3))
    check_gradients(b.graph, "loss", ["w", "x"], feeds, "d/e", add=False)
    of_half, of_x = Session(b.graph).run(["d/e/split_1", "d/e/x"], feeds).values
    np.testing.assert_allclose(of_half, of_x[:, 2:])


def test_backward_nodes_take_the_forward_nodes_device():
    b = GraphBuilder()
    x = b.placeholder("float64", [3], name="x")
    with b.device(CPU1):
        h = b.tanh(x, name="h")
    _sum(b, b.mul(h, h))
    add_gradients(b.graph, "y", ["x"])
    backward = [n for n in b.graph.nodes if n.name.startswith("grad/h_grad/")]
    assert backward and all(n.device == CPU1 for n in backward)
    assert b.graph.get("grad/y_grad/Reshape").device == ""


def test_second_derivative_of_a_scalar_function():
    b = GraphBuilder()
    x = b.placeholder("float64", [3], name="x")
    w = b.placeholder("float64", [3], name="w")
    _sum(b, b.mul(b.mul(b.tanh(x), x), b.sigmoid(b.mul(w, x))))
    add_gradients(b.graph, "y", ["x"])
    # d/dx and d/dw of sum(dy/dx): the Hessian's row sums, against differences of the gradient.
    check_gradients(b.graph, "grad/x", ["x", "w"], random_feeds(5, x=3, w=3), prefix="grad2")


def test_gradients_works_on_a_copy():
    b = GraphBuilder()
    x = b.placeholder("float64", [3], name="x")
    _sum(b, b.tanh(x))
    graph = b.graph
    before = len(graph)
    new_graph, report = gradients(graph, "y", ["x"])
    assert len(graph) == before and len(new_graph) == before + report.nodes_added
    assert "grad/x" in new_graph and "grad/x" not in graph


def test_default_xs_are_the_parameters():
    b = GraphBuilder()
    x = b.placeholder("float32", [None, 3], name="x")
    w = b.const(np.ones((3, 2), np.float32), name="w")
    bias = b.const(np.zeros(2, np.float32), name="bias")
    unused = b.const(np.ones(2, np.float32), name="unused")
    b.identity(unused, name="other")
    variable = b.op("VariableV2", [], shape=[2], dtype="float32", name="v")
    scaled = b.mul(b.bias_add(b.matmul(x, w), bias), 2.0)
    b.mul(scaled, b.identity(variable), name="y")
    assert default_xs(b.graph, "y") == ["w", "bias", "v"]


# --- errors -----------------------------------------------------------------------------------

@pytest.fixture()
def small():
    b = GraphBuilder()
    x = b.placeholder("float32", [3], name="x")
    _sum(b, b.tanh(x))
    b.cast(x, "int32", name="ints")
    return b.graph


@pytest.mark.parametrize("y, xs, message", [
    ("nope", ["x"], "y 'nope': no node named 'nope'"),
    ("y", ["missing:0"], "x 'missing:0': no node named 'missing'"),
    ("y", ["x:3"], "x 'x:3': tensor 'x:3': node 'x' (Placeholder) has 1 output(s)"),
    ("ints", ["x"], "y 'ints' is int32: only a floating tensor can be differentiated"),
])
def test_bad_tensors_are_usage_errors(small, y, xs, message):
    with pytest.raises(UsageError) as caught:
        add_gradients(small, y, xs)
    assert caught.value.exit_code == 2 and message in caught.value.one_line()


def test_taken_gradient_names_are_a_usage_error(small):
    add_gradients(small, "y", ["x"])
    with pytest.raises(UsageError, match="'grad/x', which the graph already has"):
        add_gradients(small, "y", ["x"])
    add_gradients(small, "y", ["x"], prefix="grad2")
    assert "grad2/x" in small


def test_repeated_xs_and_clashing_gradient_names():
    b = GraphBuilder()
    x = b.placeholder("float64", [4], name="x")
    a = b.op("Split", [0, x], num_split=2, name="a")
    a_1 = b.tanh(a[0], name="a_1")
    _sum(b, b.add(b.mul(a_1, a[1]), a[1]))
    report = add_gradients(b.graph, "y", ["x", "x:0"])
    assert [entry.name for entry in report.gradients] == ["grad/x"]
    with pytest.raises(UsageError, match="both have their gradient named 'g/a_1'"):
        add_gradients(b.graph, "y", ["a:1", "a_1"], prefix="g")
    assert not any(node.name.startswith("g/") for node in b.graph.nodes)


def test_op_without_gradient_is_a_runtime_failure_naming_op_and_node():
    b = GraphBuilder()
    a = b.placeholder("float32", [2, 3], name="a")
    w = b.const(np.ones((3, 4), np.float32), name="w")
    fused = b.op("_FusedMatMul", [a, w, [b.const(np.zeros(4, np.float32))]], fused_ops=["BiasAdd"],
                 name="dense/fused")
    _sum(b, fused, np.array([0, 1], np.int32))
    with pytest.raises(RuntimeFailure) as caught:
        add_gradients(b.graph, "y", ["a"])
    assert caught.value.exit_code == 1
    assert "op '_FusedMatMul' (node 'dense/fused')" in caught.value.one_line()


def test_values_inside_a_loop_are_rejected_as_x_or_y():
    b = GraphBuilder()
    x = b.placeholder("float64", [3], name="x")
    seen = {}

    def body(i, h):
        seen["h"] = h
        return b.add(i, 1), b.tanh(h)

    _, h = b.while_loop(lambda i, h: b.less(i, 3), body, [0, x])
    _sum(b, h)
    with pytest.raises(UsageError, match="while loop frame 'while/while_context'"):
        add_gradients(b.graph, "y", [seen["h"].name])
    with pytest.raises(UsageError, match="is inside while loop frame"):
        add_gradients(b.graph, seen["h"].name, [seen["h"].name])


def test_second_derivative_through_a_while_loop_is_refused():
    b = GraphBuilder()
    x = b.placeholder("float64", [3], name="x")
    _, h = b.while_loop(lambda i, h: b.less(i, 3), lambda i, h: (b.add(i, 1), b.tanh(b.mul(h, x))), [0, x])
    _sum(b, h)
    add_gradients(b.graph, "y", ["x"])
    with pytest.raises(RuntimeFailure, match="gradients of a while loop's gradient are not supported"):
        add_gradients(b.graph, "grad/x", ["x"], prefix="g2")


def test_bad_prefix_is_a_usage_error(small):
    with pytest.raises(UsageError, match="invalid gradient prefix"):
        add_gradients(small, "y", ["x"], prefix="a b")


def test_gradients_nobody_asked_for_are_not_left_in_the_graph():
    """MatMul's gradient function also builds the gradient of its data input; asked only for the
    weights, the graph's outputs are the forward output and the requested gradients."""
    from graphtool.ir.queries import graph_outputs

    b = GraphBuilder()
    x = b.placeholder("float64", [2, 3], name="x")
    w = b.const(np.ones((3, 4)), name="w")
    hidden = b.tanh(b.matmul(x, w, name="mm"), name="hidden")
    loss = _sum(b, b.matmul(hidden, b.const(np.ones((4, 1)), name="v")), axes=[0, 1], name="loss")
    grad_graph, _ = gradients(b.graph, loss.name, ["w"])
    assert sorted(node.name for node in graph_outputs(grad_graph)) == ["grad/w", "loss"]
