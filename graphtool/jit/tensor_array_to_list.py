"""TensorArrays (a resource written in place, ordered by a float "flow" token) -> TensorLists (a
value): the flow becomes the list itself, so a loop that fills a TensorArray carries the list as
a loop variable, and a functional While over it is stateless (a JIT keeps it as an array).

    ta, flow = TensorArrayV3(n)          flow = TensorListReserve(element_shape, n)
    f1 = TensorArrayWriteV3(ta, i, v, f) f1 = TensorListSetItem(f, i, v)
    TensorArrayReadV3(ta, i, f)          TensorListGetItem(f, i, element_shape)
    TensorArrayGatherV3(ta, idx, f)      TensorListGather(f, idx, element_shape)
    TensorArrayScatterV3(ta, idx, v, f)  TensorListScatterIntoExistingList(f, v, idx)
    TensorArraySizeV3(ta, f)             TensorListLength(f)
    TensorArrayCloseV3(ta)               NoOp

The flow's carriers (Enter, Merge, Switch, Exit, NextIteration, Identity) change their T from
float to variant; the handle's Enters and Identities go. Every replacement keeps the name of the
node it replaces. Converted only when the rewrite means the same: the handle reaches nothing but
those ops (no TensorArrayGradV3, Concat, Split), every flow reaches nothing but carriers and those
ops, and no flow value is both written and passed on (in place, the later reader would see the
write; as a value it would not).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..ir import Graph, Node, TensorRef
from ..shapes import Shape
from .subgraph import Unconvertible, replace_keeping_names

_CARRIERS = frozenset({"Enter", "Merge", "Switch", "Exit", "NextIteration", "Identity"})
_HANDLE_CARRIERS = frozenset({"Enter", "Identity"})
_FLOW_SLOT = {"TensorArrayReadV3": 2, "TensorArrayWriteV3": 3, "TensorArrayGatherV3": 2,
              "TensorArrayScatterV3": 3, "TensorArraySizeV3": 1}
_WRITERS = frozenset({"TensorArrayWriteV3", "TensorArrayScatterV3"})
_SUPPORTED = frozenset(_FLOW_SLOT) | {"TensorArrayCloseV3"}


def tensor_arrays_to_lists(graph: Graph, report, shapes=None) -> None:
    for array in [n for n in graph.nodes if n.op == "TensorArrayV3"]:
        try:
            with report.transaction(graph):
                plan = _plan(array)
        except Unconvertible as exc:
            report.refuse("TensorArray", array.name, str(exc))
            continue
        _rewrite(graph, array, *plan, shapes)
        report.converted["TensorArray"] += 1


def _plan(array: Node) -> tuple[list[Node], list[Node], list[Node]]:
    """(handle carriers, TensorArray ops, flow carriers) of one TensorArray."""
    if array.attr("dtype").is_ref:
        raise Unconvertible("its element type is a ref type")
    carriers, ops = [], []
    pending = [array.output(0)]
    while pending:
        ref = pending.pop()
        if ref.node.control_uses and ref.node is not array:
            raise Unconvertible(f"'{ref.node.name}' carrying its handle has control users")
        for user, slot in ref.node.uses(ref.index):
            if user.op in _HANDLE_CARRIERS:
                carriers.append(user)
                pending.append(user.output(0))
            elif user.op in _SUPPORTED and slot == 0:
                ops.append(user)
            else:
                raise Unconvertible(f"its handle reaches '{user.name}' ({user.op}), which has no TensorList form")
    op_set = set(ops)
    flows: list[TensorRef] = []
    flow_carriers: list[Node] = []
    seen: set[TensorRef] = set()
    pending = [array.output(1)] + [o.output(0) for o in ops if o.op in _WRITERS]
    while pending:
        ref = pending.pop()
        if ref in seen:
            continue
        seen.add(ref)
        flows.append(ref)
        writers, passed = 0, 0
        for user, slot in ref.node.uses(ref.index):
            if user in op_set and _FLOW_SLOT.get(user.op) == slot:
                writers += user.op in _WRITERS
            elif user.op in _CARRIERS and (slot == 0 or user.op == "Merge"):
                passed += 1
                if user not in flow_carriers:
                    flow_carriers.append(user)
                ports = (0, 1) if user.op == "Switch" else (0,)
                pending.extend(user.output(p) for p in ports)
            else:
                raise Unconvertible(f"its flow '{ref.name}' reaches '{user.name}' ({user.op}), which is not one "
                                    f"of its TensorArray ops")
        if writers > 1 or (writers and passed):
            raise Unconvertible(f"its flow '{ref.name}' is written and read on (the in-place and the value "
                                f"semantics would differ)")
    flow_set = set(flows)
    for node in flow_carriers:
        data = node.inputs[:1] if node.op == "Switch" else node.inputs
        strangers = [r for r in data if r not in flow_set]
        if strangers:
            raise Unconvertible(f"'{node.name}' ({node.op}) joins its flow with '{strangers[0].name}'")
    for op in ops:
        flow_slot = _FLOW_SLOT.get(op.op)   # (None for TensorArrayCloseV3)
        if flow_slot is not None and op.inputs[flow_slot] not in flow_set:
            raise Unconvertible(f"'{op.name}' ({op.op}) orders itself by another flow than this array's")
    if any(o.op == "TensorArrayScatterV3" for o in ops) and array.attr("dynamic_size", False):
        raise Unconvertible("a scatter into a dynamic-size array")
    return carriers, ops, flow_carriers


def _element_shape(array: Node, ops: list[Node], shapes) -> Shape:
    """The array's element shape: its attr, or what the writes, scatters and gathers say."""
    shape = Shape.of(array.attr("element_shape", Shape.unknown()))
    if shapes is None:
        return shape
    for op in ops:
        if op.op == "TensorArrayWriteV3":
            seen = shapes.shape(op.inputs[2])
        elif op.op in ("TensorArrayScatterV3", "TensorArrayGatherV3"):
            full = shapes.shape(op.inputs[2] if op.op == "TensorArrayScatterV3" else op.output(0))
            seen = Shape(full.dims[1:]) if full.dims else Shape.unknown()
        elif op.op == "TensorArrayReadV3":
            seen = shapes.shape(op.output(0))
        else:
            continue
        if seen.dims is not None and shape.is_compatible_with(seen):
            shape = shape.merge(seen)
    return shape


