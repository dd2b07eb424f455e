"""Copy an instantiated function body into a host graph, in place of a call.

    inlined = inline_body(host, body, inputs=[x, y], controls=[pivot], scope="call", device=dev)
    inlined.outputs           # the host tensors the body returns (one per _Retval)
    inlined.control_outputs   # the host nodes the body runs for their effect (control_ret)

Each input goes through an Identity named after its arg (`call/x`), which carries the control
inputs: the control inputs of the call order the whole inlined body. Body nodes without any input
(Consts, mostly) hang on those Identities through one NoOp (`call/input_control_node`), so a body
inlined in a cond branch is dead with the branch and one inlined in a loop body lives in the loop's
frame. Inlined nodes are named under `scope/`, keep their own device or take `device`, and the
frames of loops inside the body are renamed under the scope so every frame name stays unique.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Graph, Node, TensorRef
from ..placement.colocation import class_entries
from .instantiate import FunctionBody

_ENTER_OPS = ("Enter", "RefEnter")
_LOC = "loc:@"


@dataclass
class InlinedBody:
    outputs: list[TensorRef] = field(default_factory=list)
    control_outputs: list[Node] = field(default_factory=list)
    inputs: list[Node] = field(default_factory=list)    # the input Identities
    anchor: Node | None = None                          # what input-less body nodes depend on


def inline_body(host: Graph, body: FunctionBody, inputs: list[TensorRef], controls: list[Node],
                scope: str, device: str = "", anchor: Node | None = None) -> InlinedBody:
    """Copy `body` (already lowered: no functional ops left) into `host`; see the module docstring.
    `anchor`, when given, is what input-less body nodes depend on instead of the input NoOp (a
    cond's pivot, a loop's iteration pivot: alive exactly when the body runs, waiting for no
    input the node does not read)."""
    if len(inputs) != len(body.args):
        raise ValueError(f"function '{body.name}' takes {len(body.args)} input(s), given {len(inputs)}")
    result = InlinedBody(anchor=anchor)
    mapping: dict[Node, Node] = {}
    for arg, ref in zip(body.args, inputs):
        identity = host.add_node("Identity", host.unique_name(f"{scope}/{arg.name}"), inputs=[ref],
                                 control_inputs=controls, attrs={"T": arg.attr("T")}, device=device)
        mapping[arg] = identity
        result.inputs.append(identity)
    copied = [n for n in body.graph.nodes if n.op not in ("_Arg", "_Retval")]
    for node in copied:
        new = host.add_node(node.op, host.unique_name(f"{scope}/{node.name}"), device=node.device or device)
        new.attrs.update(node.attrs)
        new.extras.update(node.extras)
        new._num_outputs_hint = node._num_outputs_hint   # for ops only the library knows
        if node.op in _ENTER_OPS:
            new.set_attr("frame_name", f"{scope}/{node.attr('frame_name')}")
        mapping[node] = new
    for node in copied:   # colocation with a body node means its inlined copy
        if "_class" in node.attrs:
            groups = class_entries(node) or []   # (a list: the node has the attr)
            renamed = [_inlined_entry(g, body.graph, mapping) for g in groups]
            if renamed != groups:
                mapping[node].set_attr("_class", renamed, "list(string)")
    for node in copied:
        new = mapping[node]
        for ref in node.inputs:
            new.add_input(TensorRef(mapping[ref.node], ref.index))
        for control in node.control_inputs:
            new.add_control_input(mapping[control])
        if not node.inputs and not node.control_inputs and (result.inputs or controls):
            new.add_control_input(_anchor(host, body, result, controls, scope, device))
    result.outputs = [TensorRef(mapping[r.inputs[0].node], r.inputs[0].index) for r in body.retvals]
    result.control_outputs = [mapping[n] for n in body.control_outputs]
    return result


def _anchor(host: Graph, body: FunctionBody, result: InlinedBody, controls: list[Node], scope: str,
            device: str) -> Node:
    """The NoOp input-less body nodes wait for: the inputs the body reads (all of them if it reads
    none) and the control inputs."""
    if result.anchor is None:
        used = [identity for arg, identity in zip(body.args, result.inputs) if arg.has_users]
        waits = [*(used or result.inputs), *controls]
        if len(waits) == 1:
            result.anchor = waits[0]
        else:
            result.anchor = host.add_node("NoOp", host.unique_name(f"{scope}/input_control_node"),
                                          control_inputs=waits, device=device)
    return result.anchor


def _inlined_entry(entry: str, body_graph, mapping: dict[Node, Node]) -> str:
    """A `_class` entry of a body node: `loc:@X` names X's inlined copy where X was copied."""
    if entry.startswith(_LOC):
        original = body_graph.get(entry[len(_LOC):])
        if original is not None and original in mapping:
            return _LOC + mapping[original].name
    return entry
