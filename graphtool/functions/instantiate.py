"""Instantiate a FunctionDef as a body Graph: one `_Arg` per input tensor, the function's nodes,
one `_Retval` per output tensor (as TensorFlow's FunctionDefToBodyHelper does).

FunctionDef node inputs are spelled differently from a GraphDef's:

    x                 input arg `x` (every tensor of it, for a list arg; `x:k` for one of them)
    mul:z:0           output arg `z` of node `mul`, element 0 (ports come from the op's signature)
    split:output      every tensor of output arg `output` of node `split`
    ^node             a control input

Attrs may be placeholders (`$T`) resolved from the caller's attrs: the attr map of the `func`
attr that names the function, or the calling node's attrs for a node whose op is the function.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import dtypes
from ..errors import InvalidGraphError
from ..ir import Graph, Node, TensorRef
from ..proto.attr_value_pb2 import AttrValue
from .library import find_function

MAX_CALL_DEPTH = 64


@dataclass
class FunctionBody:
    name: str
    graph: Graph
    args: list[Node] = field(default_factory=list)          # _Arg nodes, in input order
    retvals: list[Node] = field(default_factory=list)       # _Retval nodes, in output order
    control_outputs: list[Node] = field(default_factory=list)   # control_ret: run for their effect

    @property
    def arg_dtypes(self):
        return [a.attr("T") for a in self.args]

    @property
    def output_dtypes(self):
        return [r.attr("T") for r in self.retvals]


class _Resolver:
    """Attr values of one instantiation: the caller's attrs, then the signature's defaults."""

    def __init__(self, fdef, call_attrs, where: str):
        self.values: dict[str, AttrValue] = {}
        for attr in fdef.signature.attr:
            if attr.HasField("default_value"):
                self.values[attr.name] = attr.default_value
        self.values.update(call_attrs or {})
        self.where = where

    def resolve(self, value: AttrValue, what: str) -> AttrValue:
        which = value.WhichOneof("value")
        if which == "placeholder":
            if value.placeholder not in self.values:
                raise InvalidGraphError(f"{self.where}: {what} is placeholder '${value.placeholder}' "
                                        f"but the caller sets no attr '{value.placeholder}'")
            return self.values[value.placeholder]
        if which == "func" and any(v.WhichOneof("value") == "placeholder" for v in value.func.attr.values()):
            resolved = AttrValue()
            resolved.CopyFrom(value)
            for key, inner in value.func.attr.items():
                resolved.func.attr[key].CopyFrom(self.resolve(inner, what))
            return resolved
        return value

    def get(self, name: str, what: str):
        from .. import attrs as attr_codec

        if name not in self.values:
            raise InvalidGraphError(f"{self.where}: {what} needs attr '{name}', which the caller does not set")
        return attr_codec.decode(self.values[name], f"{self.where} attr '{name}'")


def arg_dtypes(arg, resolve) -> list:
    """The dtypes of one OpDef arg (several for a list arg) given an attr lookup `resolve(name)`."""
    if arg.type_list_attr:
        return list(resolve(arg.type_list_attr))
    dtype = resolve(arg.type_attr) if arg.type_attr else dtypes.from_enum(arg.type)
    count = int(resolve(arg.number_attr)) if arg.number_attr else 1
    return [dtype] * count


def signature_slots(args, resolve) -> dict[str, range]:
    """Arg name -> the ports it occupies, for a function's signature args."""
    slots, start = {}, 0
    for arg in args:
        count = len(arg_dtypes(arg, resolve))
        slots[arg.name] = range(start, start + count)
        start += count
    return slots


