"""Hand-built FunctionDefs: instantiation (arg/out-arg spelling, attr placeholders, ret and
control_ret), the lowered forms of calls, If, Case, While and SymbolicGradient checked against
numpy, the names that survive lowering, and one-line errors for malformed bodies."""
from __future__ import annotations

import numpy as np
import pytest

from graphtool import dtypes, graph_io
from graphtool.errors import InvalidGraphError, RuntimeFailure
from graphtool.exec.session import Session
from graphtool.functions import FUNCTIONAL_OPS, instantiate
from graphtool.functions.lowering import lower_functional_ops
from graphtool.ir import from_graphdef, to_graphdef
from graphtool.ops import registry
from graphtool.proto.attr_value_pb2 import AttrValue, NameAttrList
from graphtool.proto.function_pb2 import FunctionDef
from graphtool.shape_inference import infer_shapes
from graphtool.shapes import Shape

from .helpers import const_def, error_line, graph_def, node_def, run_dftool

F32, I32 = dtypes.float32, dtypes.int32


def func(name, **attrs) -> NameAttrList:
    value = NameAttrList(name=name)
    for key, item in attrs.items():
        value.attr[key].CopyFrom(item if isinstance(item, AttrValue) else AttrValue(type=item.enum))
    return value


def placeholder(name: str) -> AttrValue:
    return AttrValue(placeholder=name)


def fdef(name, inputs, outputs, nodes, ret, *, type_attrs=(), control_ret=None, stateful=False) -> FunctionDef:
    """inputs/outputs: [(arg name, DType or the name of a type attr)]."""
    result = FunctionDef()
    sig = result.signature
    sig.name = name
    sig.is_stateful = stateful
    for attr in type_attrs:
        sig.attr.add(name=attr, type="type")
    for args, target in ((inputs, sig.input_arg), (outputs, sig.output_arg)):
        for arg_name, dtype in args:
            arg = target.add(name=arg_name)
            if isinstance(dtype, str):
                arg.type_attr = dtype
            else:
                arg.type = dtype.enum
    result.node_def.extend(nodes)
    for key, value in ret.items():
        result.ret[key] = value
    for key, value in (control_ret or {}).items():
        sig.control_output.append(key)
        result.control_ret[key] = value
    return result


def with_library(gdef, *functions):
    gdef.library.function.extend(functions)
    return gdef


def call(name, f, inputs, tin, tout, op="PartitionedCall", **kw):
    return node_def(name, op, inputs, f=f, Tin=AttrValue(list=AttrValue.ListValue(type=[t.enum for t in tin])),
                    Tout=AttrValue(list=AttrValue.ListValue(type=[t.enum for t in tout])), **kw)


def types(*ts):
    return AttrValue(list=AttrValue.ListValue(type=[t.enum for t in ts]))


def run(gdef, fetches, feeds=None, **kw):
    return Session(from_graphdef(gdef), threads=2).run(fetches, feeds or {}, **kw).values


# A generic function: y = x * x + x, for any T (an attr placeholder).
SQUARE_PLUS = fdef("SquarePlus", [("x", "T")], [("y", "T")],
                   [node_def("sq", "Mul", ["x", "x"], T=placeholder("T")),
                    node_def("sum", "AddV2", ["sq:z:0", "x"], T=placeholder("T"))],
                   {"y": "sum:z:0"}, type_attrs=["T"])


def test_registry_signatures_and_flags_follow_tensorflow():
    w = registry.get("While")
    assert [a.name for a in w.inputs] == ["input"] and w.attrs["parallel_iterations"].default == 10
    assert w.attrs["output_shapes"].default == [] and w.attrs["T"].kind == "list(type)"
    assert registry.get("Case").attrs["branches"].kind == "list(func)"
    assert registry.get("If").attrs["Tcond"].kind == "type"
    stateful = {op: registry.get(op).stateful for op in FUNCTIONAL_OPS}
    assert stateful == {"If": True, "While": True, "Case": True, "StatefulPartitionedCall": True,
                        "StatelessIf": False, "StatelessWhile": False, "StatelessCase": False,
                        "PartitionedCall": False, "SymbolicGradient": False}


