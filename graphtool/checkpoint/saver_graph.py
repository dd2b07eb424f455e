"""A graph's tf.train.Saver subgraph: finding the one TensorFlow built, or adding one.

What tf.compat.v1.train.Saver (TF 2.x, write_version V2) puts in a GraphDef, under a name scope
`save` (`save_1`, ... for later savers):

    save/filename/input (Const "model") -> save/filename, save/Const (PlaceholderWithDefault):
        the checkpoint prefix, fed on each save and restore: SaverDef.filename_tensor_name
    not sharded: save/SaveV2(save/Const, names, slices, values...) and
        save/control_dependency = Identity(save/Const, ^save/SaveV2): save_tensor_name
    sharded: per device save/ShardedFilename(_temp prefix, i, n) -> save/SaveV2 ->
        save/MergeV2Checkpoints(Pack(shard prefixes), save/Const) and
        save/Identity_K = Identity(save/Const, ^MergeV2Checkpoints, ...): save_tensor_name
    save/RestoreV2 -> save/Assign (ref) / save/Identity + save/AssignVariableOp (resource),
        grouped by save/restore_all (sharded: through save/restore_shard NoOps): restore_op_name

`add_saver` builds the non-sharded form over every variable (VariableV2/Variable ref variables,
VarHandleOp resource variables) with the variables' node names as checkpoint keys, sorted as TF
sorts them, so TensorFlow reads its checkpoints and a TF Saver of the same variables restores
them. A variable partitioned in TF is several variable nodes (`x/part_0`, ...) whose slice
information lives only in Python collections, not in the GraphDef: added savers store each part
under its own node name.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import dtypes
from ..errors import InvalidGraphError
from ..ir import Graph, Node
from ..proto.attr_value_pb2 import AttrValue
from ..tensor import from_ndarray

SAVE_OPS = ("SaveV2", "SaveSlices", "Save")          # V2, and the legacy V1 format
REF_VARIABLE_OPS = ("VariableV2", "Variable")
RESOURCE_VARIABLE_OPS = ("VarHandleOp",)


@dataclass(frozen=True)
class SaverNodes:
    """The names a caller runs: feed `filename_tensor` the prefix, then fetch `save_tensor` (it
    evaluates to the prefix written) or run `restore_op` as a target."""

    filename_tensor: str
    save_tensor: str
    restore_op: str
    scope: str = "save"
    sharded: bool = False
    keys: tuple[str, ...] = field(default=())


def _string_values(node: Node | None) -> tuple[str, ...]:
    if node is None or node.op != "Const":
        return ()
    try:
        value = node.attr("value")          # decoded to an array
    except (KeyError, InvalidGraphError):
        return ()
    return tuple(v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
                 for v in np.asarray(value, dtype=object).reshape(-1).tolist())


def _scope_of(node: Node) -> str:
    return node.name.rpartition("/")[0]


def _saver_in_scope(graph: Graph, scope: str, saves: list[Node]) -> SaverNodes | None:
    restore = graph.get(f"{scope}/restore_all")
    filename = graph.get(f"{scope}/Const")
    if restore is None or filename is None or filename.num_outputs != 1:
        return None
    merges = [n for n in graph.nodes if n.op == "MergeV2Checkpoints" and _scope_of(n) == scope]
    save_tensor = None
    if merges:
        merge = merges[0]
        for node in graph.nodes:
            if (node.op == "Identity" and _scope_of(node) == scope and node.inputs
                    and node.inputs[0].node is filename and merge in node.control_inputs):
                save_tensor = node.output(0)
                break
    else:
        dependency = graph.get(f"{scope}/control_dependency")
        if dependency is not None and dependency.op == "Identity" and \
                any(save in dependency.control_inputs for save in saves):
            save_tensor = dependency.output(0)
    if save_tensor is None:
        return None
    keys: list[str] = []
    for save in saves:
        keys += _string_values(save.inputs[1].node if len(save.inputs) > 1 else None)
    return SaverNodes(f"{filename.name}:0", save_tensor.full_name, restore.name, scope, bool(merges),
                      tuple(sorted(set(keys))))


def find_saver(graph: Graph) -> SaverNodes | None:
    """The graph's tf.train.Saver subgraph (TF's naming, sharded or not), or None. With several
    savers, the one in scope `save`, else the first scope in name order."""
    by_scope: dict[str, list[Node]] = {}
    for node in graph.nodes:
        if node.op in SAVE_OPS:
            by_scope.setdefault(_scope_of(node), []).append(node)
    found = [s for scope in sorted(by_scope, key=lambda s: (s != "save", s))
             if (s := _saver_in_scope(graph, scope, by_scope[scope])) is not None]
    return found[0] if found else None


def variables(graph: Graph) -> list[Node]:
    """The top-level variable nodes a saver covers, in TF's order (sorted by name)."""
    return sorted((n for n in graph.nodes if n.op in REF_VARIABLE_OPS + RESOURCE_VARIABLE_OPS),
                  key=lambda n: n.name)


