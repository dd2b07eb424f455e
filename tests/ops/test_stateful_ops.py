"""Stateful op families (tensor_array, state, send_recv): shapes and dtypes on tiny graphs, the
side-effect flags TensorFlow declares, and signature checks on well-formed nodes.

Expected shapes are what TensorFlow 2.21's shape functions give for the same inputs (checked with
tf.compat.v1 graphs), except where a module's docstring says why we differ.
"""
import numpy as np
import pytest

from graphtool import dtypes
from graphtool.errors import InvalidGraphError
from graphtool.ir import Graph
from graphtool.ops import FAMILIES, registry
from graphtool.shape_inference import infer_shapes
from graphtool.shapes import Shape

F32, I32, I64 = dtypes.float32, dtypes.int32, dtypes.int64
STATEFUL_FAMILIES = ("tensor_array", "state", "send_recv", "collective")


# --- builders ---------------------------------------------------------------------------------

def placeholder(g, name, dtype=F32, shape=None):
    attrs = {"dtype": dtype}
    if shape is not None:
        attrs["shape"] = Shape.of(shape)
    return g.add_node("Placeholder", name, attrs=attrs).output()


def const(g, name, value, dtype=I32):
    return g.add_node("Const", name, attrs={"value": np.asarray(value, dtype.numpy), "dtype": dtype}).output()


def infer(g):
    """(dtype, shape) of every output of every node, inferred strictly."""
    result = infer_shapes(g, strict=True)
    return lambda node, i=0: (result.dtype(node.output(i)), result.shape(node.output(i)))


def tensor_array(g, element_shape=None, name="ta"):
    attrs = {"dtype": F32}
    if element_shape is not None:
        attrs["element_shape"] = Shape.of(element_shape)
    return g.add_node("TensorArrayV3", name, inputs=[const(g, f"{name}/size", 4)], attrs=attrs)


def fails_inference(g):
    with pytest.raises(InvalidGraphError):
        infer_shapes(g, strict=True)


# --- TensorArray ------------------------------------------------------------------------------

def test_tensor_array_ops_shapes_and_dtypes():
    g = Graph()
    ta = tensor_array(g, [3])
    handle, flow = ta.output(0), ta.output(1)
    index = const(g, "index", 0)
    write = g.add_node("TensorArrayWriteV3", "write",
                       inputs=[handle, index, placeholder(g, "x", shape=[3]), flow], attrs={"T": F32})
    read = g.add_node("TensorArrayReadV3", "read", inputs=[handle, index, write.output()],
                      attrs={"dtype": F32})
    gather = g.add_node("TensorArrayGatherV3", "gather",
                        inputs=[handle, placeholder(g, "idx", I32, [None]), flow],
                        attrs={"dtype": F32, "element_shape": Shape([3])})
    gather_two = g.add_node("TensorArrayGatherV3", "gather_two",
                            inputs=[handle, const(g, "two", [0, 1]), flow],
                            attrs={"dtype": F32, "element_shape": Shape([None, 5])})
    gather_any = g.add_node("TensorArrayGatherV3", "gather_any",
                            inputs=[handle, const(g, "one", [0]), flow], attrs={"dtype": F32})
    concat = g.add_node("TensorArrayConcatV3", "concat", inputs=[handle, flow],
                        attrs={"dtype": F32, "element_shape_except0": Shape([3])})
    size = g.add_node("TensorArraySizeV3", "size", inputs=[handle, flow])
    grad = g.add_node("TensorArrayGradV3", "grad", inputs=[handle, flow], attrs={"source": "gradients"})
    info = infer(g)

    assert info(ta, 0) == (dtypes.resource, Shape([2]))
    assert info(ta, 1) == (F32, Shape.scalar())
    assert info(write) == (F32, Shape.scalar())
    # The element shape travels with the handle (HandleData), as TensorFlow's handle shape data does.
    assert info(read) == (F32, Shape([3]))
    assert info(gather) == (F32, Shape([None, 3]))
    assert info(gather_two) == (F32, Shape([2, None, 5]))
    assert info(gather_any) == (F32, Shape([1, 3]))
    assert info(concat, 0) == (F32, Shape([None, 3]))
    assert info(concat, 1) == (I64, Shape([None]))
    assert info(size) == (I32, Shape.scalar())
    assert info(grad, 0) == (dtypes.resource, Shape([2])) and info(grad, 1) == (F32, Shape.scalar())


