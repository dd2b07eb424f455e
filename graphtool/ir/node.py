"""Node and TensorRef: the IR's vertices and the values flowing along its edges.

A Node's data inputs are TensorRefs (producer node, output port); its control inputs are Nodes.
Every Node also knows its users (data uses as (consumer, input slot), control uses as consumers).
Only the mutators here change those links, and they change both ends at once, so the producer and
consumer views can never disagree.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, NamedTuple

from .. import attrs as attr_codec
from ..errors import InvalidGraphError
from ..proto.attr_value_pb2 import AttrValue

if TYPE_CHECKING:
    from .graph import Graph


class TensorRef(NamedTuple):
    """Output `index` of `node`. Hashable; two refs to the same output are equal."""

    node: "Node"
    index: int

    @property
    def name(self) -> str:
        """TensorFlow's spelling: 'node' for output 0, else 'node:k'."""
        return self.node.name if self.index == 0 else f"{self.node.name}:{self.index}"

    @property
    def full_name(self) -> str:
        """Always with the port: 'node:k'."""
        return f"{self.node.name}:{self.index}"

    def __repr__(self) -> str:
        from .describe import tensor_repr

        return tensor_repr(self)


class Node:
    """One operation in a Graph. Create nodes with Graph.add_node, not directly."""

    __slots__ = ("graph", "_name", "op", "device", "attrs", "_inputs", "_control_inputs",
                 "_uses", "_control_uses", "extras", "_num_outputs_hint")

    def __init__(self, graph: "Graph", name: str, op: str, device: str = ""):
        self.graph = graph
        self._name = name
        self.op = op
        self.device = device
        # name -> AttrValue proto, in the file's order; decoded through attr()/set_attr().
        self.attrs: dict[str, AttrValue] = {}
        self._inputs: list[TensorRef] = []
        self._control_inputs: list[Node] = []
        # Insertion-ordered sets: dicts with None values keep iteration deterministic.
        self._uses: dict[tuple[Node, int], None] = {}
        self._control_uses: dict[Node, None] = {}
        # NodeDef fields the IR does not interpret (debug info, full type), kept for export.
        self.extras: dict[str, object] = {}
        # For ops the registry does not know (opaque nodes): the most outputs the graph refers to.
        self._num_outputs_hint = 1

    def __repr__(self) -> str:
        from .describe import node_repr

        return node_repr(self)

    # Nodes are compared by identity (two nodes may share a name only transiently, never in a graph).
    __hash__ = object.__hash__

    @property
    def name(self) -> str:
        return self._name

    # --- outputs ------------------------------------------------------------------------------
    @property
    def spec(self):
        """The registered OpSpec, or None for an op the registry does not know."""
        from ..ops import registry

        return registry.lookup(self.op)

    @property
    def num_outputs(self) -> int:
        spec = self.spec
        if spec is not None:
            try:
                return spec.num_outputs(self)
            except Exception:  # malformed attrs: verify() reports them; do not crash here
                pass
            return self._num_outputs_hint
        from ..ops import opaque

        return opaque.num_outputs(self)

    def output(self, index: int = 0) -> TensorRef:
        return TensorRef(self, index)

    @property
    def outputs(self) -> list[TensorRef]:
        return [TensorRef(self, i) for i in range(self.num_outputs)]

    # --- attrs --------------------------------------------------------------------------------
    def attr(self, name: str, default=attr_codec.SCALAR_KINDS):
        """The decoded value of attr `name`, falling back to the op's registered default (or to
        `default` when given). KeyError when there is neither."""
        spec = self.spec
        if name in self.attrs:
            value = self.attrs[name]
            declared = spec.attrs.get(name) if spec is not None else None
            # Every reader (shape functions, kernels, passes) may assume the declared kind: a
            # type attr holding a func or a tensor holding a string is the input's fault.
            if declared is not None and (problem := declared.kind_problem(value)):
                raise InvalidGraphError(f"node '{self._name}' ({self.op}): {problem}")
            return attr_codec.decode(value, f"node '{self._name}' attr '{name}'")
        if spec is not None and name in spec.attrs and spec.attrs[name].has_default:
            return spec.attrs[name].default
        if default is not attr_codec.SCALAR_KINDS:
            return default
        raise KeyError(f"node '{self._name}' ({self.op}) has no attr '{name}'")

    def has_attr(self, name: str) -> bool:
        return name in self.attrs

    def set_attr(self, name: str, value, kind: str | None = None) -> None:
        """Set attr `name`; the attr type comes from the registry when the op declares it."""
        if kind is None and not isinstance(value, AttrValue):
            spec = self.spec
            if spec is not None and name in spec.attrs:
                kind = spec.attrs[name].kind
        self.attrs[name] = attr_codec.encode(value, kind)

    def del_attr(self, name: str) -> None:
        self.attrs.pop(name, None)

    # --- inputs -------------------------------------------------------------------------------
    @property
    def inputs(self) -> tuple[TensorRef, ...]:
        return tuple(self._inputs)

    @property
    def control_inputs(self) -> tuple["Node", ...]:
        return tuple(self._control_inputs)

    def input_nodes(self) -> Iterator["Node"]:
        """Producers of data inputs, then of control inputs (with repeats)."""
        for ref in self._inputs:
            yield ref.node
        yield from self._control_inputs

    def add_input(self, ref: TensorRef) -> None:
        self._check_same_graph(ref.node)
        self._inputs.append(ref)
        ref.node._uses[(self, len(self._inputs) - 1)] = None

    def set_input(self, slot: int, ref: TensorRef) -> None:
        """Rewire data input `slot` to read `ref`."""
        self._check_same_graph(ref.node)
        old = self._inputs[slot]
        del old.node._uses[(self, slot)]
        self._inputs[slot] = ref
        ref.node._uses[(self, slot)] = None

    def set_inputs(self, refs: list[TensorRef]) -> None:
        """Replace all data inputs at once."""
        for ref in refs:
            self._check_same_graph(ref.node)
        self._clear_data_inputs()
        for ref in refs:
            self.add_input(ref)

    def remove_input(self, slot: int) -> None:
        """Drop data input `slot`; later slots shift down by one."""
        refs = list(self._inputs)
        del refs[slot]
        self.set_inputs(refs)

    def add_control_input(self, node: "Node") -> None:
        """Add `^node` unless it is already a control input."""
        self._check_same_graph(node)
        if self in node._control_uses:
            return
        self._control_inputs.append(node)
        node._control_uses[self] = None

    def remove_control_input(self, node: "Node") -> None:
        self._control_inputs.remove(node)
        del node._control_uses[self]

    def clear_inputs(self) -> None:
        """Detach every data and control input (used before removing a node)."""
        self._clear_data_inputs()
        for node in list(self._control_inputs):
            self.remove_control_input(node)

    def _clear_data_inputs(self) -> None:
        for slot, ref in enumerate(self._inputs):
            del ref.node._uses[(self, slot)]
        self._inputs.clear()

    def _check_same_graph(self, other: "Node") -> None:
        if other.graph is not self.graph:
            raise ValueError(f"node '{other.name}' belongs to another graph than '{self._name}'")

    # --- users --------------------------------------------------------------------------------
    def uses(self, port: int | None = None) -> list[tuple["Node", int]]:
        """(consumer, input slot) for every data use of this node's outputs (of `port` only if given)."""
        if port is None:
            return list(self._uses)
        return [(n, s) for (n, s) in self._uses if n._inputs[s].index == port]

    @property
    def control_uses(self) -> list["Node"]:
        """Nodes that have `^self` among their control inputs."""
        return list(self._control_uses)

    def consumers(self) -> list["Node"]:
        """Distinct nodes that use this node, by data or control edge."""
        seen: dict[Node, None] = {}
        for node, _ in self._uses:
            seen[node] = None
        for node in self._control_uses:
            seen[node] = None
        return list(seen)

    @property
    def has_users(self) -> bool:
        return bool(self._uses) or bool(self._control_uses)
