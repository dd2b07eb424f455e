"""What functionalizing loops and conds shares: cutting a set of nodes out of a graph into a body
Graph whose boundary tensors become `_Arg`s, the static shapes recorded before any rewrite, and the
exception a rewrite raises when a structure cannot be converted (it leaves the graph untouched).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from .. import attrs as attr_codec
from ..ir import Graph, Node, TensorRef
from ..shapes import Shape


class Unconvertible(Exception):
    """A structure the pass leaves as it is; the message is the reason the report gives."""


class ShapeBook:
    """Static shapes by tensor name, inferred once on the original graph: rewritten nodes keep
    the names of the nodes they replace, so the shapes stay findable (unknown when not)."""

    def __init__(self, graph: Graph):
        from ..shape_inference import infer_shapes

        self._shapes: dict[tuple[str, int], Shape] = {}
        try:
            result = infer_shapes(graph)
        except Exception:   # shapes are a help for the JIT, never a reason to refuse
            return
        for node in graph.nodes:
            try:
                for index, info in enumerate(result.outputs(node)):
                    self._shapes[(node.name, index)] = info.shape
            except Exception:
                continue

    def shape(self, ref: TensorRef) -> Shape:
        if ref.node.op == "_Arg" and "_output_shapes" in ref.node.attrs:
            declared = attr_codec.decode(ref.node.attrs["_output_shapes"])
            return Shape.of(declared[0]) if declared else Shape.unknown()
        return self._shapes.get((ref.node.name, ref.index), Shape.unknown())


def backward_closure(roots: Iterable[Node], inside: Callable[[Node], bool]) -> set[Node]:
    """The roots that are `inside` and every `inside` node they depend on (data or control),
    not crossing nodes that are not `inside`."""
    found: set[Node] = set()
    pending = [r for r in roots if inside(r)]
    while pending:
        node = pending.pop()
        if node in found:
            continue
        found.add(node)
        pending.extend(p for p in node.input_nodes() if p not in found and inside(p))
    return found


def in_graph_order(graph: Graph, nodes: set[Node]) -> list[Node]:
    return [n for n in graph.nodes if n in nodes]


def copy_nodes(body: Graph, nodes: list[Node], args: dict[TensorRef, TensorRef],
               dropped_controls: set[Node], what: str) -> dict[Node, Node]:
    """Copy `nodes` into `body`. A data input from outside the set must be a key of `args` (it
    reads the body's value instead); a control input from outside must be in `dropped_controls`
    (the machinery the function replaces). Unconvertible otherwise."""
    mapping: dict[Node, Node] = {}
    for node in nodes:
        copy = body.add_node(node.op, body.unique_name(node.name), device=node.device)
        copy.attrs.update(node.attrs)
        copy.extras.update(node.extras)
        copy._num_outputs_hint = node._num_outputs_hint
        mapping[node] = copy
    for node in nodes:
        copy = mapping[node]
        for ref in node.inputs:
            if ref.node in mapping:
                copy.add_input(TensorRef(mapping[ref.node], ref.index))
            elif ref in args:
                copy.add_input(args[ref])
            else:
                raise Unconvertible(f"{what}: node '{node.name}' ({node.op}) reads '{ref.name}' "
                                    f"({ref.node.op}), which is neither in the {what} nor one of its inputs")
        for control in node.control_inputs:
            if control in mapping:
                copy.add_control_input(mapping[control])
            elif control not in dropped_controls:
                raise Unconvertible(f"{what}: node '{node.name}' ({node.op}) waits for '{control.name}' "
                                    f"({control.op}) outside the {what}")
    return mapping


def stand_in(graph: Graph, old: Node, ref: TensorRef, dtype) -> Node:
    """An Identity of `ref` that takes over the data users of `old:0` and the `^old` users; once
    `old` is removed, rename it to `old`'s name so fetches of it still work."""
    new = graph.add_node("Identity", graph.unique_name(f"{old.name}/functionalized"), inputs=[ref],
                         attrs={"T": dtype}, device=old.device)
    graph.replace_all_uses_with(old.output(0), new.output(0))
    graph.move_control_uses(old, new)
    return new


def replace_keeping_names(graph: Graph, renames: list[tuple[Node, Node]], carriers: list[Node]) -> None:
    """Finish a rewrite: drop `carriers` (the old value's pass-through nodes, innermost last),
    then each (new, old) pair's old node, giving its name to the new one (so fetches of the old
    name still work). The old nodes' inputs must already be cleared or be going."""
    for node in reversed(carriers):
        graph.remove_node(node)
    for new, old in renames:
        name = old.name
        graph.remove_node(old)
        graph.rename(new, name)
