"""Opaque nodes: nodes whose op the registry does not know (a custom op, an op family dftool lacks).

A graph holding them still loads: the node keeps its inputs and attrs verbatim and round-trips
exactly. What the registry would say about its outputs is read off the graph instead:

- how many: the highest port any consumer reads, or the length of `_output_shapes` if longer;
- shapes: `_output_shapes` (TensorFlow writes them with as_graph_def(add_shapes=True)), else unknown;
- dtypes: what a known consumer's signature expects on that edge, else a list(type) attr as long
  as the outputs (Tout, output_types, ...), else a single type attr (T, dtype, ...), else unknown.

Commands that only read or rearrange a graph (inspect, prune, place, partition, optimize) work
around opaque nodes; commands that must execute or differentiate one refuse with one line naming
every unknown op they would need (require_known).
"""
from __future__ import annotations

from collections import Counter

from .. import dtypes
from ..dtypes import DType
from ..errors import InvalidGraphError
from . import registry

# Attrs that, in TensorFlow's op definitions, type all outputs at once (checked in this order).
_LIST_TYPE_ATTRS = ("Tout", "output_types", "out_types", "Toutputs", "dtypes", "component_types")
_TYPE_ATTRS = ("out_type", "Tout", "output_type", "dtype", "DstT", "T", "type")


def is_opaque(node) -> bool:
    """Neither a registered op nor a call of a library function by its name."""
    return registry.lookup(node.op) is None and node.op not in _function_names(node.graph)


def _function_names(graph) -> set[str]:
    return {f.signature.name for f in graph.library.function} if graph is not None else set()


def declared_shapes(node) -> list | None:
    """The node's `_output_shapes` hint as Shapes, or None when absent or malformed."""
    from ..shapes import Shape

    if "_output_shapes" not in node.attrs:
        return None
    try:
        return [Shape.of(s) for s in node.attr("_output_shapes")]
    except Exception:
        return None


def num_outputs(node) -> int:
    """Outputs as far as the graph tells: consumers' ports and `_output_shapes`."""
    shapes = declared_shapes(node)
    return max(node._num_outputs_hint, len(shapes) if shapes is not None else 0)


def output_dtypes(node) -> list[DType]:
    """One dtype per output; dtypes.INVALID where nothing in the graph says."""
    count = node.num_outputs
    found: list[DType | None] = [None] * count
    for consumer, slot in node.uses():
        spec = registry.lookup(consumer.op)
        if spec is None:
            continue
        try:
            want = spec.input_dtypes(consumer)[slot]
        except Exception:
            continue
        port = consumer.inputs[slot].index
        if isinstance(want, DType) and port < count and found[port] is None:
            found[port] = want.base
    fallback = _attr_dtypes(node, count)
    return [f if f is not None else (fallback[i] if fallback else dtypes.INVALID)
            for i, f in enumerate(found)]


def dtype_of(ref) -> DType:
    """The dtype of any tensor: from the registry for known ops, as above for opaque ones."""
    spec = registry.lookup(ref.node.op)
    dtypes_out = spec.output_dtypes(ref.node) if spec is not None else output_dtypes(ref.node)
    return dtypes_out[ref.index] if ref.index < len(dtypes_out) else dtypes.INVALID


def _attr_dtypes(node, count: int) -> list[DType] | None:
    for name in _LIST_TYPE_ATTRS:
        value = _decoded(node, name)
        if isinstance(value, list) and len(value) == count and all(isinstance(v, DType) for v in value):
            return value
    for name in _TYPE_ATTRS:
        value = _decoded(node, name)
        if isinstance(value, DType):
            return [value] * count
    return None


def _decoded(node, name: str):
    if name not in node.attrs:
        return None
    try:
        return node.attr(name)
    except Exception:
        return None


# --- refusing to execute ----------------------------------------------------------------------