def _shape_const(graph: Graph, shape: Shape, anchor: Node, name: str) -> TensorRef:
    """An int32 element_shape tensor (-1 for an unknown dim or rank), in `anchor`'s frame."""
    value = np.asarray(-1 if shape.dims is None else [-1 if d is None else d for d in shape.dims], np.int32)
    return graph.add_node("Const", graph.unique_name(name), control_inputs=[anchor], device=anchor.device,
                          attrs={"dtype": dtypes.int32, "value": value}).output(0)


def _swap(graph: Graph, old: Node, op: str, inputs: list[TensorRef], attrs: dict, old_port: int = 0) -> Node:
    """`op` in place of `old`, under its name: the users of `old:old_port` (read `op:0`), its
    control inputs and control users."""
    new = graph.add_node(op, graph.unique_name(f"{old.name}/as_list"), inputs=inputs,
                         control_inputs=old.control_inputs, attrs=attrs, device=old.device)
    if new.num_outputs and old.num_outputs:
        graph.replace_all_uses_with(old.output(old_port), new.output(0))
    graph.move_control_uses(old, new)
    return new


def _rewrite(graph: Graph, array: Node, carriers: list[Node], ops: list[Node], flow_carriers: list[Node],
             shapes) -> None:
    dtype = array.attr("dtype")
    element = _element_shape(array, ops, shapes)
    renames = []
    for op in ops:
        if op.op == "TensorArrayCloseV3":   # nothing to free
            renames.append((_swap(graph, op, "NoOp", [], {}), op))
            continue
        flow = op.inputs[_FLOW_SLOT[op.op]]   # every other supported op orders itself by the flow
        if op.op == "TensorArrayReadV3":
            new = _swap(graph, op, "TensorListGetItem",
                        [flow, op.inputs[1], _shape_const(graph, element, flow.node, f"{op.name}/element_shape")],
                        {"element_dtype": dtype})
        elif op.op == "TensorArrayWriteV3":
            new = _swap(graph, op, "TensorListSetItem", [flow, op.inputs[1], op.inputs[2]],
                        {"element_dtype": dtype,
                         "resize_if_index_out_of_bounds": bool(array.attr("dynamic_size", False))})
        elif op.op == "TensorArrayGatherV3":
            new = _swap(graph, op, "TensorListGather",
                        [flow, op.inputs[1], _shape_const(graph, element, flow.node, f"{op.name}/element_shape")],
                        {"element_dtype": dtype})
        elif op.op == "TensorArrayScatterV3":
            new = _swap(graph, op, "TensorListScatterIntoExistingList", [flow, op.inputs[2], op.inputs[1]],
                        {"element_dtype": dtype})
        else:   # TensorArraySizeV3
            new = _swap(graph, op, "TensorListLength", [flow], {})
        renames.append((new, op))
    size = array.inputs[0]
    reserve = _swap(graph, array, "TensorListReserve",
                    [_shape_const(graph, element, size.node, f"{array.name}/element_shape"), size],
                    {"element_dtype": dtype, "shape_type": dtypes.int32}, old_port=1)
    for node in flow_carriers:
        node.set_attr("T", dtypes.variant)
    renames.append((reserve, array))
    # The handle's carriers (innermost last) and the replaced ops now have no users.
    for op in ops:
        op.clear_inputs()
    replace_keeping_names(graph, renames, carriers)