@pytest.mark.parametrize("dtype, value", [(F32, np.array([1.5, -2.0], np.float32)),
                                          (I32, np.array([3, -4], np.int32))])
def test_attr_placeholders_come_from_the_caller(dtype, value):
    gdef = with_library(graph_def(node_def("x", "Placeholder", dtype=dtype),
                                  call("c", func("SquarePlus", T=dtype), ["x"], [dtype], [dtype])), SQUARE_PLUS)
    (out,) = run(gdef, ["c:0"], {"x": value})
    np.testing.assert_array_equal(out, value * value + value)
    assert out.dtype == dtype.numpy


def test_instantiate_maps_out_arg_names_to_ports():
    # Unpack's output arg `output` is a list: `u:output:1` is its second tensor.
    body_def = fdef("Second", [("v", F32)], [("r", F32)],
                    [node_def("u", "Unpack", ["v"], T=F32, num=3, axis=0)], {"r": "u:output:1"})
    gdef = with_library(graph_def(), body_def)
    body = instantiate(gdef.library, "Second")
    assert [a.name for a in body.args] == ["v"]
    assert body.retvals[0].inputs[0].node.name == "u" and body.retvals[0].inputs[0].index == 1
    full = with_library(graph_def(node_def("x", "Placeholder", dtype=F32),
                                  call("c", func("Second"), ["x"], [F32], [F32])), body_def)
    np.testing.assert_array_equal(run(full, ["c"], {"x": np.array([4.0, 5.0, 6.0], np.float32)})[0], 5.0)


def _graph_with_body(nodes, ret, inputs=(("v", F32),)):
    body_def = fdef("Broken", list(inputs), [("r", F32)], nodes, ret)
    return with_library(graph_def(node_def("x", "Placeholder", dtype=F32),
                                  call("c", func("Broken"), ["x"], [F32], [F32])), body_def)


@pytest.mark.parametrize("nodes, ret, message", [
    ([node_def("n", "Neg", ["missing:y:0"], T=F32)], {"r": "n:y:0"},
     "function 'Broken' (called by 'c'): node 'n': input 'missing:y:0' names no node or input arg"),
    ([node_def("n", "Neg", ["v"], T=F32)], {"r": "n:z:0"},
     "function 'Broken' (called by 'c'): ret 'r': input 'n:z:0': node 'n' (Neg) has no output arg 'z'"),
    # An op dftool does not know is opaque (read through one output arg it lowers; run names it),
    # but read through two output args their order is unknown.
    ([node_def("n", "NoSuchOp", ["v"]), node_def("m", "Neg", ["n:y:0"], T=F32)], {"r": "n:z:0"},
     "node 'n' uses op 'NoSuchOp', which dftool does not know, through output args y, z whose order"),
    ([node_def("n", "Neg", ["v"], T=F32)], {}, "function 'Broken' (called by 'c'): output 'r' has no entry in ret"),
])
def test_malformed_bodies_are_one_line_errors_naming_function_and_node(tmp_path, nodes, ret, message):
    gdef = _graph_with_body(nodes, ret)
    with pytest.raises(InvalidGraphError, match=message.replace("(", r"\(").replace(")", r"\)")):
        lower_functional_ops(from_graphdef(gdef))
    path = tmp_path / "g.pb"
    graph_io.save_graphdef(gdef, str(path))
    feed = tmp_path / "x.npy"
    np.save(feed, np.ones(1, np.float32))
    code, _, err = run_dftool("run", path, "--feed", f"x={feed}")
    assert code == 3 and message in error_line(err)


def test_unknown_op_in_a_body_is_inlined_opaque_and_named_by_run(tmp_path):
    # The body reads the unknown op's output as `n:y:0`: its layout is one output, so lowering
    # inlines it as an opaque node; only executing it fails, naming the op.
    gdef = _graph_with_body([node_def("n", "NoSuchOp", ["v"])], {"r": "n:y:0"})
    graph = from_graphdef(gdef)
    lower_functional_ops(graph)
    assert [node.op for node in graph.nodes if node.op == "NoSuchOp"] == ["NoSuchOp"]
    path = tmp_path / "g.pb"
    graph_io.save_graphdef(gdef, str(path))
    feed = tmp_path / "x.npy"
    np.save(feed, np.ones(1, np.float32))
    code, _, err = run_dftool("run", "-q", path, "--feed", f"x={feed}")
    assert code == 3 and "NoSuchOp (1 node: 'c/n')" in error_line(err)


