"""Freezing: resource variables become Consts holding their values.

For each variable handle (VarHandleOp) with a known value, every use is followed through the ops
that only forward a tensor (Identity, IdentityN, and the v1 control-flow ops Enter, Merge, Switch,
NextIteration, Exit, which carry handles into loops and cond branches) to the ops that read it:

    v (VarHandleOp) -> Enter -> Merge -> Switch -> Identity -> ReadVariableOp -> MatMul
    v (Const value) -> Enter -> Merge -> Switch -> Identity -> Identity       -> MatMul

The handle becomes a Const of the value (same name), the forwarding ops are retyped from resource
to the value's dtype, and the readers are replaced under their own names: ReadVariableOp by an
Identity, ResourceGather by GatherV2 (axis 0), VarIsInitializedOp by a true Const. This is what
TensorFlow's convert_variables_to_constants_v2 does after lowering functional control flow.
A variable with any other use (an assignment, an op dftool does not know) stays a variable: its
value may change while the graph runs. It is restored in the graph instead, as TensorFlow's loader
restores it before the first call: a Const of its value is assigned to it at the start of every
step (every other user of the variable waits for that assignment), so one step computes what
TensorFlow's first call after loading computes.

TF1 reference variables (VariableV2) are frozen the same way: the variable becomes a Const, the
Ref* control-flow ops that carried its reference become their value forms (RefEnter -> Enter, ...),
and every other consumer already reads it as a value; one that writes through the reference
(Assign, ScatterUpdate, ...) makes it a variable restored in the graph, as above.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import dtypes
from ..ir import Graph, Node, TensorRef
from ..placement.colocation import drop_colocation_with
from ..proto.attr_value_pb2 import AttrValue
from ..tensor import from_ndarray

FORWARDING_OPS = frozenset({"Identity", "IdentityN", "Enter", "Merge", "Switch", "NextIteration", "Exit"})
REF_VARIABLE_OPS = frozenset({"VariableV2", "Variable"})
# Ops that pass a reference on, and what they become once it is a plain value.
_REF_FORWARDING = {"RefIdentity": "Identity", "RefEnter": "Enter", "RefSwitch": "Switch", "RefMerge": "Merge",
                   "RefNextIteration": "NextIteration", "RefExit": "Exit"}
READER_OPS = frozenset({"ReadVariableOp", "ResourceGather", "VarIsInitializedOp"})
# Attrs that describe a resource's handle data; meaningless once the tensor is a plain value.
_HANDLE_ATTRS = ("_handle_dtypes", "_handle_shapes", "_output_shapes")


@dataclass
class FreezeReport:
    frozen: list[str] = field(default_factory=list)            # variable node names
    readers_replaced: int = 0
    restored_per_step: dict[str, str] = field(default_factory=dict)   # variable -> why it stays one


def freeze_variables(graph: Graph, values: dict[str, np.ndarray]) -> FreezeReport:
    """Replace each variable (VarHandleOp, VariableV2) named in `values` (node name -> value) and
    its readers, in place."""
    report = FreezeReport()
    for name, value in values.items():
        node = graph.get(name)
        if node is not None and node.op in REF_VARIABLE_OPS:
            _freeze_ref_variable(graph, node, value, report)
            continue
        if node is None or node.op != "VarHandleOp":
            continue
        chain = _read_only_chain(node)
        if isinstance(chain, str):
            report.restored_per_step[name] = chain
            restore_in_graph(graph, node, value)
            continue
        forwarding, readers = chain
        dtype = node.attr("dtype")
        const = _replace_with_const(graph, node, np.asarray(value, dtype=dtype.numpy), dtype)
        for ref in forwarding:
            _retype(ref, dtype)
        for reader in readers:
            _replace_reader(graph, reader, dtype)
        report.frozen.append(const.name)
        report.readers_replaced += len(readers)
    # TF1 graphs colocate a variable's users with it (`_class: loc:@var`) because a variable
    # lives on one device; a Const can be copied anywhere, and a later pass may fold it away.
    drop_colocation_with(graph, set(report.frozen))
    return report


def _read_only_chain(handle: Node):
    """(forwarding outputs to retype, reader nodes) reached from the handle, or a string saying
    why the variable cannot be frozen."""
    forwarding: list[TensorRef] = []
    readers: list[Node] = []
    seen: set[TensorRef] = set()
    stack = [handle.output(0)]
    while stack:
        ref = stack.pop()
        if ref in seen:
            continue
        seen.add(ref)
        for consumer, slot in ref.node.uses(ref.index):
            if consumer.op in READER_OPS:
                if slot != 0:
                    return f"used as input {slot} of {consumer.op} '{consumer.name}'"
                if consumer not in readers:
                    readers.append(consumer)
            elif consumer.op in FORWARDING_OPS:
                if consumer.op == "Switch" and slot != 0:
                    return f"used as the predicate of Switch '{consumer.name}'"
                ports = [slot] if consumer.op == "IdentityN" else range(consumer.num_outputs)
                if consumer.op == "Merge":
                    ports = [0]     # output 1 is the index of the taken input, not the value
                for port in ports:
                    out = consumer.output(port)
                    if out not in seen:
                        forwarding.append(out)
                        stack.append(out)
            else:
                return f"used by {consumer.op} '{consumer.name}'"
    return forwarding, readers


def _freeze_ref_variable(graph: Graph, variable: Node, value, report: FreezeReport) -> None:
    chain = _ref_chain(variable)
    if isinstance(chain, str):
        report.restored_per_step[variable.name] = chain
        restore_in_graph(graph, variable, value)
        return
    dtype = variable.attr("dtype").base
    for node in chain:
        replacement = graph.add_node(_REF_FORWARDING[node.op], graph.unique_name(node.name + "/frozen"),
                                     node.inputs, node.control_inputs, dict(node.attrs), node.device)
        _take_over(graph, node, replacement)
    const = _replace_with_const(graph, variable, np.asarray(value, dtype=dtype.numpy), dtype)
    report.frozen.append(const.name)


def _ref_chain(variable: Node):
    """The Ref* forwarding nodes the reference reaches, or why the variable cannot be frozen."""
    chain: list[Node] = []
    stack = [variable]
    while stack:
        node = stack.pop()
        for consumer, slot in node.uses():
            if consumer.op in _REF_FORWARDING:
                if consumer not in chain:
                    chain.append(consumer)
                    stack.append(consumer)
                continue
            spec = consumer.spec
            if spec is None:
                return f"used by {consumer.op} '{consumer.name}', an op dftool does not know"
            if spec.input_dtypes(consumer)[slot].is_ref:
                return f"written through its reference by {consumer.op} '{consumer.name}'"
    return chain


def restore_in_graph(graph: Graph, variable: Node, value) -> Node:
    """Assign `value` to `variable` at the start of every step: an assignment from a Const that
    every other user of the variable waits for (by a control edge). Returns the assignment."""
    dtype = variable.attr("dtype").base
    const = graph.add_node("Const", graph.unique_name(f"{variable.name}/restored_value"), device=variable.device,
                           attrs={"value": AttrValue(tensor=from_ndarray(np.asarray(value, dtype=dtype.numpy), dtype)),
                                  "dtype": dtype})
    users = variable.consumers()
    if variable.op == "VarHandleOp":
        assign = graph.add_node("AssignVariableOp", graph.unique_name(f"{variable.name}/restore"),
                                [variable.output(0), const.output(0)], attrs={"dtype": dtype}, device=variable.device)
    else:
        assign = graph.add_node("Assign", graph.unique_name(f"{variable.name}/restore"),
                                [variable.output(0), const.output(0)],
                                attrs={"T": dtype, "validate_shape": True, "use_locking": True}, device=variable.device)
    for user in users:
        user.add_control_input(assign)
    return assign


def _replace_with_const(graph: Graph, handle: Node, value: np.ndarray, dtype) -> Node:
    const = graph.add_node("Const", graph.unique_name(handle.name + "/frozen"), device=handle.device,
                           control_inputs=handle.control_inputs,
                           attrs={"value": AttrValue(tensor=from_ndarray(value, dtype)), "dtype": dtype})
    return _take_over(graph, handle, const)


def _take_over(graph: Graph, old: Node, new: Node) -> Node:
    """`new` takes `old`'s data and control uses and its name; `old` is removed."""
    for port in range(old.num_outputs):
        if old.uses(port):
            graph.replace_all_uses_with(old.output(port), new.output(min(port, new.num_outputs - 1)))
    graph.move_control_uses(old, new)
    name = old.name
    graph.remove_node(old)
    graph.rename(new, name)
    return new