def test_tensor_array_scatter_split_close_and_unknown_inputs():
    g = Graph()
    handle = placeholder(g, "handle", dtypes.resource)  # unknown rank: accepted, like TensorFlow
    flow = placeholder(g, "flow")
    scatter = g.add_node("TensorArrayScatterV3", "scatter",
                         inputs=[handle, const(g, "idx", [0, 1]), placeholder(g, "v"), flow],
                         attrs={"T": F32})
    split = g.add_node("TensorArraySplitV3", "split",
                       inputs=[handle, placeholder(g, "w"), placeholder(g, "len", I64), flow],
                       attrs={"T": F32})
    prepend = g.add_node("TensorArrayGradWithShape", "grad",
                         inputs=[handle, flow, const(g, "prepend", [2])], attrs={"source": "s"})
    close = g.add_node("TensorArrayCloseV3", "close", inputs=[handle])
    info = infer(g)
    assert info(scatter) == (F32, Shape.scalar()) and info(split) == (F32, Shape.scalar())
    assert info(prepend, 0) == (dtypes.resource, Shape([2]))
    assert close.num_outputs == 0


@pytest.mark.parametrize("op, make_inputs, attrs", [
    # A handle must be a vector of two elements.
    ("TensorArrayReadV3", lambda g: [placeholder(g, "h", dtypes.resource, [3]), const(g, "i", 0),
                                     placeholder(g, "f", shape=[])], {"dtype": F32}),
    # Gather indices must be a vector.
    ("TensorArrayGatherV3", lambda g: [placeholder(g, "h", dtypes.resource, [2]), const(g, "i", 0),
                                       placeholder(g, "f", shape=[])], {"dtype": F32}),
    # Scatter: value's rows must match the number of indices.
    ("TensorArrayScatterV3", lambda g: [placeholder(g, "h", dtypes.resource, [2]), const(g, "i", [0, 1]),
                                        placeholder(g, "v", shape=[3, 2]), placeholder(g, "f", shape=[])],
     {"T": F32}),
    # Flows are scalars.
    ("TensorArrayWriteV3", lambda g: [placeholder(g, "h", dtypes.resource, [2]), const(g, "i", 0),
                                      placeholder(g, "v"), placeholder(g, "f", shape=[1])], {"T": F32}),
    ("TensorArrayV3", lambda g: [const(g, "size", [4])], {"dtype": F32}),
    ("StackCloseV2", lambda g: [placeholder(g, "h", dtypes.resource, [])], {}),
])
def test_tensor_array_shape_errors(op, make_inputs, attrs):
    g = Graph()
    g.add_node(op, "bad", inputs=make_inputs(g), attrs=attrs)
    fails_inference(g)


def test_stack_ops():
    g = Graph()
    stack = g.add_node("StackV2", "stack", inputs=[const(g, "max", -1)], attrs={"elem_type": F32})
    push = g.add_node("StackPushV2", "push", inputs=[stack.output(), placeholder(g, "x", shape=[2, 3])],
                      attrs={"T": F32})
    pop = g.add_node("StackPopV2", "pop", inputs=[stack.output()], control_inputs=[push],
                     attrs={"elem_type": I32})
    g.add_node("StackCloseV2", "close", inputs=[stack.output()], control_inputs=[pop])
    info = infer(g)
    assert info(stack) == (dtypes.resource, Shape([2]))
    assert info(push) == (F32, Shape([2, 3]))
    assert info(pop) == (I32, Shape([2, 3]))  # the pushed element's shape, via handle data


# --- variables --------------------------------------------------------------------------------