def instantiate(library, name: str, call_attrs=None, caller: str = "") -> FunctionBody:
    """The body Graph of function `name` called with `call_attrs` (a name -> AttrValue map).
    InvalidGraphError, naming the function and node, for a malformed body."""
    where = f"function '{name}'" + (f" (called by '{caller}')" if caller else "")
    fdef = find_function(library, name, caller and f"node '{caller}'")
    resolver = _Resolver(fdef, call_attrs, where)
    graph = Graph()
    graph.library = library   # shared, not copied: bodies read it (nested calls), never change it
    body = FunctionBody(name, graph)
    # Input args: name -> the _Arg nodes' outputs.
    arg_refs: dict[str, list[TensorRef]] = {}
    for arg in fdef.signature.input_arg:
        types = arg_dtypes(arg, lambda a: resolver.get(a, f"input arg '{arg.name}'"))
        refs = []
        for k, dtype in enumerate(types):
            arg_name = arg.name if len(types) == 1 and not arg.number_attr and not arg.type_list_attr \
                else f"{arg.name}_{k}"
            node = graph.add_node("_Arg", graph.unique_name(arg_name),
                                  attrs={"T": dtype, "index": len(body.args)})
            index = len(body.args)
            if index in fdef.arg_attr and "_output_shapes" in fdef.arg_attr[index].attr:
                node.attrs["_output_shapes"] = fdef.arg_attr[index].attr["_output_shapes"]
            body.args.append(node)
            refs.append(node.output(0))
        arg_refs[arg.name] = refs

    nodes: dict[str, Node] = {}
    for node_def in fdef.node_def:
        node_where = f"{where}: node '{node_def.name}'"
        if not node_def.name or node_def.name in nodes or node_def.name in arg_refs:
            raise InvalidGraphError(f"{node_where}: empty or duplicate node name")
        if node_def.op in ("_Arg", "_Retval"):
            # The body's args and returns are the signature's; instantiation makes these nodes, and
            # one more in the body would be neither an input nor copied when inlining.
            raise InvalidGraphError(f"{node_where}: op '{node_def.op}' is not allowed in a function body "
                                    f"(its inputs and outputs come from the signature)")
        node = graph.add_node(node_def.op, node_def.name, device=node_def.device)
        for key in sorted(node_def.attr):
            node.attrs[key] = resolver.resolve(node_def.attr[key], f"node '{node_def.name}' attr '{key}'")
        if node_def.HasField("experimental_debug_info"):
            node.extras["experimental_debug_info"] = node_def.experimental_debug_info
        nodes[node_def.name] = node
    slots = {name_: _output_slots(node, library, where, fdef) for name_, node in nodes.items()}
    for node_def in fdef.node_def:
        node = nodes[node_def.name]
        for text in node_def.input:
            if text.startswith("^"):
                producer = nodes.get(text[1:])
                if producer is None and text[1:] in arg_refs:
                    producer = arg_refs[text[1:]][0].node
                if producer is None:
                    raise InvalidGraphError(f"{where}: node '{node_def.name}' has control input '{text}' "
                                            f"naming no node of the function")
                node.add_control_input(producer)
                continue
            for ref in _resolve_input(text, arg_refs, nodes, slots, f"{where}: node '{node_def.name}'"):
                node.add_input(ref)

    for index, arg in enumerate(fdef.signature.output_arg):
        if arg.name not in fdef.ret:
            raise InvalidGraphError(f"{where}: output '{arg.name}' has no entry in ret")
        refs = _resolve_input(fdef.ret[arg.name], arg_refs, nodes, slots, f"{where}: ret '{arg.name}'")
        types = arg_dtypes(arg, lambda a: resolver.get(a, f"output arg '{arg.name}'"))
        if len(refs) != len(types):
            raise InvalidGraphError(f"{where}: ret '{arg.name}' gives {len(refs)} tensor(s) for "
                                    f"{len(types)} declared")
        for ref, dtype in zip(refs, types):
            retval = graph.add_node("_Retval", graph.unique_name(f"{arg.name}_RetVal"), inputs=[ref],
                                    attrs={"T": dtype, "index": len(body.retvals)})
            body.retvals.append(retval)
    for control_name in fdef.signature.control_output:
        target = fdef.control_ret.get(control_name, control_name)
        if target not in nodes:
            raise InvalidGraphError(f"{where}: control output '{control_name}' names no node ('{target}')")
        body.control_outputs.append(nodes[target])
    return body


