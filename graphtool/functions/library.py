"""Reading a graph's FunctionDefLibrary: find a function, describe its signature, see which nodes
and functions call it, and drop the ones nothing calls any more.

The library stays the proto the file held (Graph.library), so an untouched graph exports it byte
for byte; these helpers only read it, except drop_unreferenced.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import dtypes
from ..errors import InvalidGraphError
from ..proto.attr_value_pb2 import AttrValue
from ..proto.function_pb2 import FunctionDef

# Ops that run a library function named by an attr.
CALL_OPS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})
FUNCTIONAL_OPS = frozenset({"If", "StatelessIf", "While", "StatelessWhile", "Case", "StatelessCase",
                            "SymbolicGradient"}) | CALL_OPS


def find_function(library, name: str, where: str = "") -> FunctionDef:
    """The FunctionDef called `name`; InvalidGraphError naming `where` when the library lacks it."""
    for fdef in library.function:
        if fdef.signature.name == name:
            return fdef
    prefix = f"{where}: " if where else ""
    raise InvalidGraphError(f"{prefix}function '{name}' is not in the graph's function library")


def function_names(library) -> set[str]:
    return {fdef.signature.name for fdef in library.function}


def _names_in_attr(value: AttrValue) -> list[str]:
    which = value.WhichOneof("value")
    if which == "func":
        return [value.func.name] + [n for v in value.func.attr.values() for n in _names_in_attr(v)]
    if which == "list":
        return [f.name for f in value.list.func]
    return []


def called_functions(op: str, attrs, known: set[str]) -> list[str]:
    """Library functions a node (op + attr map) refers to: func attrs, and an op named after one."""
    names = [n for value in attrs.values() for n in _names_in_attr(value)]
    if op in known:
        names.append(op)
    return [n for n in names if n in known]


def referenced_functions(graph) -> set[str]:
    """Every function reachable from the graph's nodes, through function bodies and their gradients."""
    library = graph.library
    known = function_names(library)
    by_name = {fdef.signature.name: fdef for fdef in library.function}
    gradients = {g.function_name: g.gradient_func for g in library.gradient}
    pending = [n for node in graph.nodes for n in called_functions(node.op, node.attrs, known)]
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        for node_def in by_name[name].node_def:
            pending.extend(called_functions(node_def.op, node_def.attr, known))
        if gradients.get(name) in known:
            pending.append(gradients[name])
    return seen


def drop_unreferenced(graph) -> list[str]:
    """Remove library functions nothing calls any more (and their gradient entries); their names."""
    keep = referenced_functions(graph)
    library = graph.library
    dropped = [f.signature.name for f in library.function if f.signature.name not in keep]
    if not dropped:
        return []
    kept = [f for f in library.function if f.signature.name in keep]
    kept_gradients = [g for g in library.gradient if g.function_name in keep]
    del library.function[:]
    library.function.extend(kept)
    del library.gradient[:]
    library.gradient.extend(kept_gradients)
    return dropped


@dataclass
class FunctionSummary:
    """What `inspect` says about one function."""

    name: str
    inputs: list[dict] = field(default_factory=list)     # {"name", "dtype"}
    outputs: list[dict] = field(default_factory=list)
    nodes: int = 0
    stateful: bool = False
    callers: list[str] = field(default_factory=list)      # node names, or 'function/node' inside bodies

    def to_json(self) -> dict:
        return {"name": self.name, "inputs": self.inputs, "outputs": self.outputs, "nodes": self.nodes,
                "stateful": self.stateful, "callers": self.callers}


def _arg_dtype(arg) -> str:
    """An OpDef arg's type as text: 'float32', or the attr that sets it ('T', 'N * T', 'Tlist')."""
    if arg.type_list_attr:
        return arg.type_list_attr
    if arg.type_attr:
        return f"{arg.number_attr} * {arg.type_attr}" if arg.number_attr else arg.type_attr
    name = dtypes.from_enum(arg.type).name if arg.type else "invalid"
    return f"{arg.number_attr} * {name}" if arg.number_attr else name


def summarize_functions(graph) -> list[FunctionSummary]:
    """Name, signature, node count and callers of every library function, in library order."""
    library = graph.library
    known = function_names(library)
    summaries = {}
    for fdef in library.function:
        sig = fdef.signature
        summaries[sig.name] = FunctionSummary(
            sig.name, [{"name": a.name, "dtype": _arg_dtype(a)} for a in sig.input_arg],
            [{"name": a.name, "dtype": _arg_dtype(a)} for a in sig.output_arg], len(fdef.node_def),
            bool(sig.is_stateful))
    for node in graph.nodes:
        for name in called_functions(node.op, node.attrs, known):
            summaries[name].callers.append(node.name)
    for fdef in library.function:
        for node_def in fdef.node_def:
            for name in called_functions(node_def.op, node_def.attr, known):
                summaries[name].callers.append(f"{fdef.signature.name}/{node_def.name}")
    return list(summaries.values())