def test_missing_function_is_named(tmp_path):
    gdef = graph_def(node_def("x", "Placeholder", dtype=F32), call("c", func("Nowhere"), ["x"], [F32], [F32]))
    path = tmp_path / "g.pb"
    graph_io.save_graphdef(gdef, str(path))
    code, _, err = run_dftool("place", path, tmp_path / "out.pb")
    assert code == 3
    assert "node 'c': function 'Nowhere' is not in the graph's function library" in error_line(err)


def test_recursive_function_is_refused():
    loop = fdef("Forever", [("v", F32)], [("r", F32)], [call("again", func("Forever"), ["v"], [F32], [F32])],
                {"r": "again:output:0"})
    gdef = with_library(graph_def(node_def("x", "Placeholder", dtype=F32),
                                  call("c", func("Forever"), ["x"], [F32], [F32])), loop)
    with pytest.raises(InvalidGraphError, match="deeper than 64 levels"):
        lower_functional_ops(from_graphdef(gdef))


def test_call_keeps_its_name_ports_device_and_control_users():
    pair = fdef("Pair", [("a", F32)], [("s", F32), ("d", F32)],
                [node_def("s", "Mul", ["a", "two:output:0"], T=F32), const_def("two", 2.0),
                 node_def("d", "Neg", ["a"], T=F32, device="/device:CPU:1")],
                {"s": "s:z:0", "d": "d:y:0"})
    gdef = with_library(graph_def(node_def("x", "Placeholder", dtype=F32), node_def("first", "NoOp"),
                                  call("c", func("Pair"), ["x", "^first"], [F32], [F32, F32],
                                       op="StatefulPartitionedCall", device="/device:CPU:0"),
                                  node_def("after", "NoOp", ["^c"]),
                                  node_def("out", "AddV2", ["c", "c:1"], T=F32)), pair)
    graph = from_graphdef(gdef)
    report = lower_functional_ops(graph)
    assert report.counts == {"StatefulPartitionedCall": 1} and report.dropped_functions == ["Pair"]
    assert len(graph.library.function) == 0
    c = graph.node("c")
    assert c.op == "IdentityN" and c.num_outputs == 2 and graph.node("after").control_inputs == (c,)
    assert graph.node("c/s").device == "/device:CPU:0" and graph.node("c/d").device == "/device:CPU:1"
    # The call's control input orders every inlined node, the input-less Const included.
    first = graph.node("first")
    for name in ("c/s", "c/two", "c/d"):
        assert _reaches(first, graph.node(name)), name
    x = np.array([1.0, 3.0], np.float32)
    values = Session(graph).run(["c:0", "c:1", "out"], {"x": x}, targets=["after"]).values
    np.testing.assert_array_equal(values[0], 2 * x)
    np.testing.assert_array_equal(values[2], x)


def _reaches(source, target) -> bool:
    pending, seen = [target], set()
    while pending:
        node = pending.pop()
        if node is source:
            return True
        if node not in seen:
            seen.add(node)
            pending.extend(node.input_nodes())
    return False


def test_control_ret_side_effects_run_before_control_users():
    checked = fdef("Checked", [("v", F32)], [("r", F32)],
                   [const_def("zero", 0.0),
                    node_def("positive", "Greater", ["v", "zero:output:0"], T=F32),
                    node_def("all", "All", ["positive:z:0", "axes:output:0"], Tidx=I32, keep_dims=False),
                    const_def("axes", [0], I32),
                    node_def("check", "Assert", ["all:output:0", "v"], T=types(F32)),
                    node_def("r", "Identity", ["v"], T=F32)],
                   {"r": "r:output:0"}, control_ret={"check": "check"}, stateful=True)
    gdef = with_library(graph_def(node_def("x", "Placeholder", dtype=F32),
                                  call("c", func("Checked"), ["x"], [F32], [F32], op="StatefulPartitionedCall"),
                                  node_def("train", "NoOp", ["^c"])), checked)
    Session(from_graphdef(gdef)).run([], {"x": np.array([1.0, 2.0], np.float32)}, targets=["train"])
    with pytest.raises(RuntimeFailure, match="assertion failed"):
        Session(from_graphdef(gdef)).run([], {"x": np.array([1.0, -2.0], np.float32)}, targets=["train"])


