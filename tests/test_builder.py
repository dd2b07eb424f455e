"""GraphBuilder writes what TensorFlow writes, knows shapes as it builds, and builds v1 control flow
that verifies; the committed sample graphs are what make_samples.py produces today.

The TF_* tables are TensorFlow 2.21's NodeDefs for the same graphs (dumped with tf.compat.v1,
control flow v1, python API calls noted per table), in the form `compact()` gives our graphs:
name -> (op, inputs, attrs), attrs decoded to python values.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from graphtool import dtypes, graph_io
from graphtool.builder import GRAPH_DEF_VERSION, GraphBuilder, GraphBuildError, TensorArray
from graphtool.ir import Graph, Node, from_graphdef
from graphtool.ops import registry
from graphtool.shape_inference import infer_shapes
from graphtool.shapes import Shape

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLES_DIR = REPO_ROOT / "sample_graphs"


def requires_ops(*names):
    missing = [n for n in names if registry.lookup(n) is None]
    return pytest.mark.skipif(bool(missing), reason=f"ops not registered yet: {', '.join(missing)}")


def _plain(value):
    """An attr value as the TF_* tables spell it."""
    if isinstance(value, dtypes.DType):
        return value.name
    if isinstance(value, Shape):
        return None if value.dims is None else list(value.dims)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def compact(graph: Graph) -> dict:
    return {node.name: (node.op, [r.name for r in node.inputs] + ["^" + c.name for c in node.control_inputs],
                        {key: _plain(node.attr(key)) for key in sorted(node.attrs)})
            for node in graph}


def assert_same_nodes(graph: Graph, expected: dict) -> None:
    found = compact(graph)
    assert sorted(found) == sorted(expected)
    for name, node in expected.items():
        assert found[name] == node, name


# tf.raw_ops.<Op>(..., name="<Op>") for each op; x/img placeholders; w, k, bias, ones tf.constant;
# Identity under control_dependencies([x, w]); then name_scope("foo") twice and a constant "foo".
TF_OPS_GRAPH = {
    'x': ('Placeholder', [], {'dtype': 'float32', 'shape': [None, 4]}),
    'w': ('Const', [], {'dtype': 'float32', 'value': np.arange(16.0).reshape(4, 4).tolist()}),
    'MatMul': ('MatMul', ['x', 'w'], {'T': 'float32', 'grad_a': False, 'grad_b': False, 'transpose_a': False,
                                      'transpose_b': False}),
    'img': ('Placeholder', [], {'dtype': 'float32', 'shape': [None, 8, 8, 3]}),
    'k': ('Const', [], {'dtype': 'float32', 'value': np.full((3, 3, 3, 4), 0.5).tolist()}),
    'Conv2D': ('Conv2D', ['img', 'k'], {'T': 'float32', 'data_format': 'NHWC', 'dilations': [1, 1, 1, 1],
                                        'explicit_paddings': [], 'padding': 'SAME', 'strides': [1, 1, 1, 1],
                                        'use_cudnn_on_gpu': True}),
    'bias': ('Const', [], {'dtype': 'float32', 'value': [0.0, 0.0, 0.0, 0.0]}),
    'ones': ('Const', [], {'dtype': 'float32', 'value': [1.0, 1.0, 1.0, 1.0]}),
    'BiasAdd': ('BiasAdd', ['Conv2D', 'bias'], {'T': 'float32', 'data_format': 'NHWC'}),
    'MaxPool': ('MaxPool', ['BiasAdd'], {'T': 'float32', 'data_format': 'NHWC', 'explicit_paddings': [],
                                         'ksize': [1, 2, 2, 1], 'padding': 'VALID', 'strides': [1, 2, 2, 1]}),
    'FusedBatchNormV3': ('FusedBatchNormV3', ['BiasAdd', 'ones', 'bias', 'bias', 'ones'],
                         {'T': 'float32', 'U': 'float32', 'data_format': 'NHWC', 'epsilon': 9.999999747378752e-05,
                          'exponential_avg_factor': 1.0, 'is_training': False}),
    'Cast': ('Cast', ['x'], {'DstT': 'int32', 'SrcT': 'float32', 'Truncate': False}),
    'ConcatV2/axis': ('Const', [], {'dtype': 'int32', 'value': 1}),
    'ConcatV2': ('ConcatV2', ['x', 'x', 'ConcatV2/axis'], {'N': 2, 'T': 'float32', 'Tidx': 'int32'}),
    'Sum/reduction_indices': ('Const', [], {'dtype': 'int32', 'value': [1]}),
    'Sum': ('Sum', ['x', 'Sum/reduction_indices'], {'T': 'float32', 'Tidx': 'int32', 'keep_dims': False}),
    'Reshape/shape': ('Const', [], {'dtype': 'int32', 'value': [-1]}),
    'Reshape': ('Reshape', ['x', 'Reshape/shape'], {'T': 'float32', 'Tshape': 'int32'}),
    'Identity': ('Identity', ['x', '^w'], {'T': 'float32'}),
    'foo/Const': ('Const', [], {'dtype': 'int32', 'value': 1}),
    'foo_1/Const': ('Const', [], {'dtype': 'int32', 'value': 1}),
    'foo_2': ('Const', [], {'dtype': 'int32', 'value': 1}),
}

# tf1.while_loop(lambda i: i < 16, lambda i: i * 2, [tf.constant(4)])
TF_WHILE_GRAPH = {
    'Const': ('Const', [], {'dtype': 'int32', 'value': 4}),
    'while/Enter': ('Enter', ['Const'], {'T': 'int32', 'frame_name': 'while/while_context', 'is_constant': False,
                                         'parallel_iterations': 10}),
    'while/Merge': ('Merge', ['while/Enter', 'while/NextIteration'], {'N': 2, 'T': 'int32'}),
    'while/Less/y': ('Const', ['^while/Merge'], {'dtype': 'int32', 'value': 16}),
    'while/Less': ('Less', ['while/Merge', 'while/Less/y'], {'T': 'int32'}),
    'while/LoopCond': ('LoopCond', ['while/Less'], {}),
    'while/Switch': ('Switch', ['while/Merge', 'while/LoopCond'], {'T': 'int32', '_class': ['loc:@while/Merge']}),
    'while/Identity': ('Identity', ['while/Switch:1'], {'T': 'int32'}),
    'while/mul/y': ('Const', ['^while/Identity'], {'dtype': 'int32', 'value': 2}),
    'while/mul': ('Mul', ['while/Identity', 'while/mul/y'], {'T': 'int32'}),
    'while/NextIteration': ('NextIteration', ['while/mul'], {'T': 'int32'}),
    'while/Exit': ('Exit', ['while/Switch'], {'T': 'int32'}),
}

# x = placeholder(float32, [3]); p = placeholder(bool, []); tf1.cond(p, lambda: x * 2.0, lambda: x + 1.0)
TF_COND_GRAPH = {
    'x': ('Placeholder', [], {'dtype': 'float32', 'shape': [3]}),
    'p': ('Placeholder', [], {'dtype': 'bool', 'shape': []}),
    'cond/Switch': ('Switch', ['p', 'p'], {'T': 'bool'}),
    'cond/switch_t': ('Identity', ['cond/Switch:1'], {'T': 'bool'}),
    'cond/switch_f': ('Identity', ['cond/Switch'], {'T': 'bool'}),
    'cond/pred_id': ('Identity', ['p'], {'T': 'bool'}),
    'cond/mul/y': ('Const', ['^cond/switch_t'], {'dtype': 'float32', 'value': 2.0}),
    'cond/mul': ('Mul', ['cond/mul/Switch:1', 'cond/mul/y'], {'T': 'float32'}),
    'cond/mul/Switch': ('Switch', ['x', 'cond/pred_id'], {'T': 'float32', '_class': ['loc:@x']}),
    'cond/add/y': ('Const', ['^cond/switch_f'], {'dtype': 'float32', 'value': 1.0}),
    'cond/add': ('AddV2', ['cond/add/Switch', 'cond/add/y'], {'T': 'float32'}),
    'cond/add/Switch': ('Switch', ['x', 'cond/pred_id'], {'T': 'float32', '_class': ['loc:@x']}),
    'cond/Merge': ('Merge', ['cond/add', 'cond/mul'], {'N': 2, 'T': 'float32'}),
}

# x, p as above; tf1.while_loop(lambda i, a: i < 3,
#                               lambda i, acc: (i + 1, tf1.cond(p, lambda: acc + x, lambda: acc)),
#                               [0, tf.zeros([3])])
_ENTER = {'frame_name': 'while/while_context', 'parallel_iterations': 10}
TF_NESTED_GRAPH = {
    'x': ('Placeholder', [], {'dtype': 'float32', 'shape': [3]}),
    'p': ('Placeholder', [], {'dtype': 'bool', 'shape': []}),
    'zeros': ('Const', [], {'dtype': 'float32', 'value': [0.0, 0.0, 0.0]}),
    'while/Const': ('Const', [], {'dtype': 'int32', 'value': 0}),
    'while/Enter': ('Enter', ['while/Const'], {'T': 'int32', **_ENTER, 'is_constant': False}),
    'while/Enter_1': ('Enter', ['zeros'], {'T': 'float32', **_ENTER, 'is_constant': False}),
    'while/Merge': ('Merge', ['while/Enter', 'while/NextIteration'], {'N': 2, 'T': 'int32'}),
    'while/Merge_1': ('Merge', ['while/Enter_1', 'while/NextIteration_1'], {'N': 2, 'T': 'float32'}),
    'while/Less/y': ('Const', ['^while/Merge'], {'dtype': 'int32', 'value': 3}),
    'while/Less': ('Less', ['while/Merge', 'while/Less/y'], {'T': 'int32'}),
    'while/LoopCond': ('LoopCond', ['while/Less'], {}),
    'while/Switch': ('Switch', ['while/Merge', 'while/LoopCond'], {'T': 'int32', '_class': ['loc:@while/Merge']}),
    'while/Switch_1': ('Switch', ['while/Merge_1', 'while/LoopCond'],
                       {'T': 'float32', '_class': ['loc:@while/Merge_1']}),
    'while/Identity': ('Identity', ['while/Switch:1'], {'T': 'int32'}),
    'while/Identity_1': ('Identity', ['while/Switch_1:1'], {'T': 'float32'}),
    'while/cond/Switch': ('Switch', ['while/cond/Switch/Enter', 'while/cond/Switch/Enter', '^while/Identity'],
                          {'T': 'bool'}),
    'while/cond/Switch/Enter': ('Enter', ['p'], {'T': 'bool', **_ENTER, 'is_constant': True}),
    'while/cond/switch_t': ('Identity', ['while/cond/Switch:1'], {'T': 'bool'}),
    'while/cond/switch_f': ('Identity', ['while/cond/Switch'], {'T': 'bool'}),
    'while/cond/pred_id': ('Identity', ['while/cond/Switch/Enter', '^while/Identity'], {'T': 'bool'}),
    'while/cond/add': ('AddV2', ['while/cond/add/Switch:1', 'while/cond/add/Switch_1:1'], {'T': 'float32'}),
    'while/cond/add/Switch': ('Switch', ['while/Identity_1', 'while/cond/pred_id'],
                              {'T': 'float32', '_class': ['loc:@while/Identity_1']}),
    'while/cond/add/Enter': ('Enter', ['x'], {'T': 'float32', **_ENTER, 'is_constant': True}),
    'while/cond/add/Switch_1': ('Switch', ['while/cond/add/Enter', 'while/cond/pred_id'],
                                {'T': 'float32', '_class': ['loc:@while/cond/add/Enter']}),
    'while/cond/Switch_1': ('Switch', ['while/Identity_1', 'while/cond/pred_id'],
                            {'T': 'float32', '_class': ['loc:@while/Identity_1']}),
    'while/cond/Merge': ('Merge', ['while/cond/Switch_1', 'while/cond/add'], {'N': 2, 'T': 'float32'}),
    'while/add/y': ('Const', ['^while/Identity'], {'dtype': 'int32', 'value': 1}),
    'while/add': ('AddV2', ['while/Identity', 'while/add/y'], {'T': 'int32'}),
    'while/NextIteration': ('NextIteration', ['while/add'], {'T': 'int32'}),
    'while/NextIteration_1': ('NextIteration', ['while/cond/Merge'], {'T': 'float32'}),
    'while/Exit': ('Exit', ['while/Switch'], {'T': 'int32'}),
    'while/Exit_1': ('Exit', ['while/Switch_1'], {'T': 'float32'}),
}


# --- what TensorFlow writes -----------------------------------------------------------------------

@requires_ops("MatMul", "Conv2D", "BiasAdd", "MaxPool", "FusedBatchNormV3", "Cast", "ConcatV2", "Sum", "Reshape")
def test_ops_get_the_attrs_tensorflow_writes():
    b = GraphBuilder()
    x = b.placeholder("float32", [None, 4], name="x")
    w = b.const(np.arange(16, dtype=np.float32).reshape(4, 4), name="w")
    b.op("MatMul", [x, w])
    img = b.placeholder("float32", [None, 8, 8, 3], name="img")
    k = b.const(0.5, shape=[3, 3, 3, 4], name="k")
    conv = b.op("Conv2D", [img, k], strides=[1, 1, 1, 1], padding="SAME")
    bias, ones = b.const(np.zeros(4, np.float32), name="bias"), b.const(np.ones(4, np.float32), name="ones")
    biased = b.op("BiasAdd", [conv, bias])
    b.op("MaxPool", [biased], ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")
    b.op("FusedBatchNormV3", [biased, ones, bias, bias, ones], is_training=False)
    b.op("Cast", [x], DstT="int32")
    b.op("ConcatV2", [[x, x], 1])
    b.op("Sum", [x, [1]])
    b.op("Reshape", [x, [-1]])
    with b.control_dependencies([x, w.node]):
        b.op("Identity", [x])  # x feeds it data: only ^w is added
    with b.name_scope("foo"):
        b.const(1)
    with b.name_scope("foo"):
        b.const(1)
    b.const(1, name="foo")
    assert_same_nodes(b.graph, TF_OPS_GRAPH)
    assert b.graph.versions.producer == GRAPH_DEF_VERSION
    b.graph.verify()


@requires_ops("Less", "Mul")
def test_while_loop_matches_tensorflow():
    b = GraphBuilder()
    i = b.while_loop(lambda i: b.less(i, 16, name="Less"), lambda i: b.mul(i, 2, name="mul"), b.const(4))
    assert i.name == "while/Exit"
    assert_same_nodes(b.graph, TF_WHILE_GRAPH)


@requires_ops("Mul", "AddV2")
def test_cond_matches_tensorflow():
    b = GraphBuilder()
    x = b.placeholder("float32", [3], name="x")
    p = b.placeholder("bool", [], name="p")
    y = b.cond(p, lambda: b.mul(x, 2.0, name="mul"), lambda: b.add(x, 1.0, name="add"))
    assert y.name == "cond/Merge" and b.shape(y) == [3]
    assert_same_nodes(b.graph, TF_COND_GRAPH)


@requires_ops("Less", "AddV2")
def test_cond_inside_while_loop_matches_tensorflow():
    b = GraphBuilder()
    x = b.placeholder("float32", [3], name="x")
    p = b.placeholder("bool", [], name="p")

    def body(i, acc):
        acc = b.cond(p, lambda: b.add(acc, x, name="add"), lambda: acc)
        return b.add(i, 1, name="add"), acc

    b.while_loop(lambda i, acc: b.less(i, 3, name="Less"), body, [0, b.zeros([3])])
    assert_same_nodes(b.graph, TF_NESTED_GRAPH)
    b.graph.verify()


def test_every_defaulted_attr_is_written():
    b = GraphBuilder()
    x = b.placeholder("float32", None, name="x")
    loop_input = b.op("Enter", [x], frame_name="f")
    node = loop_input.node
    spec = registry.get("Enter")
    assert set(node.attrs) == set(spec.attrs)
    assert node.attr("parallel_iterations") == 10 and node.attr("is_constant") is False
    assert b.shape(x) == Shape(None)


# --- the op() contract ------------------------------------------------------------------------

def test_op_returns_a_tensor_a_list_or_the_node():
    b = GraphBuilder()
    x = b.placeholder("float32", [2], name="x")
    assert b.op("Identity", [x]).index == 0
    outputs = b.op("IdentityN", [[x, b.const(1)]])
    assert [b.dtype(t) for t in outputs] == [dtypes.float32, dtypes.int32]
    assert outputs[0].node.attr("T") == [dtypes.float32, dtypes.int32]
    assert isinstance(b.no_op(), Node)
    p = b.placeholder("bool", [], name="p")
    false_out, true_out = b.op("Switch", [x, p])
    assert (false_out.index, true_out.index) == (0, 1)


def test_python_values_become_consts_named_after_the_input():
    b = GraphBuilder()
    x = b.placeholder("float64", [2], name="x")
    merged = b.op("Merge", [[x, [1.5, 2.5]]])[0]
    converted = merged.node.inputs[1].node
    assert converted.name == "Merge/inputs_1"
    assert converted.attr("dtype") is dtypes.float64  # the type x fixed for T
    assert b.dtype(b.const(3)) is dtypes.int32 and b.dtype(b.const(2.0)) is dtypes.float32
    assert b.dtype(b.const(np.float64(2.0))) is dtypes.float64
    assert b.dtype(b.const(2 ** 40)) is dtypes.int64
    assert b.value(b.const([[1, 2]], "int64")).tolist() == [[1, 2]]
    with pytest.raises(TypeError, match="cannot be represented as int32"):
        b.const(1.5, "int32")


def test_conflicting_input_types_raise_naming_the_node():
    b = GraphBuilder()
    x = b.placeholder("float32", [2], name="x")
    n = b.placeholder("int32", [2], name="n")
    with pytest.raises(TypeError, match=r"node 'Merge' \(Merge\): input 'inputs' makes T = int32, but it is "
                                        r"already float32"):
        b.op("Merge", [[x, n]])
    with pytest.raises(TypeError, match="node 'Switch' .*'pred' must be bool"):
        b.op("Switch", [x, x])
    assert "Merge" not in b.graph and "Switch" not in b.graph


def test_bad_calls_raise_clear_errors():
    b = GraphBuilder()
    x = b.placeholder("float32", [2], name="x")
    with pytest.raises(GraphBuildError, match="unknown op 'NoSuchOp'"):
        b.op("NoSuchOp", [x])
    with pytest.raises(GraphBuildError, match=r"takes 1 input\(s\) \(input\), got 2"):
        b.op("Identity", [x, x])
    with pytest.raises(GraphBuildError, match="no attr named 'colour'"):
        b.op("Identity", [x], colour="red")
    with pytest.raises(GraphBuildError, match="attr 'dtype' .* is required"):
        b.op("Placeholder", [])
    with pytest.raises(GraphBuildError, match="is a list of tensors"):
        b.op("IdentityN", [x])
    with pytest.raises(TypeError, match="not one of the allowed types"):
        b.op("CheckNumerics", [b.const(1)], message="m")


@requires_ops("VariableV2", "Assign")
def test_reference_inputs_need_references():
    b = GraphBuilder()
    v = b.op("VariableV2", [], shape=[3], dtype="float32", name="v")
    assert b.dtype(v) is dtypes.float32.ref
    assigned = b.op("Assign", [v, [1.0, 2.0, 3.0]])
    assert assigned.node.attr("T") is dtypes.float32 and b.shape(assigned) == [3]
    with pytest.raises(TypeError, match="input 'ref' must be a reference .* got float32"):
        b.op("Assign", [b.identity(v), [1.0, 2.0, 3.0]])


@requires_ops("MatMul", "Relu")
def test_shapes_are_known_while_building():
    b = GraphBuilder()
    x = b.placeholder("float32", [None, 16], name="x")
    y = b.relu(b.matmul(x, np.ones((16, 4), np.float32)))
    assert b.shape(y) == [None, 4] and b.dtype(y) is dtypes.float32
    assert b.shape(b.matmul(x, np.ones((4, 16), np.float32), transpose_a=True, transpose_b=True)) == [16, 4]


@requires_ops("MatMul")
def test_shape_errors_raise_at_construction_naming_the_node():
    b = GraphBuilder()
    x = b.placeholder("float32", [None, 16], name="x")
    with b.name_scope("dense"):
        expected = r"node 'dense/MatMul' \(MatMul\) with input shapes \[\[\?,16\], \[8,4\]\]"
        with pytest.raises(GraphBuildError, match=expected):
            b.matmul(x, np.ones((8, 4), np.float32))
    assert "dense/MatMul" not in b.graph
    b.graph.verify()  # the failed node left nothing dangling


def test_existing_graph_can_be_extended():
    graph_def = graph_io.load_graphdef(str(SAMPLES_DIR / "multi_device.pb"))
    b = GraphBuilder(from_graphdef(graph_def))
    y = b.graph.tensor("y")
    assert b.shape(y) == [None, 8]
    z = b.identity(y, name="z")
    assert b.shape(z) == [None, 8]
    b.graph.verify()


# --- scopes -----------------------------------------------------------------------------------

def test_name_scopes_nest_and_stay_unique():
    b = GraphBuilder()
    with b.name_scope("outer") as outer:
        assert outer == "outer/"
        with b.name_scope("inner") as inner:
            assert b.const(1).name == "outer/inner/Const" and inner == "outer/inner/"
            assert b.const(1).name == "outer/inner/Const_1"
            with b.name_scope(None):
                assert b.const(1).name == "Const"
        with b.name_scope("inner") as again:
            assert again == "outer/inner_1/"
        with b.name_scope("outer/inner/"):
            assert b.const(1, name="x").name == "outer/inner/x"
    assert b.const(1, name="outer").name == "outer_1"  # a scope name is taken, as in TensorFlow
    assert b.const(1, name="x").name == "x"


def test_devices_merge_and_clear():
    b = GraphBuilder()
    with b.device("/job:localhost/replica:0/task:0"):
        with b.device("/cpu:1"):
            assert b.const(1).node.device == "/job:localhost/replica:0/task:0/device:CPU:1"
            with b.device(None):
                assert b.const(1).node.device == ""
        with b.device(""):
            assert b.const(1).node.device == "/job:localhost/replica:0/task:0"
    assert b.const(1).node.device == ""


def test_control_dependencies_accumulate_and_reset():
    b = GraphBuilder()
    first, second = b.no_op("first"), b.const(0, name="second")
    with b.control_dependencies([first]):
        with b.control_dependencies([second]):
            node = b.const(1).node
            assert [c.name for c in node.control_inputs] == ["first", "second"]
            assert b.identity(second).node.control_inputs == (first,)
            with b.control_dependencies(None):
                assert b.const(1).node.control_inputs == ()


@requires_ops("Less", "AddV2")
def test_outside_control_dependency_enters_a_loop_through_an_identity():
    b = GraphBuilder()
    init = b.const(0.0, name="init")
    with b.control_dependencies([init]):
        b.while_loop(lambda i: b.less(i, 3), lambda i: b.add(i, 1), 0)
    add = b.graph.node("while/AddV2")
    (gate,) = add.control_inputs
    assert gate.op == "Identity" and gate.inputs[0].node.op == "Enter"
    assert gate.inputs[0].node.inputs[0].node is init.node
    b.graph.verify()
    with b.control_dependencies([b.no_op("done")]):
        with pytest.raises(GraphBuildError, match="without outputs cannot enter a loop"):
            b.while_loop(lambda i: b.less(i, 3), lambda i: b.add(i, 1), 0)


# --- control flow -----------------------------------------------------------------------------

@requires_ops("Less", "Mul", "AddV2", "Cast")
def test_while_loop_frames():
    b = GraphBuilder()
    x = b.placeholder("float32", [3], name="x")
    k, acc = b.while_loop(lambda k, acc: b.less(k, 5),
                          lambda k, acc: (b.add(k, 1), b.add(acc, b.mul(x, b.cast(k, "float32")))),
                          (0, b.zeros([3])), parallel_iterations=4, name="acc")
    out = b.identity(acc, name="out")
    b.graph.verify()
    frames = b.graph.frames()
    loop = frames.frames["acc/while_context"]
    assert frames.frame_of[b.graph.node("acc/Mul")] is loop
    assert frames.frame_of[b.graph.node("acc/Mul/Enter")] is frames.root  # Enter sits outside
    assert b.graph.node("acc/Mul/Enter").attr("is_constant") is True
    assert frames.output_frame(acc.node) is frames.root and frames.frame_of[out.node] is frames.root
    assert loop.parallel_iterations == 4
    assert b.shape(acc) == [3] and b.dtype(k) is dtypes.int32


@requires_ops("Less", "ConcatV2")
def test_loop_shapes_must_hold_unless_relaxed():
    b = GraphBuilder()
    grow = lambda i, v: (b.add(i, 1), b.concat([v, v], 0))  # noqa: E731
    with pytest.raises(GraphBuildError, match=r"var 1 enters the loop with shape \[1\], but has shape \[2\]"):
        b.while_loop(lambda i, v: b.less(i, 3), grow, [0, b.const([1.0])])
    b = GraphBuilder()
    i, v = b.while_loop(lambda i, v: b.less(i, 3), grow, [0, b.const([1.0])], shape_invariants=[[], [None]])
    assert b.shape(v) == [None] and b.shape(i) == []
    b.graph.verify()


@requires_ops("Less", "ConcatV2")
def test_whole_graph_inference_relaxes_a_growing_loop_var():
    b = GraphBuilder()
    grow = lambda i, v: (b.add(i, 1), b.concat([v, v], 0))  # noqa: E731
    _, v = b.while_loop(lambda i, v: b.less(i, 3), grow, [0, b.const([1.0])], shape_invariants=[[], [None]])
    assert infer_shapes(b.graph, strict=True).shape(v) == [None]


@requires_ops("Less", "AddV2")
def test_control_flow_misuse_is_reported():
    b = GraphBuilder()
    x = b.placeholder("float32", [3], name="x")
    inner = []
    b.while_loop(lambda i: b.less(i, 3), lambda i: inner.append(b.identity(x)) or b.add(i, 1), 0)
    with pytest.raises(GraphBuildError, match="made inside while loop 'while'"):
        b.identity(inner[0])
    with pytest.raises(GraphBuildError, match="must be a bool scalar"):
        b.cond(x, lambda: x, lambda: x)
    p = b.placeholder("bool", [], name="p")
    with pytest.raises(GraphBuildError, match="true_fn gives float32, false_fn gives int32"):
        b.cond(p, lambda: x, lambda: b.const([1, 2, 3]))
    with pytest.raises(GraphBuildError, match="body returns one tensor, the loop vars are a list of 2"):
        b.while_loop(lambda i, j: b.less(i, 3), lambda i, j: i, [0, 0])


@requires_ops("Less", "AddV2", "TensorArrayV3", "Range", "Shape", "StridedSlice", "Tanh")
def test_tensor_arrays_in_a_loop():
    b = GraphBuilder()
    x = b.placeholder("float32", [None, 3], name="x")
    inputs = b.tensor_array("float32", 4).unstack(x)
    assert isinstance(inputs, TensorArray) and inputs.element_shape == [3]
    out = b.tensor_array("float32", 4)
    t, out = b.while_loop(lambda t, o: b.less(t, 4),
                          lambda t, o: (b.add(t, 1), o.write(t, b.tanh(inputs.read(t)))), [0, out])
    stacked = out.stack()
    assert b.shape(stacked) == [4, 3] and b.dtype(stacked) is dtypes.float32
    assert b.graph.node("while/TensorArrayReadV3/Enter").attr("T") is dtypes.resource
    b.graph.verify()
    result = infer_shapes(b.graph)
    assert not result.errors
    with pytest.raises(GraphBuildError, match="holds float32"):
        out.write(0, b.const([1, 2, 3]))


# --- the sample graphs ------------------------------------------------------------------------

def _load_make_samples():
    spec = importlib.util.spec_from_file_location("make_samples", SAMPLES_DIR / "make_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def make_samples():
    return _load_make_samples()


def test_sample_list_is_complete(make_samples):
    assert list(make_samples.SAMPLES) == ["mlp", "convnet", "cond", "while_loop", "rnn", "multi_device",
                                         "model_parallel_rnn", "pipeline", "train_loop"]
    readme = (SAMPLES_DIR / "README.md").read_text()
    for name in make_samples.SAMPLES:
        assert f"dftool inspect sample_graphs/{name}.pb" in readme


@pytest.mark.parametrize("name", ["mlp", "convnet", "cond", "while_loop", "rnn", "multi_device",
                                  "model_parallel_rnn", "pipeline", "train_loop"])
def test_committed_samples_are_up_to_date(make_samples, name, tmp_path):
    missing = [op for op in _ops_of(SAMPLES_DIR / f"{name}.pb") if registry.lookup(op) is None]
    if missing:
        pytest.skip(f"ops not registered yet: {', '.join(missing)}")
    make_samples.write(name, tmp_path)
    for suffix in (".pb", ".feeds.npz"):
        fresh, committed = tmp_path / f"{name}{suffix}", SAMPLES_DIR / f"{name}{suffix}"
        if suffix == ".pb":
            assert graph_io.load_graphdef(str(fresh)) == graph_io.load_graphdef(str(committed)), \
                f"{committed.name} is stale: run python sample_graphs/make_samples.py"
        assert fresh.read_bytes() == committed.read_bytes()
        assert committed.stat().st_size < 200_000


def _ops_of(path: Path) -> set[str]:
    return {node.op for node in graph_io.load_graphdef(str(path)).node}


@pytest.mark.parametrize("name", ["mlp", "convnet", "cond", "while_loop", "rnn", "multi_device",
                                  "model_parallel_rnn", "pipeline", "train_loop"])
def test_committed_samples_verify_and_infer(name):
    graph = from_graphdef(graph_io.load_graphdef(str(SAMPLES_DIR / f"{name}.pb")), name)
    result = infer_shapes(graph)
    assert not result.errors
    with np.load(SAMPLES_DIR / f"{name}.feeds.npz") as feeds:
        for key in feeds.files:
            ref = graph.tensor(key)
            assert graph.node(key).op == "Placeholder"
            assert result.shape(ref).is_compatible_with(feeds[key].shape)
            assert result.dtype(ref).numpy == feeds[key].dtype


def test_multi_device_sample_crosses_devices():
    graph = from_graphdef(graph_io.load_graphdef(str(SAMPLES_DIR / "multi_device.pb")))
    devices = {node.device for node in graph}
    assert devices == {f"/job:localhost/replica:0/task:0/device:CPU:{k}" for k in (0, 1)}
    crossing = [(n, r) for n in graph for r in n.inputs if r.node.device != n.device]
    assert len(crossing) >= 2
