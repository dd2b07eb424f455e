"""Gradients of the TensorList ops against central finite differences.

List ops take and give variant lists, which cannot be fed or nudged, so each case is a small
float64 graph tensor -> lists -> tensor: the driver differentiates the whole graph and
tests/grad/grad_check.py compares with finite differences of its forward part. Together the cases
call every registered list gradient, with the incoming gradients the ops meet in practice (a list
gradient with unset elements, a popped element or list nothing reads, a list read twice whose
gradients meet in AddN of lists, lists carried through while loops and entered as invariants).
TensorFlow's own gradients of list graphs and of a list loop are the op_tensor_list_grad and
op_tensor_list_while fixtures (tests/grad/test_tf_gradients.py).
"""
from __future__ import annotations

import numpy as np
import pytest

from graphtool import dtypes
from graphtool.builder import GraphBuilder
from graphtool.grad import registry
from graphtool.grad.driver import gradients
from graphtool.ops import registry as op_registry
from graphtool.shapes import Shape

from .grad_check import check_gradients, random_feeds

F64 = dtypes.float64


def _shape(*dims):
    return np.asarray(dims, np.int32).reshape(len(dims))


def _loss(b, *tensors):
    """y = sum over the tensors of sum(sin(t) * t): every element matters, non-linearly."""
    parts = [b.op("Sum", [b.op("Mul", [b.op("Sin", [t]), t]), np.arange(len(b.shape(t)), dtype=np.int32)])
             for t in tensors]
    return b.op("AddN", [parts], name="y") if len(parts) > 1 else b.op("Identity", [parts[0]], name="y")


def _stack(b, handle, *dims, **attrs):
    element_shape = _shape(*dims) if dims else np.int32(-1)
    return b.op("TensorListStack", [handle, element_shape], element_dtype=F64, **attrs)


def _from_tensor_get_set():
    b = GraphBuilder()
    x = b.placeholder("float64", [4, 3], name="x")
    v = b.placeholder("float64", [3], name="v")
    items = b.op("TensorListFromTensor", [x, _shape(3)])
    first = b.op("TensorListGetItem", [items, np.int32(0), np.int32(-1)], element_dtype=F64)
    # items is read by GetItem and by SetItem: its two gradients meet in AddN of lists.
    changed = b.op("TensorListSetItem", [items, np.int32(2), b.op("Mul", [first, v])])
    _loss(b, _stack(b, changed, 3, num_elements=4))
    return b.graph, ["x:0", "v:0"]


def _set_item_resize():
    b = GraphBuilder()
    v = b.placeholder("float64", [2], name="v")
    empty = b.op("EmptyTensorList", [_shape(2), np.int32(-1)], element_dtype=F64)
    grown = b.op("TensorListSetItem", [empty, np.int32(2), b.op("Mul", [v, v])], resize_if_index_out_of_bounds=True)
    grown = b.op("TensorListSetItem", [grown, np.int32(0), b.op("Sin", [v])], resize_if_index_out_of_bounds=True)
    _loss(b, _stack(b, grown, 2))
    return b.graph, ["v:0"]


def _push_pop():
    """PushBack <-> PopBack, with a popped list nothing reads and a popped element read."""
    b = GraphBuilder()
    x = b.placeholder("float64", [2, 3], name="x")
    v = b.placeholder("float64", [3], name="v")
    items = b.op("TensorListFromTensor", [x, _shape(3)])
    pushed = b.op("TensorListPushBack", [items, b.op("Tanh", [v])])
    pushed = b.op("TensorListPushBack", [pushed, b.op("Mul", [v, v])])
    shorter, last = b.op("TensorListPopBack", [pushed, np.int32(-1)], element_dtype=F64)
    _, second_last = b.op("TensorListPopBack", [shorter, _shape(3)], element_dtype=F64)
    _loss(b, _stack(b, shorter, 3), last, second_last)
    return b.graph, ["x:0", "v:0"]


