"""Graph: the in-memory IR every command works on.

Nodes are kept by unique name in insertion order (so export reproduces the file's order). The
producer/consumer links live on the nodes and are only changed through Node's and Graph's mutators.
"""
from __future__ import annotations

import re
from collections import deque
from typing import Iterable, Iterator

from ..errors import InvalidGraphError, UsageError
from ..suggest import did_you_mean
from ..proto.function_pb2 import FunctionDefLibrary
from ..proto.graph_debug_info_pb2 import GraphDebugInfo
from ..proto.versions_pb2 import VersionDef
from .node import Node, TensorRef

# Ops whose outputs feed the *next* iteration: their out-edges are back edges of a loop.
NEXT_ITERATION_OPS = frozenset({"NextIteration", "RefNextIteration"})

_VALID_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/>]*$")


def parse_tensor_name(text: str) -> tuple[str, int]:
    """'node' -> ('node', 0); 'node:3' -> ('node', 3). Raises UsageError on a malformed port."""
    if ":" in text:
        name, _, port = text.rpartition(":")
        if not port.isdigit() or not name:
            raise UsageError(f"malformed tensor name '{text}' (expected 'node' or 'node:k')")
        return name, int(port)
    return text, 0


class Graph:
    """A dataflow graph. Build with add_node or graphtool.ir.from_graphdef."""

    def __init__(self):
        self._nodes: dict[str, Node] = {}
        self.versions = VersionDef()
        self.deprecated_version = 0
        self.library = FunctionDefLibrary()
        self.debug_info = GraphDebugInfo()
        # Highest numeric suffix handed out per base name, so unique_name stays O(1) amortized.
        self._name_counters: dict[str, int] = {}

    def __repr__(self) -> str:
        from .describe import graph_repr

        return graph_repr(self)

    # --- lookup -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(list(self._nodes.values()))

    def __contains__(self, name: str) -> bool:
        return name in self._nodes

    @property
    def nodes(self) -> list[Node]:
        return list(self._nodes.values())

    def node(self, name: str) -> Node:
        """The node called `name` ('^name' and 'name:k' are accepted); UsageError if absent."""
        name = name.lstrip("^")
        if name in self._nodes:
            return self._nodes[name]
        base, _ = parse_tensor_name(name)
        if base in self._nodes:
            return self._nodes[base]
        raise UsageError(f"no node named '{name}' in the graph", hint=did_you_mean(name, self._nodes))

    def get(self, name: str) -> Node | None:
        return self._nodes.get(name)

    def tensor(self, text: str) -> TensorRef:
        """Resolve 'node' / 'node:k' to a TensorRef, checking that the port exists."""
        name, port = parse_tensor_name(text)
        if name not in self._nodes:
            raise UsageError(f"no node named '{name}' in the graph (tensor '{text}')",
                             hint=did_you_mean(name, self._nodes))
        node = self._nodes[name]
        if port >= node.num_outputs:
            raise UsageError(f"tensor '{text}': node '{name}' ({node.op}) has {node.num_outputs} output(s)")
        return TensorRef(node, port)

    def ops(self) -> set[str]:
        return {n.op for n in self._nodes.values()}

    # --- naming -------------------------------------------------------------------------------
    def unique_name(self, base: str) -> str:
        """`base` if free, else `base_1`, `base_2`, ... (the first free one)."""
        if base not in self._nodes:
            return base
        k = self._name_counters.get(base, 0)
        while True:
            k += 1
            candidate = f"{base}_{k}"
            if candidate not in self._nodes:
                self._name_counters[base] = k
                return candidate

    def rename(self, node: Node, new_name: str) -> None:
        if new_name in self._nodes:
            raise ValueError(f"a node named '{new_name}' already exists")
        del self._nodes[node.name]
        node._name = new_name
        self._nodes[new_name] = node

    # --- mutation -----------------------------------------------------------------------------
    def reorder(self, order: Iterable[Node]) -> int:
        """Put the nodes in `order` (every node of the graph, once): the order export writes them
        in. Returns how many nodes changed position."""
        order = list(order)
        if len(order) != len(self._nodes) or {id(n) for n in order} != {id(n) for n in self._nodes.values()}:
            raise ValueError("reorder needs every node of the graph exactly once")
        moved = sum(1 for old, new in zip(self._nodes.values(), order) if old is not new)
        self._nodes = {node.name: node for node in order}
        return moved

    def add_node(self, op: str, name: str | None = None, inputs: Iterable[TensorRef] = (),
                 control_inputs: Iterable[Node] = (), attrs: dict | None = None,
                 device: str = "") -> Node:
        """Create a node. `name` must be unique (use unique_name); defaults to a fresh name from op.
        Attr values may be Python values (typed by the registry) or AttrValue protos."""
        if name is None:
            name = self.unique_name(op)
        elif name in self._nodes:
            raise ValueError(f"a node named '{name}' already exists")
        node = Node(self, name, op, device)
        self._nodes[name] = node
        for key, value in (attrs or {}).items():
            node.set_attr(key, value)
        for ref in inputs:
            node.add_input(ref if isinstance(ref, TensorRef) else TensorRef(ref, 0))
        for control in control_inputs:
            node.add_control_input(control)
        return node

    def remove_node(self, node: Node) -> None:
        """Remove a node that nothing uses any more (raises ValueError otherwise)."""
        if node.has_users:
            users = ", ".join(sorted(n.name for n in node.consumers())[:3])
            raise ValueError(f"cannot remove '{node.name}': still used by {users}")
        node.clear_inputs()
        del self._nodes[node.name]

    def remove_nodes(self, nodes: Iterable[Node]) -> None:
        """Remove a set of nodes whose users all lie inside the set."""
        doomed = set(nodes)
        for node in doomed:
            outside = [u for u in node.consumers() if u not in doomed]
            if outside:
                raise ValueError(f"cannot remove '{node.name}': still used by '{outside[0].name}'")
        for node in doomed:
            node.clear_inputs()
        for node in doomed:
            del self._nodes[node.name]

    def replace_all_uses_with(self, old: TensorRef, new: TensorRef) -> int:
        """Make every data use of `old` read `new` instead; returns how many were rewired."""
        uses = old.node.uses(old.index)
        for consumer, slot in uses:
            consumer.set_input(slot, new)
        return len(uses)

    def move_control_uses(self, old: Node, new: Node) -> None:
        """Every `^old` control input becomes `^new`."""
        for consumer in old.control_uses:
            consumer.remove_control_input(old)
            if consumer is not new:
                consumer.add_control_input(new)

    # --- structure ----------------------------------------------------------------------------
    def topological_order(self) -> list[Node]:
        """Producers before consumers. Edges out of NextIteration are loop back edges and are
        ignored; any other cycle raises InvalidGraphError naming the nodes on it."""
        pending = {}
        for node in self._nodes.values():
            pending[node] = sum(1 for p in node.input_nodes() if p.op not in NEXT_ITERATION_OPS)
        ready = deque(n for n, count in pending.items() if count == 0)
        order = []
        while ready:
            node = ready.popleft()
            order.append(node)
            if node.op in NEXT_ITERATION_OPS:
                continue
            for consumer, _ in node._uses:
                pending[consumer] -= 1
                if pending[consumer] == 0:
                    ready.append(consumer)
            for consumer in node._control_uses:
                pending[consumer] -= 1
                if pending[consumer] == 0:
                    ready.append(consumer)
        if len(order) != len(self._nodes):
            cycle = self._find_cycle({n for n, c in pending.items() if c > 0})
            raise InvalidGraphError(
                "graph has a cycle that does not pass through NextIteration: " + " -> ".join(cycle),
                hint="loops must close through a NextIteration node")
        return order

    def _find_cycle(self, stuck: set[Node]) -> list[str]:
        """Names along one cycle among `stuck` nodes (for the error message)."""
        start = min(stuck, key=lambda n: n.name)
        path, seen = [start], {start: 0}
        node = start
        while True:
            nxt = next((p for p in node.input_nodes() if p in stuck and p.op not in NEXT_ITERATION_OPS), None)
            if nxt is None:
                return [n.name for n in path]
            if nxt in seen:
                cycle = path[seen[nxt]:] + [nxt]
                return [n.name for n in reversed(cycle)]
            seen[nxt] = len(path)
            path.append(nxt)
            node = nxt

    def num_edges(self) -> int:
        """Data plus control edges."""
        return sum(len(n._inputs) + len(n._control_inputs) for n in self._nodes.values())

    def frames(self):
        """Control-flow frame of every node (see graphtool.ir.frames)."""
        from .frames import discover_frames

        return discover_frames(self)

    def problems(self) -> list[str]:
        """Every structural problem found by verify(), as one-line messages."""
        from .verify import find_problems

        return find_problems(self)

    def verify(self) -> None:
        """Raise InvalidGraphError on the first structural problem (and say how many more)."""
        found = self.problems()
        if found:
            more = f" (and {len(found) - 1} more problem(s))" if len(found) > 1 else ""
            raise InvalidGraphError(found[0] + more)

    def copy(self) -> "Graph":
        """An independent copy: the same nodes in the same order, attrs and extras copied (not
        shared), the same links. What a GraphDef round trip gives, without serializing."""
        new = Graph()
        new.versions.CopyFrom(self.versions)
        new.deprecated_version = self.deprecated_version
        new.library.CopyFrom(self.library)
        new.debug_info.CopyFrom(self.debug_info)
        twin: dict[Node, Node] = {}
        for node in self._nodes.values():
            copied = new.add_node(node.op, node.name, device=node.device)
            for key in sorted(node.attrs):
                copied.attrs[key] = _copy_proto(node.attrs[key])
            for field, value in node.extras.items():
                copied.extras[field] = _copy_proto(value)
            twin[node] = copied
        for node, copied in twin.items():
            for ref in node._inputs:
                producer = twin[ref.node]
                # As an import would: an opaque op's output count follows what its users read.
                producer._num_outputs_hint = max(producer._num_outputs_hint, ref.index + 1)
                copied.add_input(TensorRef(producer, ref.index))
            for control in node._control_inputs:
                copied.add_control_input(twin[control])
        return new

    def save(self, path, *, text: bool | None = None) -> None:
        """Write the graph as a GraphDef, atomically (an existing file is replaced only once the
        new one is complete). `text` None: by the name, .pb (or .graphdef) binary and .pbtxt
        (.prototxt, .txt) text; any other name needs `text` to say which. '-': stdout."""
        import os

        from .. import graph_io
        from .export import to_graphdef

        path = os.fspath(path)
        if text is None and path != graph_io.STDIO:
            if str(path).endswith(graph_io.TEXT_SUFFIXES):
                text = True
            elif str(path).endswith((".pb", ".graphdef")):
                text = False
            else:
                raise UsageError(f"{path}: dftool writes GraphDefs as .pb (binary) or .pbtxt (text), "
                                 f"not {os.path.splitext(path)[1] or 'a name without an extension'}",
                                 hint="pass text=True or text=False to write it under this name anyway")
        graph_io.save_graphdef(to_graphdef(self), path, text=bool(text))


def _copy_proto(message):
    copied = type(message)()
    copied.CopyFrom(message)
    return copied
