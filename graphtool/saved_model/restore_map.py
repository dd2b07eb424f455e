"""Which checkpoint key holds the value of each variable of a SavedModel's graph.

We follow the MetaGraph's restore op (`saver_def.restore_op_name`), the node TensorFlow's C++
loader (and so TensorFlow Serving) runs with the checkpoint prefix fed: every AssignVariableOp it
depends on writes a `RestoreV2` output into a variable handle, and RestoreV2's `tensor_names`
constant names the checkpoint key of each output. Tracing those edges back gives handle -> key.

Why this and not the object graph (SavedObjectGraph + the checkpoint's TrackableObjectGraph): the
restore op exists in TF1 (SavedModelBuilder: `save/restore_all` in the graph) and TF2 SavedModels
(`StatefulPartitionedCall_N` calling a `__inference__traced_restore` function) alike, and it is the
exact dataflow TensorFlow executes. The object graph exists only in TF2 files, and matching its
variables to VarHandleOp nodes would go by variable names, which need not be unique.

Works on protos (before import into the IR): the restore function's body holds ops (RestoreV2,
SaveV2, string ops) that the signature's graph never needs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ..errors import InvalidGraphError
from ..proto.function_pb2 import FunctionDef
from ..proto.graph_pb2 import GraphDef
from ..proto.meta_graph_pb2 import MetaGraphDef
from ..tensor import to_ndarray

VARIABLE_OPS = frozenset({"VarHandleOp", "VariableV2", "Variable"})
ASSIGN_OPS = frozenset({"AssignVariableOp", "Assign"})
CALL_OPS = frozenset({"StatefulPartitionedCall", "PartitionedCall"})
_PASS_THROUGH = frozenset({"Identity", "Snapshot"})


class CheckpointValue(NamedTuple):
    """Where a variable's value is in the checkpoint: a key, and for a part of a partitioned
    variable the slice spec RestoreV2 reads ('' for the whole tensor)."""

    key: str
    slice_spec: str = ""


@dataclass(frozen=True)
class _Source:
    """Where a value comes from: a variable node of the top graph, or output `port` of a RestoreV2
    node (whose `scope` is where its tensor_names input can be read)."""

    kind: str            # "variable" | "restore"
    node: str
    port: int = 0
    scope: "_Scope | None" = None


class _Scope:
    """The top-level graph, or one function body called with its arguments bound to sources."""

    def __init__(self, nodes: dict, functions: dict, args: dict | None = None, parent=None, depth: int = 0):
        self.nodes = nodes                 # name -> NodeDef
        self.functions = functions         # name -> FunctionDef
        self.args = args or {}             # function argument name -> _Source | None
        self.parent = parent
        self.depth = depth

    def split(self, text: str) -> tuple[str, int]:
        """(node, output index) of an input string: 'node:k' at top level, 'node:out_arg:k' or
        'arg' inside functions (the ops followed here have one output list, so k is the index)."""
        parts = text.split(":")
        if len(parts) == 1:
            return parts[0], 0
        return parts[0], int(parts[-1])

    def source(self, text: str, seen: int = 0) -> _Source | None:
        """Follow an input back through Identity-like nodes to a variable or a RestoreV2 output."""
        if seen > 64:
            return None
        name, port = self.split(text)
        if name in self.args and name not in self.nodes:
            return self.args[name]
        node = self.nodes.get(name)
        if node is None:
            return None
        if node.op in VARIABLE_OPS and self.parent is None:
            return _Source("variable", name)
        if node.op in _PASS_THROUGH or node.op == "IdentityN":
            data = [i for i in node.input if not i.startswith("^")]
            index = port if node.op == "IdentityN" else 0
            return self.source(data[index], seen + 1) if index < len(data) else None
        if node.op == "RestoreV2":
            return _Source("restore", name, port, self)
        return None

    def constant(self, text: str):
        """The value of a Const input (e.g. RestoreV2's tensor_names), or None."""
        name, _ = self.split(text)
        node = self.nodes.get(name)
        while node is not None and node.op in _PASS_THROUGH:
            node = self.nodes.get(self.split(node.input[0])[0])
        if node is None or node.op != "Const":
            return None
        return to_ndarray(node.attr["value"].tensor, f"node '{node.name}'")


def checkpoint_keys(meta_graph: MetaGraphDef, source: str) -> dict[str, CheckpointValue]:
    """Variable node name (top-level graph) -> its checkpoint key and slice, from the restore op."""
    graph_def: GraphDef = meta_graph.graph_def
    restore_op = meta_graph.saver_def.restore_op_name.lstrip("^").split(":")[0]
    if not restore_op:
        return {}
    nodes = {n.name: n for n in graph_def.node}
    if restore_op not in nodes:
        raise InvalidGraphError(f"{source}: the saver's restore op '{restore_op}' is not in the graph")
    functions = {f.signature.name: f for f in graph_def.library.function}
    keys: dict[str, CheckpointValue] = {}
    _collect(_Scope(nodes, functions), [restore_op], keys, source)
    # Handles with the same container and shared_name are one variable (TF1 graphs may create a
    # second handle to a variable the saver restores through the first).
    by_resource = {_resource(nodes[name]): key for name, key in keys.items()}
    for node in graph_def.node:
        if node.op == "VarHandleOp" and node.name not in keys and _resource(node) in by_resource:
            keys[node.name] = by_resource[_resource(node)]
    return keys


def _resource(node) -> tuple[bytes, bytes]:
    """(container, shared_name) of a variable node; the node name stands in for an empty shared_name."""
    shared = node.attr["shared_name"].s if "shared_name" in node.attr else b""
    container = node.attr["container"].s if "container" in node.attr else b""
    return container, shared or node.name.encode()


def _collect(scope: _Scope, roots: list[str], keys: dict, source: str) -> None:
    """Walk back from `roots` over data and control inputs; record every assignment of a restored
    value to a variable; descend into called functions with their arguments bound."""
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        node = scope.nodes.get(name)
        if node is None:
            continue
        if node.op in ASSIGN_OPS:
            _record(scope, node, keys, source)
        elif node.op in CALL_OPS and scope.depth < 8:
            function = scope.functions.get(node.attr["f"].func.name)
            if function is not None:
                _collect_function(scope, node, function, keys, source)
        for text in node.input:
            stack.append(scope.split(text.lstrip("^"))[0])


def _collect_function(scope: _Scope, call, function: FunctionDef, keys: dict, source: str) -> None:
    data = [i for i in call.input if not i.startswith("^")]
    args = {arg.name: (scope.source(data[i]) if i < len(data) else None)
            for i, arg in enumerate(function.signature.input_arg)}
    inner = _Scope({n.name: n for n in function.node_def}, scope.functions, args, scope, scope.depth + 1)
    roots = [inner.split(ref)[0] for ref in function.ret.values()] + list(function.control_ret.values())
    _collect(inner, roots, keys, source)


def _record(scope: _Scope, assign, keys: dict, source: str) -> None:
    data = [i for i in assign.input if not i.startswith("^")]
    if len(data) < 2:
        return
    variable, value = scope.source(data[0]), scope.source(data[1])
    if variable is None or variable.kind != "variable" or value is None or value.kind != "restore":
        return
    assert value.scope is not None   # a restore source names the scope it was found in
    restore = value.scope.nodes[value.node]
    restore_inputs = [i for i in restore.input if not i.startswith("^")]
    names = value.scope.constant(restore_inputs[1])
    specs = value.scope.constant(restore_inputs[2]) if len(restore_inputs) > 2 else None
    if names is None or value.port >= names.size:
        raise InvalidGraphError(f"{source}: cannot read the tensor names of restore node '{value.node}'")
    spec = specs.ravel()[value.port] if specs is not None and value.port < specs.size else b""
    keys[variable.node] = CheckpointValue(_text(names.ravel()[value.port]), _text(spec))


def _text(value) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)