def _output_slots(node: Node, library, where: str, fdef) -> dict[str, range]:
    """Output arg name -> ports of a body node, from the registry or (a call by op name) the callee's
    signature; for an op dftool does not know, from how the body reads it (_opaque_slots)."""
    spec = node.spec
    if spec is not None:
        try:
            return spec.output_arg_slots(node)
        except Exception as exc:
            raise InvalidGraphError(f"{where}: node '{node.name}' ({node.op}): cannot size its outputs "
                                    f"({' '.join(str(exc).split())})") from None
    for fdef in library.function:
        if fdef.signature.name == node.op:
            from .. import attrs as attr_codec

            def lookup(attr_name):
                return attr_codec.decode(node.attrs[attr_name]) if attr_name in node.attrs else \
                    _signature_default(fdef, attr_name, where, node)
            slots = signature_slots(fdef.signature.output_arg, lookup)
            node._num_outputs_hint = max([r.stop for r in slots.values()], default=0) or 1
            return slots
    return _opaque_slots(node, fdef, where)


def _opaque_slots(node: Node, fdef, where: str) -> dict[str, range]:
    """The output args of an opaque body node (graphtool.ops.opaque), as far as the body tells:
    inputs and rets spell its outputs 'node:arg:k'. One arg name gives the layout (ports 0..k, or
    as many as `_output_shapes` lists); several would need the op's signature for their order."""
    used: dict[str, int] = {}
    texts = [t for n in fdef.node_def for t in n.input] + list(fdef.ret.values())
    for text in texts:
        parts = text.split(":")
        if parts[0] == node.name and len(parts) >= 2 and not parts[1].isdigit():
            index = int(parts[2]) if len(parts) == 3 and parts[2].isdigit() else 0
            used[parts[1]] = max(used.get(parts[1], 0), index + 1)
    if len(used) > 1:
        raise InvalidGraphError(f"{where}: node '{node.name}' uses op '{node.op}', which dftool does not "
                                f"know, through output args {', '.join(sorted(used))} whose order only its "
                                f"signature gives")
    count = max([*used.values(), len(node.attrs["_output_shapes"].list.shape)
                 if "_output_shapes" in node.attrs else 0, 1])
    node._num_outputs_hint = max(node._num_outputs_hint, count)
    return {name: range(count) for name in used} or {"output": range(count)}


def _signature_default(fdef, attr_name, where, node):
    from .. import attrs as attr_codec

    for attr in fdef.signature.attr:
        if attr.name == attr_name and attr.HasField("default_value"):
            return attr_codec.decode(attr.default_value)
    raise InvalidGraphError(f"{where}: node '{node.name}' calls '{node.op}' without its attr '{attr_name}'")


def _resolve_input(text: str, arg_refs, nodes, slots, where: str) -> list[TensorRef]:
    parts = text.split(":")
    head = parts[0]
    if head in arg_refs and head not in nodes:
        refs = arg_refs[head]
        if len(parts) == 1:
            return list(refs)
        if len(parts) == 2 and parts[1].isdigit() and int(parts[1]) < len(refs):
            return [refs[int(parts[1])]]
        raise InvalidGraphError(f"{where}: input '{text}' is not a valid reference to input arg '{head}'")
    node = nodes.get(head)
    if node is None:
        raise InvalidGraphError(f"{where}: input '{text}' names no node or input arg of the function")
    if len(parts) == 1:
        return [node.output(0)]
    if len(parts) == 2 and parts[1].isdigit():   # GraphDef spelling, tolerated
        return [node.output(int(parts[1]))]
    out_slots = slots[head].get(parts[1])
    if out_slots is None:
        known = ", ".join(slots[head]) or "none"
        raise InvalidGraphError(f"{where}: input '{text}': node '{head}' ({node.op}) has no output arg "
                                f"'{parts[1]}' (its output args: {known})")
    if len(parts) == 2:
        return [node.output(p) for p in out_slots]
    if len(parts) == 3 and parts[2].isdigit() and int(parts[2]) < len(out_slots):
        return [node.output(out_slots[int(parts[2])])]
    raise InvalidGraphError(f"{where}: input '{text}' is out of range for output arg '{parts[1]}' of "
                            f"'{head}' ({len(out_slots)} tensor(s))")