def test_ref_variables_and_assign():
    g = Graph()
    var = g.add_node("VariableV2", "var", attrs={"shape": Shape([None, 3]), "dtype": F32})
    legacy = g.add_node("Variable", "legacy", attrs={"shape": Shape([]), "dtype": F32})
    value = placeholder(g, "value", shape=[2, None])
    assign = g.add_node("Assign", "assign", inputs=[var.output(), value], attrs={"T": F32})
    loose = g.add_node("Assign", "loose", inputs=[var.output(), value],
                       attrs={"T": F32, "validate_shape": False})
    add = g.add_node("AssignAdd", "add", inputs=[var.output(), value], attrs={"T": F32})
    initialized = g.add_node("IsVariableInitialized", "init", inputs=[var.output()], attrs={"dtype": F32})
    info = infer(g)
    assert info(var) == (F32.ref, Shape([None, 3]))
    assert info(legacy) == (F32.ref, Shape.unknown())  # v1 Variable: rank 0 means "unknown"
    assert info(assign) == (F32.ref, Shape([2, 3]))
    assert info(loose) == (F32.ref, Shape([2, None]))
    assert info(add) == (F32.ref, Shape([2, 3]))
    assert info(initialized) == (dtypes.bool_, Shape.scalar())


@pytest.mark.parametrize("op", ["Assign", "AssignSub"])
def test_assign_rejects_a_value_of_another_shape(op):
    g = Graph()
    var = g.add_node("VariableV2", "var", attrs={"shape": Shape([4]), "dtype": F32})
    g.add_node(op, "assign", inputs=[var.output(), placeholder(g, "v", shape=[3])], attrs={"T": F32})
    fails_inference(g)


def test_resource_variables():
    g = Graph()
    handle = g.add_node("VarHandleOp", "v", attrs={"dtype": F32, "shape": Shape([2, 3])})
    read = g.add_node("ReadVariableOp", "read", inputs=[handle.output()], attrs={"dtype": F32})
    assign = g.add_node("AssignVariableOp", "assign",
                        inputs=[handle.output(), placeholder(g, "x", shape=[2, 3])], attrs={"dtype": F32})
    initialized = g.add_node("VarIsInitializedOp", "init", inputs=[handle.output()])
    info = infer(g)
    assert info(handle) == (dtypes.resource, Shape.scalar())
    assert info(read) == (F32, Shape([2, 3]))  # the variable's shape, via handle data
    assert assign.num_outputs == 0
    assert info(initialized) == (dtypes.bool_, Shape.scalar())


# --- random -----------------------------------------------------------------------------------

def test_random_ops_take_their_shape_from_the_shape_input():
    g = Graph()
    shape = const(g, "shape", [2, 5])
    uniform = g.add_node("RandomUniform", "uniform", inputs=[shape], attrs={"dtype": F32, "T": I32})
    normal = g.add_node("TruncatedNormal", "normal", inputs=[placeholder(g, "s", I32, [3])],
                        attrs={"dtype": dtypes.float64, "T": I32})
    ints = g.add_node("RandomUniformInt", "ints", inputs=[shape, const(g, "lo", 0), const(g, "hi", 9)],
                      attrs={"Tout": I32, "T": I32})
    stateless = g.add_node("StatelessRandomNormal", "stateless",
                           inputs=[shape, placeholder(g, "seed", I64, [2])])
    samples = g.add_node("Multinomial", "samples",
                         inputs=[placeholder(g, "logits", shape=[3, 5]), const(g, "n", 7)], attrs={"T": F32})
    info = infer(g)
    assert info(uniform) == (F32, Shape([2, 5]))
    assert info(normal) == (dtypes.float64, Shape([None, None, None]))
    assert info(ints) == (I32, Shape([2, 5]))
    assert info(stateless) == (F32, Shape([2, 5]))
    assert info(samples) == (I64, Shape([3, 7]))


@pytest.mark.parametrize("op, make_inputs, attrs", [
    ("RandomUniform", lambda g: [const(g, "s", 3)], {"dtype": F32, "T": I32}),  # shape must be 1-D
    ("RandomUniformInt", lambda g: [const(g, "s", [2]), const(g, "lo", [0]), const(g, "hi", 9)],
     {"Tout": I32, "T": I32}),
    ("StatelessRandomUniform", lambda g: [const(g, "s", [2]), placeholder(g, "seed", I64, [3])], {}),
    ("Multinomial", lambda g: [placeholder(g, "logits", shape=[5]), const(g, "n", 7)], {"T": F32}),
])
def test_random_shape_errors(op, make_inputs, attrs):
    g = Graph()
    g.add_node(op, "bad", inputs=make_inputs(g), attrs=attrs)
    fails_inference(g)


