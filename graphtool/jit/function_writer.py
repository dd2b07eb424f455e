"""Write a body Graph (the form graphtool/functions/instantiate.py makes: `_Arg` nodes, the
function's nodes, `_Retval` nodes) back as a FunctionDef in a graph's library.

    fdef = add_function(graph.library, "loop_body", body_graph, args, retvals, control_outputs)

The reverse of instantiation: node inputs are spelled the FunctionDef way (`arg`, `node:out_arg:k`,
`^node`), each `_Arg` becomes a signature input (with its `_output_shapes` in arg_attr, so a JIT
sees static shapes), each `_Retval` an output, and nodes run only for their effect become control
outputs. Instantiating the result gives back an equivalent body.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from .. import attrs as attr_codec
from ..errors import InvalidGraphError
from ..ir import Graph, Node, TensorRef
from ..proto.function_pb2 import FunctionDef

_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_]")


def function_name(library, base: str) -> str:
    """A name for a new library function: `base` made a valid identifier, unique in `library`."""
    stem = _NOT_IN_NAME.sub("_", base).strip("_") or "function"
    if not stem[0].isalpha():
        stem = "f_" + stem
    taken = {f.signature.name for f in library.function}
    name, k = stem, 0
    while name in taken:
        k += 1
        name = f"{stem}_{k}"
    return name


def is_stateful(node: Node) -> bool:
    """Whether the node has side effects (an op the registry does not know counts as one)."""
    spec = node.spec
    return True if spec is None else bool(spec.stateful)


def _output_spelling(ref: TensorRef) -> str:
    node = ref.node
    if node.op == "_Arg":
        return node.name
    spec = node.spec
    if spec is None:   # an op only the library knows: instantiation accepts 'node:k'
        return f"{node.name}:{ref.index}"
    for arg_name, ports in spec.output_arg_slots(node).items():
        if ref.index in ports:
            return f"{node.name}:{arg_name}:{ref.index - ports.start}"
    raise InvalidGraphError(f"node '{node.name}' ({node.op}) has no output {ref.index}")


def add_function(library, name: str, body: Graph, args: list[Node], retvals: list[Node],
                 control_outputs: Sequence[Node] = ()) -> FunctionDef:
    """Append the FunctionDef of `body` called `name` (see function_name) to `library`.
    `args` / `retvals` are the body's `_Arg` / `_Retval` nodes in signature order; their names
    become the signature's arg names, so they must be valid identifiers."""
    fdef = FunctionDef()
    sig = fdef.signature
    sig.name = name
    for index, arg in enumerate(args):
        sig.input_arg.add(name=arg.name, type=arg.attr("T").enum)
        if "_output_shapes" in arg.attrs:
            fdef.arg_attr[index].attr["_output_shapes"].CopyFrom(arg.attrs["_output_shapes"])
    for retval in retvals:
        sig.output_arg.add(name=retval.name, type=retval.attr("T").enum)
        fdef.ret[retval.name] = _output_spelling(retval.inputs[0])
    stateful = False
    for node in body.nodes:
        if node.op in ("_Arg", "_Retval"):
            continue
        stateful = stateful or is_stateful(node)
        node_def = fdef.node_def.add(name=node.name, op=node.op, device=node.device)
        node_def.input.extend(_output_spelling(ref) for ref in node.inputs)
        node_def.input.extend("^" + c.name for c in node.control_inputs if c.op != "_Arg")
        for key, value in node.attrs.items():
            node_def.attr[key].CopyFrom(value)
        for field, value in node.extras.items():
            getattr(node_def, field).CopyFrom(value)
    for node in control_outputs:
        sig.control_output.append(node.name)
        fdef.control_ret[node.name] = node.name
    sig.is_stateful = stateful
    library.function.append(fdef)
    return fdef


def surviving(body: Graph, nodes: Iterable[Node]) -> list[Node]:
    """The `nodes` still in `body` (a cond functionalized inside it may have absorbed some)."""
    return [n for n in nodes if body.get(n.name) is n]


def new_body(library) -> Graph:
    """An empty body Graph sharing `library` (nested functional nodes find their functions)."""
    body = Graph()
    body.library = library
    return body


def add_arg(body: Graph, name: str, dtype, index: int, shape=None) -> Node:
    node = body.add_node("_Arg", body.unique_name(name), attrs={"T": dtype, "index": index})
    if shape is not None and shape.dims is not None:
        node.attrs["_output_shapes"] = attr_codec.encode([shape], "list(shape)")
    return node


def add_retval(body: Graph, name: str, ref: TensorRef, dtype, index: int) -> Node:
    return body.add_node("_Retval", body.unique_name(name), inputs=[ref], attrs={"T": dtype, "index": index})