# --- If ---------------------------------------------------------------------------------------

def _if_graph(pred_dtype, pred_shape):
    """out = If(p, x): then x + 1, else a constant 7 (a branch that reads no input)."""
    then = fdef("Then", [("v", F32)], [("r", F32)],
                [const_def("one", 1.0), node_def("r", "AddV2", ["v", "one:output:0"], T=F32)], {"r": "r:z:0"})
    other = fdef("Else", [("v", F32)], [("r", F32)], [const_def("seven", 7.0)], {"r": "seven:output:0"})
    return with_library(graph_def(
        node_def("x", "Placeholder", dtype=F32), node_def("p", "Placeholder", dtype=pred_dtype, shape=Shape(pred_shape)),
        node_def("cond", "If", ["p", "x"], Tcond=pred_dtype, Tin=types(F32), Tout=types(F32),
                 then_branch=func("Then"), else_branch=func("Else"))), then, other)


@pytest.mark.parametrize("dtype, pred, taken", [
    (dtypes.bool_, np.bool_(True), True), (dtypes.bool_, np.bool_(False), False),
    (I32, np.int32(5), True), (I32, np.int32(0), False), (F32, np.float32(-0.5), True),
    (dtypes.string, np.bytes_(b"yes"), True), (dtypes.string, np.bytes_(b""), False),
    (I32, np.zeros(0, np.int32), False), (I32, np.zeros(3, np.int32), True),
])
def test_if_predicates_follow_tensorflow_rules(dtype, pred, taken):
    gdef = _if_graph(dtype, None)
    x = np.float32(2.0)
    (out,) = run(gdef, ["cond"], {"x": x, "p": pred})
    assert out == (x + 1 if taken else 7.0)


def test_if_output_shapes_attr_and_body_inference():
    gdef = _if_graph(dtypes.bool_, [])
    graph = from_graphdef(gdef)
    graph.node("x").set_attr("shape", Shape([3]))
    # Then gives [3], else a scalar: relaxed to unknown rank... unless output_shapes says more.
    assert infer_shapes(graph).shape(graph.tensor("cond")) == Shape(None)
    graph.node("cond").set_attr("output_shapes", [Shape([3])])
    assert infer_shapes(graph).shape(graph.tensor("cond")) == Shape([3])


def test_call_shapes_are_inferred_through_the_body():
    gdef = with_library(graph_def(node_def("x", "Placeholder", dtype=F32, shape=Shape([2, 5])),
                                  call("c", func("SquarePlus", T=F32), ["x"], [F32], [F32])), SQUARE_PLUS)
    graph = from_graphdef(gdef)
    assert infer_shapes(graph).shape(graph.tensor("c")) == Shape([2, 5])


# --- Case -------------------------------------------------------------------------------------

def test_case_without_inputs_runs_the_indexed_branch_or_the_last():
    branches = [fdef(f"B{k}", [], [("r", F32)], [const_def("value", float(10 * k))], {"r": "value:output:0"})
                for k in range(3)]
    gdef = with_library(graph_def(
        node_def("k", "Placeholder", dtype=I32),
        node_def("case", "Case", ["k"], Tin=types(), Tout=types(F32),
                 branches=AttrValue(list=AttrValue.ListValue(func=[func(f"B{k}") for k in range(3)])))),
        *branches)
    graph = from_graphdef(gdef)
    lower_functional_ops(graph)
    session = Session(graph)
    for index, want in ((0, 0.0), (1, 10.0), (2, 20.0), (3, 20.0), (-1, 20.0)):
        assert session.run(["case"], {"k": np.int32(index)}).values[0] == want