def _const(graph: Graph, name: str, value: np.ndarray, dtype) -> Node:
    return graph.add_node("Const", graph.unique_name(name),
                          attrs={"value": AttrValue(tensor=from_ndarray(value, dtype, compact=False)),
                                 "dtype": dtype})


def _strings(values) -> np.ndarray:
    array = np.empty(len(values), dtype=object)
    array[:] = [v.encode("utf-8") for v in values]
    return array


def add_saver(graph: Graph, default_prefix: str = "model") -> SaverNodes:
    """Add a save/restore subgraph covering every variable, named as tf.train.Saver names it (scope
    `save`, or `save_1`, ... when taken). InvalidGraphError when the graph has no variables."""
    nodes = variables(graph)
    if not nodes:
        raise InvalidGraphError("the graph has no variables (VariableV2, Variable or VarHandleOp) to save")
    scope = "save"
    k = 0
    while any(n.name == scope or n.name.startswith(scope + "/") for n in graph.nodes):
        k += 1
        scope = f"save_{k}"

    prefix_default = np.empty((), dtype=object)
    prefix_default[()] = default_prefix.encode("utf-8")
    default = _const(graph, f"{scope}/filename/input", prefix_default, dtypes.string)
    shape_attr = AttrValue()
    shape_attr.shape.SetInParent()                              # a scalar
    filename = graph.add_node("PlaceholderWithDefault", f"{scope}/filename", [default.output(0)],
                              attrs={"dtype": dtypes.string, "shape": shape_attr})
    prefix = graph.add_node("PlaceholderWithDefault", f"{scope}/Const", [filename.output(0)],
                            attrs={"dtype": dtypes.string, "shape": shape_attr})

    keys = [n.name for n in nodes]
    values = []
    value_dtypes = []
    for node in nodes:
        dtype = node.attr("dtype").base
        value_dtypes.append(dtype)
        if node.op in RESOURCE_VARIABLE_OPS:
            read = graph.add_node("ReadVariableOp", graph.unique_name(f"{scope}/ReadVariableOp"), [node.output(0)],
                                  attrs={"dtype": dtype}, device=node.device)
            values.append(read.output(0))
        else:
            values.append(node.output(0))
    names = _const(graph, f"{scope}/SaveV2/tensor_names", _strings(keys), dtypes.string)
    slices = _const(graph, f"{scope}/SaveV2/shape_and_slices", _strings([""] * len(keys)), dtypes.string)
    save = graph.add_node("SaveV2", f"{scope}/SaveV2",
                          [prefix.output(0), names.output(0), slices.output(0), *values],
                          attrs={"dtypes": value_dtypes})
    dependency = graph.add_node("Identity", f"{scope}/control_dependency", [prefix.output(0)],
                                control_inputs=[save], attrs={"T": dtypes.string})

    restore_names = _const(graph, f"{scope}/RestoreV2/tensor_names", _strings(keys), dtypes.string)
    restore_slices = _const(graph, f"{scope}/RestoreV2/shape_and_slices", _strings([""] * len(keys)),
                            dtypes.string)
    restore = graph.add_node("RestoreV2", f"{scope}/RestoreV2",
                             [prefix.output(0), restore_names.output(0), restore_slices.output(0)],
                             attrs={"dtypes": value_dtypes})
    assigns = []
    for i, (node, dtype) in enumerate(zip(nodes, value_dtypes)):
        if node.op in RESOURCE_VARIABLE_OPS:
            identity = graph.add_node("Identity", graph.unique_name(f"{scope}/Identity"), [restore.output(i)],
                                      attrs={"T": dtype})
            assigns.append(graph.add_node("AssignVariableOp", graph.unique_name(f"{scope}/AssignVariableOp"),
                                          [node.output(0), identity.output(0)], attrs={"dtype": dtype},
                                          device=node.device))
        else:
            assigns.append(graph.add_node("Assign", graph.unique_name(f"{scope}/Assign"),
                                          [node.output(0), restore.output(i)],
                                          attrs={"T": dtype, "validate_shape": True, "use_locking": True},
                                          device=node.device))
    restore_all = graph.add_node("NoOp", f"{scope}/restore_all", control_inputs=assigns)
    return SaverNodes(f"{prefix.name}:0", f"{dependency.name}:0", restore_all.name, scope, False, tuple(keys))


__all__ = ["SaverNodes", "add_saver", "find_saver", "variables"]