# --- send / recv and collectives --------------------------------------------------------------

TRANSFER = {"tensor_name": "edge_1_x", "send_device": "/job:a/task:0/device:CPU:0",
            "send_device_incarnation": 1, "recv_device": "/job:a/task:0/device:GPU:0"}
GROUP = {"group_size": 2, "group_key": 1, "instance_key": 7}


def test_send_recv_and_collectives():
    g = Graph()
    x = placeholder(g, "x", shape=[2, None])
    send = g.add_node("_Send", "send", inputs=[x], attrs={"T": F32, **TRANSFER})
    recv = g.add_node("_HostRecv", "recv", attrs={"tensor_type": I32, **TRANSFER})
    hinted = g.add_node("_Recv", "hinted", attrs={"tensor_type": F32, **TRANSFER})
    hinted.set_attr("_output_shapes", [Shape([2, 4])], kind="list(shape)")
    reduce = g.add_node("CollectiveReduce", "reduce", inputs=[x],
                        attrs={"T": F32, **GROUP, "merge_op": "Add", "final_op": "Id", "subdiv_offsets": [0]})
    bcast = g.add_node("CollectiveBcastRecv", "bcast", attrs={"T": F32, **GROUP, "shape": Shape([4, 4])})
    info = infer(g)
    assert send.num_outputs == 0
    assert info(recv) == (I32, Shape.unknown())
    assert info(hinted) == (F32, Shape([2, 4]))
    assert info(reduce) == (F32, Shape([2, None]))
    assert info(bcast) == (F32, Shape([4, 4]))


# --- flags and signatures ---------------------------------------------------------------------

# Straight from TensorFlow's OpDefs (is_stateful) and kernels (AsyncOpKernel).
NOT_STATEFUL = {"Assign", "AssignAdd", "AssignSub", "IsVariableInitialized", "CountUpTo",
                "StatelessRandomUniform", "StatelessRandomNormal",
                *(f"Scatter{kind}" for kind in ("Add", "Sub", "Mul", "Div", "Min", "Max", "Update")),
                *(f"ScatterNd{kind}" for kind in ("Add", "Sub", "Min", "Max", "Update"))}
ASYNC = {"_Recv", "_HostRecv", "CollectiveReduce", "CollectiveGather", "CollectiveBcastSend", "CollectiveBcastRecv",
         "CollectiveReduceV2", "CollectiveReduceScatterV2", "CollectiveGatherV2", "CollectiveAllToAllV2",
         "CollectiveBcastSendV2", "CollectiveBcastRecvV2"}
FAMILY_OPS = sorted(name for name, spec in registry.all_ops().items() if spec.family in STATEFUL_FAMILIES)


def test_families_register_the_expected_ops():
    expected = """TensorArrayV3 TensorArrayReadV3 TensorArrayWriteV3 TensorArrayGatherV3
        TensorArrayScatterV3 TensorArraySizeV3 TensorArrayCloseV3 TensorArrayConcatV3 TensorArraySplitV3
        TensorArrayGradV3 TensorArrayGradWithShape StackV2 StackPushV2 StackPopV2 StackCloseV2
        VariableV2 Variable Assign AssignAdd AssignSub VarHandleOp ReadVariableOp AssignVariableOp
        AssignAddVariableOp AssignSubVariableOp VarIsInitializedOp ResourceGather IsVariableInitialized RandomUniform
        RandomUniformInt RandomStandardNormal TruncatedNormal Multinomial StatelessRandomUniform
        StatelessRandomNormal _Send _Recv _HostSend _HostRecv CollectiveReduce CollectiveGather
        CollectiveBcastSend CollectiveBcastRecv CollectiveReduceV2 CollectiveReduceScatterV2
        CollectiveGatherV2 CollectiveAllToAllV2 CollectiveBcastSendV2 CollectiveBcastRecvV2 ResourceScatterAdd ResourceScatterSub ResourceScatterMul ResourceScatterDiv
        ResourceScatterMin ResourceScatterMax ResourceScatterUpdate ResourceScatterNdUpdate
        ResourceScatterNdAdd ResourceScatterNdSub ResourceScatterNdMin ResourceScatterNdMax
        DestroyResourceOp ScatterAdd ScatterSub ScatterMul ScatterDiv ScatterMin ScatterMax ScatterUpdate
        ScatterNdAdd ScatterNdSub ScatterNdMin ScatterNdMax ScatterNdUpdate CountUpTo ResourceCountUpTo
        RandomShuffle""".split()
    assert sorted(expected) == FAMILY_OPS