# --- While ------------------------------------------------------------------------------------

def test_while_with_a_non_bool_condition():
    """Loop while n - i != 0 (an int32 condition, converted like TensorFlow's ToBool)."""
    cond = fdef("Cond", [("i", I32), ("acc", F32), ("n", I32)], [("r", I32)],
                [node_def("left", "Sub", ["n", "i"], T=I32)], {"r": "left:z:0"})
    body = fdef("Body", [("i", I32), ("acc", F32), ("n", I32)], [("i2", I32), ("acc2", F32), ("n2", I32)],
                [const_def("one", 1, I32), node_def("next", "AddV2", ["i", "one:output:0"], T=I32),
                 const_def("half", 0.5),
                 node_def("scaled", "Mul", ["acc", "half:output:0"], T=F32)],
                {"i2": "next:z:0", "acc2": "scaled:z:0", "n2": "n"})
    gdef = with_library(graph_def(
        const_def("zero", 0, I32), node_def("x", "Placeholder", dtype=F32), node_def("n", "Placeholder", dtype=I32),
        node_def("loop", "While", ["zero", "x", "n"], T=types(I32, F32, I32), cond=func("Cond"), body=func("Body"),
                 parallel_iterations=3)), cond, body)
    graph = from_graphdef(gdef)
    lower_functional_ops(graph)
    assert {n.attr("parallel_iterations") for n in graph.nodes if n.op == "Enter"} == {3}
    values = Session(graph).run(["loop:0", "loop:1"], {"x": np.float32(8.0), "n": np.int32(3)}).values
    assert values == [3, 1.0]


# --- SymbolicGradient -------------------------------------------------------------------------

def test_symbolic_gradient_is_the_vector_jacobian_product():
    """f(x, w) = x * w * x: df/dx = 2xw, df/dw = x^2, each times the incoming gradient dy."""
    f = fdef("F", [("x", F32), ("w", F32)], [("y", F32)],
             [node_def("xw", "Mul", ["x", "w"], T=F32), node_def("y", "Mul", ["xw:z:0", "x"], T=F32)],
             {"y": "y:z:0"})
    gdef = with_library(graph_def(
        node_def("x", "Placeholder", dtype=F32), node_def("w", "Placeholder", dtype=F32),
        node_def("dy", "Placeholder", dtype=F32),
        node_def("g", "SymbolicGradient", ["x", "w", "dy"], Tin=types(F32, F32, F32), Tout=types(F32, F32),
                 f=func("F"))), f)
    x, w, dy = (np.array([1.0, -2.0, 3.0], np.float32), np.array([0.5, 4.0, -1.0], np.float32),
                np.array([2.0, 1.0, -3.0], np.float32))
    dx, dw = run(gdef, ["g:0", "g:1"], {"x": x, "w": w, "dy": dy})
    np.testing.assert_allclose(dx, 2 * x * w * dy, rtol=1e-6)
    np.testing.assert_allclose(dw, x * x * dy, rtol=1e-6)


def test_library_round_trips_byte_for_byte_and_untouched_graphs_keep_it():
    gdef = with_library(graph_def(node_def("x", "Placeholder", dtype=F32),
                                  call("c", func("SquarePlus", T=F32), ["x"], [F32], [F32])), SQUARE_PLUS)
    gdef.library.gradient.add(function_name="SquarePlus", gradient_func="SquarePlus")
    data = gdef.SerializeToString(deterministic=True)
    graph = from_graphdef(gdef)
    assert to_graphdef(graph).SerializeToString(deterministic=True) == data
    assert not lower_functional_ops(from_graphdef(graph_def(node_def("x", "Placeholder", dtype=F32)))).changed