def _pop_list_only():
    """A PopBack whose element nothing reads (its gradient is zeros pushed back)."""
    b = GraphBuilder()
    x = b.placeholder("float64", [3, 2], name="x")
    shorter, _ = b.op("TensorListPopBack", [b.op("TensorListFromTensor", [x, _shape(2)]), np.int32(-1)],
                      element_dtype=F64)
    _loss(b, _stack(b, shorter, 2))
    return b.graph, ["x:0"]


def _gather_scatter():
    b = GraphBuilder()
    x = b.placeholder("float64", [4, 2], name="x")
    v = b.placeholder("float64", [2, 2], name="v")
    items = b.op("TensorListFromTensor", [x, _shape(2)])
    gathered = b.op("TensorListGather", [items, np.int32([3, 0, 3]), np.int32(-1)], element_dtype=F64)
    scattered = b.op("TensorListScatter", [b.op("Sin", [v]), np.int32([2, 0]), _shape(2)])
    scattered_v2 = b.op("TensorListScatterV2", [v, np.int32([1, 3]), _shape(2), np.int32(5)])
    into = b.op("TensorListScatterIntoExistingList", [items, b.op("Mul", [v, v]), np.int32([1, 4])])
    _loss(b, gathered, _stack(b, scattered, 2),
          b.op("TensorListGather", [scattered_v2, np.int32([1, 3, 4]), _shape(2)], element_dtype=F64),
          _stack(b, into, 2))
    return b.graph, ["x:0", "v:0"]


def _split_concat():
    b = GraphBuilder()
    x = b.placeholder("float64", [6, 2], name="x")
    split = b.op("TensorListSplit", [x, _shape(-1, 2), np.int64([1, 0, 3, 2])])
    joined, _ = b.op("TensorListConcatV2", [split, _shape(-1, 2), np.zeros([0], np.int64)], element_dtype=F64)
    joined_v1, _ = b.op("TensorListConcat", [b.op("TensorListSplit", [b.op("Sin", [x]), np.int32(-1),
                                                                      np.int64([4, 2])])],
                        element_dtype=F64, element_shape=Shape([None, 2]))
    _loss(b, b.op("Mul", [joined, joined_v1]),
          b.op("TensorListGetItem", [split, np.int32(2), np.int32(-1)], element_dtype=F64))
    return b.graph, ["x:0"]


def _resize():
    b = GraphBuilder()
    x = b.placeholder("float64", [4, 2], name="x")
    items = b.op("TensorListFromTensor", [x, _shape(2)])
    shrunk = b.op("TensorListResize", [items, np.int32(2)])
    regrown = b.op("TensorListResize", [shrunk, np.int32(5)])
    _loss(b, _stack(b, regrown, 2))
    return b.graph, ["x:0"]


def _loop_graph(parallel_iterations: int, invariant: bool):
    """A tanh RNN over the rows of x: inputs from a FromTensor list (a loop variable, or an
    invariant Enter when `invariant`), outputs written with SetItem and pushed with PushBack."""
    b = GraphBuilder()
    x = b.placeholder("float64", [4, 3], name="x")
    w = b.placeholder("float64", [3], name="w")
    n = b.placeholder("int32", [], name="n")
    inputs = b.op("TensorListFromTensor", [b.op("Tanh", [x]), _shape(3)])
    outputs = b.op("TensorListReserve", [_shape(3), np.int32(4)], element_dtype=F64)
    history = b.op("EmptyTensorList", [_shape(3), np.int32(-1)], element_dtype=F64)

    def step(i, h, source, outputs, history):
        x_t = b.op("TensorListGetItem", [source, i, _shape(3)], element_dtype=F64)
        h = b.op("Tanh", [b.op("AddV2", [b.op("Mul", [h, w]), x_t])])
        return (b.op("AddV2", [i, 1]), h, b.op("TensorListSetItem", [outputs, i, h]),
                b.op("TensorListPushBack", [history, b.op("Mul", [h, h])]))

    if invariant:
        def body(i, h, outputs, history):
            return step(i, h, inputs, outputs, history)
        loop_vars = [0, w, outputs, history]
    else:
        def body(i, h, source, outputs, history):
            i, h, outputs, history = step(i, h, source, outputs, history)
            return i, h, source, outputs, history
        loop_vars = [0, w, inputs, outputs, history]
    results = b.while_loop(lambda i, *_: b.less(i, n), body, loop_vars, parallel_iterations=parallel_iterations)
    h, outputs, history = results[1], results[-2], results[-1]
    _loss(b, h, _stack(b, outputs, 3, num_elements=4), _stack(b, history, 3))
    return b.graph, ["x:0", "w:0"]