@pytest.mark.parametrize("op", FAMILY_OPS)
def test_flags_match_tensorflow(op):
    spec = registry.get(op)
    assert spec.stateful == (op not in NOT_STATEFUL)
    assert spec.is_async == (op in ASYNC)
    assert not spec.control_flow and not spec.commutative


def _sample_attr(attr):
    """A valid value for a required attr of the given spec."""
    if attr.allowed_strings:
        return attr.allowed_strings[0]
    if attr.kind == "type":
        return attr.allowed[0] if attr.allowed else F32
    samples = {"string": "x", "int": 1, "float": 1.0, "bool": True, "shape": Shape([2]),
               "list(int)": [0], "list(string)": ["x"]}
    return samples[attr.kind]


def well_formed(g, op):
    """A node of `op` with every required attr set and the right number of inputs (placeholders
    of unknown shape, so inference meets fully unknown inputs)."""
    spec = registry.get(op)
    attrs = {a.name: _sample_attr(a) for a in spec.attrs.values() if not a.has_default}
    node = g.add_node(op, "node", attrs=attrs)
    for i in range(spec.num_inputs(node)):
        node.add_input(placeholder(g, f"in{i}"))
    return node


@pytest.mark.parametrize("op", FAMILY_OPS)
def test_well_formed_node_passes_check_node_and_inference(op):
    g = Graph()
    node = well_formed(g, op)
    assert registry.get(op).check_node(node) == []
    result = infer_shapes(g)
    assert result.errors == {}, result.errors
    assert len(result.outputs(node)) == node.num_outputs


@pytest.mark.parametrize("op", FAMILY_OPS)
def test_check_node_reports_a_wrong_input_count(op):
    g = Graph()
    node = well_formed(g, op)
    expected = registry.get(op).num_inputs(node)
    node.add_input(placeholder(g, "extra"))
    assert registry.get(op).check_node(node) == [f"expects {expected} data input(s), has {expected + 1}"]


def test_families_are_the_modules():
    for family in STATEFUL_FAMILIES:
        assert family in FAMILIES


def test_element_shape_is_learned_from_writes_through_forwarding_ops():
    """A TensorArray created without element_shape learns it from a scatter; a read reached
    through Identity (as inside a loop body, via Enter) reports it."""
    g = Graph()
    ta = tensor_array(g, None)
    handle, flow = ta.output(0), ta.output(1)
    scatter = g.add_node("TensorArrayScatterV3", "scatter",
                         inputs=[handle, const(g, "idx", [0, 1]), placeholder(g, "v", shape=[2, 4, 5]), flow],
                         attrs={"T": F32})
    forwarded = g.add_node("Identity", "fwd", inputs=[handle], attrs={"T": dtypes.resource})
    read = g.add_node("TensorArrayReadV3", "read", inputs=[forwarded.output(), const(g, "i", 0), scatter.output()],
                      attrs={"dtype": F32})
    stack = g.add_node("StackV2", "stack", inputs=[const(g, "max", -1)], attrs={"elem_type": F32})
    push = g.add_node("StackPushV2", "push", inputs=[stack.output(), read.output()], attrs={"T": F32})
    pop = g.add_node("StackPopV2", "pop", inputs=[stack.output()], control_inputs=[push],
                     attrs={"elem_type": F32})
    info = infer(g)
    assert info(read) == (F32, Shape([4, 5]))
    assert info(pop) == (F32, Shape([4, 5]))