def _retype(ref: TensorRef, dtype) -> None:
    node = ref.node
    if node.op == "IdentityN":
        types = list(node.attr("T"))
        types[ref.index] = dtype
        node.set_attr("T", types, "list(type)")
    else:
        node.set_attr("T", dtype, "type")
    for attr in _HANDLE_ATTRS:
        node.del_attr(attr)


def _replace_reader(graph: Graph, reader: Node, dtype) -> None:
    handle_value = reader.inputs[0]
    controls = list(reader.control_inputs)
    temporary = graph.unique_name(reader.name + "/frozen")
    if reader.op == "ReadVariableOp":
        new = graph.add_node("Identity", temporary, [handle_value], controls, {"T": dtype}, reader.device)
    elif reader.op == "ResourceGather":
        axis = graph.add_node("Const", graph.unique_name(reader.name + "/axis"), control_inputs=_anchor(graph, handle_value),
                              attrs={"value": AttrValue(tensor=from_ndarray(np.int32(0), dtypes.int32)),
                                     "dtype": dtypes.int32}, device=reader.device)
        new = graph.add_node("GatherV2", temporary, [handle_value, reader.inputs[1], axis.output(0)], controls,
                             {"Tparams": dtype, "Tindices": reader.attr("Tindices"), "Taxis": dtypes.int32,
                              "batch_dims": reader.attr("batch_dims", 0)}, reader.device)
    else:   # VarIsInitializedOp: a frozen variable always has its value
        new = graph.add_node("Const", temporary, control_inputs=[*_anchor(graph, handle_value), *controls],
                             attrs={"value": AttrValue(tensor=from_ndarray(np.bool_(True), dtypes.bool_)),
                                    "dtype": dtypes.bool_}, device=reader.device)
    _take_over(graph, reader, new)


def _anchor(graph: Graph, ref: TensorRef) -> list[Node]:
    """Control input for a Const that replaces or joins a reader of `ref`. Inside a loop or cond
    branch a Const must depend on a node of that frame/branch or it would run in the root frame
    (and never be dead on an untaken branch). A Switch output gets an Identity as its pivot, as
    TensorFlow's cond does: a control edge from the Switch itself says nothing about the branch."""
    node = ref.node
    if node.op == "Const":
        return []
    if node.op == "Switch":
        return [graph.add_node("Identity", graph.unique_name(f"{node.name}/pivot_{ref.index}"), [ref],
                               attrs={"T": node.attr("T")}, device=node.device)]
    return [node]