CASES = {
    "from_tensor-get-set-stack": (_from_tensor_get_set, {}),
    "set_item-resize": (_set_item_resize, {}),
    "push-pop": (_push_pop, {}),
    "pop-list-only": (_pop_list_only, {}),
    "gather-scatter": (_gather_scatter, {}),
    "split-concat": (_split_concat, {}),
    "resize": (_resize, {}),
    "loop-var-4": (lambda: _loop_graph(4, invariant=False), {"n": np.int32(4)}),
    "loop-var-partial": (lambda: _loop_graph(1, invariant=False), {"n": np.int32(2)}),
    "loop-invariant-list": (lambda: _loop_graph(4, invariant=True), {"n": np.int32(3)}),
    "loop-zero-iterations": (lambda: _loop_graph(4, invariant=False), {"n": np.int32(0)}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_tensor_list_gradients_match_finite_differences(case):
    make, extra = CASES[case]
    graph, xs = make()
    shapes = {x: graph.tensor(x).node.attr("shape").as_list() for x in xs}
    feeds = {**random_feeds(sum(map(ord, case)), **{x: shape for x, shape in shapes.items()}), **{
        f"{name}:0": value for name, value in extra.items()}}
    check_gradients(graph, "y:0", xs, feeds, rtol=1e-6, atol=1e-8)


def test_every_list_gradient_is_exercised():
    """The cases above reach every registered TensorList gradient."""
    wanted = {op for op, spec in op_registry.all_ops().items()
              if spec.family == "tensor_list" and op in registry.registered()}
    reached = set()
    for make, _ in CASES.values():
        graph, _xs = make()
        reached |= {node.op for node in graph.nodes}
    assert wanted <= reached, f"no case for {sorted(wanted - reached)}"


def test_a_list_of_integers_carries_no_gradient():
    b = GraphBuilder()
    x = b.placeholder("float64", [3], name="x")
    k = b.placeholder("int32", [3], name="k")
    ints = b.op("TensorListFromTensor", [k, np.int32(-1)])
    count = b.op("Cast", [_stack_int(b, ints)], DstT=F64)
    b.op("Sum", [b.op("Mul", [x, count]), np.int32([0])], name="y")
    graph, report = gradients(b.graph, "y:0", ["x:0", "k:0"], prefix="grad")
    assert not any(node.op.startswith("TensorList") for node in graph.nodes if node.name.startswith("grad/"))


def _stack_int(b, handle):
    return b.op("TensorListStack", [handle, np.int32(-1)], element_dtype=dtypes.int32)


def test_a_pushed_list_whose_exit_was_dropped_gets_zeros_of_its_final_length():
    """Frozen graphs drop unused Exits. The gradient of a list loop var nothing reads after the
    loop is zeros like its final value (PushBack made it longer than its initial one), so the
    driver adds the Exit back rather than taking the initial list's length."""
    b = GraphBuilder()
    x = b.placeholder("float64", [3], name="x")
    w = b.placeholder("float64", [3], name="w")
    history = b.op("EmptyTensorList", [_shape(3), np.int32(-1)], element_dtype=F64)

    def body(i, h, history):
        history = b.op("TensorListPushBack", [history, b.op("Mul", [h, w])])
        last = b.op("TensorListGetItem", [history, i, _shape(3)], element_dtype=F64)
        return b.op("AddV2", [i, 1]), b.op("Tanh", [b.op("AddV2", [last, x])]), history

    _, h, history_exit = b.while_loop(lambda i, *_: b.less(i, 4), body, [0, x, history])
    _loss(b, h)
    graph = b.graph
    graph.remove_node(history_exit.node)
    feeds = random_feeds(7, **{"x:0": [3], "w:0": [3]})
    check_gradients(graph, "y:0", ["x:0", "w:0"], feeds, rtol=1e-6, atol=1e-8)