def unknown_ops(nodes) -> dict[str, list[str]]:
    """Unknown op -> the names of the nodes using it, most frequent op first."""
    found: dict[str, list[str]] = {}
    calls: dict[object, set[str]] = {}   # graph -> its library's function names, looked up once
    for node in nodes:
        if registry.lookup(node.op) is not None:
            continue
        if node.graph not in calls:
            calls[node.graph] = _function_names(node.graph)
        if node.op not in calls[node.graph]:
            found.setdefault(node.op, []).append(node.name)
    counts = Counter({op: len(names) for op, names in found.items()})
    return {op: sorted(found[op]) for op, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))}


def unknown_ops_in_functions(library) -> dict[str, list[str]]:
    """Unknown op -> 'node (in function)' for the nodes of library function bodies whose op is
    neither registered nor a library function (a call by op name)."""
    names = {f.signature.name for f in library.function}
    found: dict[str, list[str]] = {}
    for function in library.function:
        for node_def in function.node_def:
            if node_def.op not in names and registry.lookup(node_def.op) is None:
                found.setdefault(node_def.op, []).append(f"{node_def.name} (in {function.signature.name})")
    return found


def merge(*found: dict[str, list[str]]) -> dict[str, list[str]]:
    """Several unknown_ops() results as one, most frequent op first."""
    merged: dict[str, list[str]] = {}
    for part in found:
        for op, names in part.items():
            merged.setdefault(op, []).extend(names)
    return dict(sorted(merged.items(), key=lambda kv: (-len(kv[1]), kv[0])))


def called_functions(node, library) -> set[str]:
    """Library functions a node calls: by op name, or through func / list(func) attrs (If's
    branches, While's cond and body, a PartitionedCall's f)."""
    names = {f.signature.name for f in library.function}
    called = {node.op} & names
    for value in node.attrs.values():
        if value.HasField("func"):
            called.add(value.func.name)
        elif value.HasField("list"):
            called.update(f.name for f in value.list.func)
    return called & names


def unknown_ops_by_function(library) -> dict[str, set[str]]:
    """Function name -> the unknown ops its body needs, through the functions it calls too."""
    bodies = {f.signature.name: f for f in library.function}
    direct: dict[str, set[str]] = {}
    calls: dict[str, set[str]] = {}
    for name, function in bodies.items():
        direct[name] = {n.op for n in function.node_def if n.op not in bodies and registry.lookup(n.op) is None}
        calls[name] = set()
        for node_def in function.node_def:
            calls[name] |= {node_def.op} & set(bodies)
            for value in node_def.attr.values():
                if value.HasField("func"):
                    calls[name].add(value.func.name)
                elif value.HasField("list"):
                    calls[name].update(f.name for f in value.list.func)
        calls[name] &= set(bodies)
    result = {}
    for name in bodies:
        seen, stack, ops = {name}, [name], set()
        while stack:
            current = stack.pop()
            ops |= direct[current]
            for callee in calls[current] - seen:
                seen.add(callee)
                stack.append(callee)
        result[name] = ops
    return result


def describe(found: dict[str, list[str]], max_names: int = 3) -> str:
    """'Cholesky (2 nodes: chol, chol_inv), Qr (1 node: qr)'."""
    parts = []
    for op, names in found.items():
        shown = ", ".join(f"'{n}'" for n in names[:max_names]) + (", ..." if len(names) > max_names else "")
        parts.append(f"{op} ({len(names)} node{'s' if len(names) != 1 else ''}: {shown})")
    return ", ".join(parts)


def require_known(nodes, action: str, hint: str | None = None, source: str | None = None) -> None:
    """Raise InvalidGraphError (exit 3) naming every unknown op among `nodes`, which `action`
    ("run the fetches", "differentiate y") needs; `source` (the file) prefixes the message."""
    found = unknown_ops(nodes)
    if not found:
        return
    total = sum(len(names) for names in found.values())
    raise InvalidGraphError(
        (f"{source}: " if source else "") + f"cannot {action}: {total} node(s) of {len(found)} op type(s) dftool does not know are needed: "
        f"{describe(found)}",
        hint=hint or "prune the graph to fetches that do not need them (dftool prune IN OUT --fetch T)")