def test_a_node_whose_op_is_a_library_function_is_a_call():
    pair = fdef("Pair", [("a", "T")], [("twice", "T"), ("square", "T")],
                [node_def("t", "AddV2", ["a", "a"], T=placeholder("T")),
                 node_def("s", "Mul", ["a", "a"], T=placeholder("T"))],
                {"twice": "t:z:0", "square": "s:z:0"}, type_attrs=["T"])
    gdef = with_library(graph_def(node_def("x", "Placeholder", dtype=F32), node_def("c", "Pair", ["x"], T=F32),
                                  node_def("out", "Neg", ["c:1"], T=F32)), pair)
    graph = from_graphdef(gdef)
    report = lower_functional_ops(graph)
    assert report.counts == {"Pair": 1}
    x = np.array([3.0, -1.0], np.float32)
    values = Session(graph).run(["out", "c:0"], {"x": x}).values
    np.testing.assert_array_equal(values[0], -x * x)
    np.testing.assert_array_equal(values[1], x + x)


def _assert_positive_nodes(value: str):
    """Body nodes asserting `value` > 0 (an Assert named 'check')."""
    return [const_def("zero", 0.0), node_def("positive", "Greater", [value, "zero:output:0"], T=F32),
            node_def("check", "Assert", ["positive:z:0", value], T=types(F32))]


def test_loop_body_side_effects_run_every_iteration():
    """acc -= 1 while i < 3; the body asserts acc > 0 (a control_ret): it fails once acc reaches 0."""
    cond = fdef("Cond", [("i", I32), ("acc", F32)], [("r", dtypes.bool_)],
                [const_def("three", 3, I32), node_def("less", "Less", ["i", "three:output:0"], T=I32)],
                {"r": "less:z:0"})
    body = fdef("Body", [("i", I32), ("acc", F32)], [("i2", I32), ("acc2", F32)],
                [const_def("one", 1, I32), node_def("next", "AddV2", ["i", "one:output:0"], T=I32),
                 const_def("fone", 1.0), node_def("dec", "Sub", ["acc", "fone:output:0"], T=F32),
                 *_assert_positive_nodes("acc")],
                {"i2": "next:z:0", "acc2": "dec:z:0"}, control_ret={"check": "check"}, stateful=True)
    gdef = with_library(graph_def(
        const_def("zero", 0, I32), node_def("x", "Placeholder", dtype=F32),
        node_def("loop", "While", ["zero", "x"], T=types(I32, F32), cond=func("Cond"), body=func("Body"))),
        cond, body)
    assert run(gdef, ["loop:1"], {"x": np.float32(5.0)}) == [2.0]
    with pytest.raises(RuntimeFailure, match="assertion failed"):
        run(gdef, ["loop:1"], {"x": np.float32(2.0)})   # acc is 0 in the third iteration


@pytest.mark.parametrize("pred, fails", [(True, True), (False, False)])
def test_if_without_outputs_runs_the_taken_branch_side_effects(pred, fails):
    checking = fdef("Checking", [("v", F32)], [], _assert_positive_nodes("v"), {}, control_ret={"check": "check"},
                    stateful=True)
    quiet = fdef("Quiet", [("v", F32)], [], [], {})
    gdef = with_library(graph_def(
        node_def("x", "Placeholder", dtype=F32), node_def("p", "Placeholder", dtype=dtypes.bool_),
        node_def("maybe_check", "If", ["p", "x"], Tcond=dtypes.bool_, Tin=types(F32), Tout=types(),
                 then_branch=func("Checking"), else_branch=func("Quiet")),
        node_def("step", "NoOp", ["^maybe_check"])), checking, quiet)
    session = Session(from_graphdef(gdef))
    feeds = {"x": np.float32(-1.0), "p": np.bool_(pred)}
    if fails:
        with pytest.raises(RuntimeFailure, match="assertion failed"):
            session.run([], feeds, targets=["step"])
    else:
        session.run([], feeds, targets=["step"])


def test_inlined_colocation_names_follow_the_inlined_nodes():
    body = fdef("Coloc", [("v", F32)], [("r", F32)],
                [node_def("a", "Neg", ["v"], T=F32), node_def("b", "Neg", ["a:y:0"], T=F32, _class=["loc:@a"])],
                {"r": "b:y:0"})
    gdef = with_library(graph_def(node_def("x", "Placeholder", dtype=F32),
                                  call("c", func("Coloc"), ["x"], [F32], [F32])), body)
    graph = from_graphdef(gdef)
    lower_functional_ops(graph)
    assert graph.node("c/b").attr("_class") == ["loc:@c/a"]
