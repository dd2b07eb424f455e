"""Colocation: which nodes must run on the same device, as groups the placer treats as one.

A group is closed under these links (union-find):
- `_class` attrs `loc:@other` (TensorFlow's colocation constraint). A name not in the graph is
  ignored, as pruning legitimately removes colocation targets.
- Reference edges: a data input whose declared type is `Ref(T)` (Assign, ApplyGradientDescent,
  RefSwitch, ... on a VariableV2) runs where the variable's buffer lives.
- Resource edges: a data input of type `resource` (a TensorArray or Stack handle and every op
  using it, directly or through Enter/Identity/Switch; variable handles). TensorFlow's placer
  colocates every resource edge too; our runtime keeps such resources in one device's container.
- Loop plumbing: a loop variable's Merge, the NextIteration feeding its back edge and the Switch
  reading the Merge stay together, so each device's copy of a frame sees a whole loop variable.
  Enter, Exit and LoopCond may live anywhere (partitioning sends the predicate to every device).

    >>> groups = colocation_groups(graph)                       # doctest: +SKIP
    >>> [n.name for n in groups.group_of(graph.node("v/Assign")).members]   # doctest: +SKIP
    ['v', 'v/Assign']
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import dtypes
from ..errors import DftoolError, InvalidGraphError
from ..ir import Graph, Node

COLOCATION_ATTR = "_class"
_LOC_PREFIX = "loc:@"
_MERGE_OPS = frozenset({"Merge", "RefMerge"})
_SWITCH_OPS = frozenset({"Switch", "RefSwitch"})
_NEXT_ITERATION_OPS = frozenset({"NextIteration", "RefNextIteration"})


@dataclass(eq=False)
class ColocationGroup:
    """Nodes placed as one. `links` says why each pair was joined (for errors and --explain)."""

    members: list[Node]
    links: list[tuple[Node, Node, str]] = field(default_factory=list)

    @property
    def leader(self) -> Node:
        return self.members[0]

    def why_joined(self, node: Node) -> str:
        """A short reason `node` is in this group ('' for a group of one)."""
        for a, b, reason in self.links:
            if node is a:
                return f"{reason} ('{b.name}')"
            if node is b:
                return f"{reason} ('{a.name}')"
        return ""


@dataclass
class ColocationGroups:
    groups: list[ColocationGroup]
    _of: dict[Node, ColocationGroup]

    def group_of(self, node: Node) -> ColocationGroup:
        return self._of[node]


class _UnionFind:
    def __init__(self, nodes: list[Node]):
        self.parent = {node: node for node in nodes}

    def find(self, node: Node) -> Node:
        root = node
        while self.parent[root] is not root:
            root = self.parent[root]
        while self.parent[node] is not root:   # path compression
            self.parent[node], node = root, self.parent[node]
        return root

    def union(self, a: Node, b: Node) -> None:
        self.parent[self.find(a)] = self.find(b)


def colocation_links(graph: Graph) -> list[tuple[Node, Node, str]]:
    """Every (node, other, reason) pair that must share a device (see the module docstring)."""
    links: list[tuple[Node, Node, str]] = []
    for node in graph.nodes:
        links.extend((node, other, "_class loc:@") for other in _class_targets(graph, node))
        declared = _input_dtypes(node)  # once per node: per slot it would be quadratic in the inputs
        for slot, ref in enumerate(node.inputs):
            kind = _handle_kind(declared[slot])
            if kind:
                links.append((node, ref.node, f"{kind} input"))
        links.extend(_loop_links(node))
    return links


def colocation_groups(graph: Graph, order: list[Node] | None = None) -> ColocationGroups:
    """Partition the graph's nodes into colocation groups; members (and groups, by their first
    member) follow `order` (default: graph order)."""
    order = order if order is not None else graph.nodes
    sets = _UnionFind(order)
    links = colocation_links(graph)
    for a, b, _ in links:
        sets.union(a, b)
    by_root: dict[Node, ColocationGroup] = {}
    of: dict[Node, ColocationGroup] = {}
    for node in order:
        group = by_root.setdefault(sets.find(node), ColocationGroup([]))
        group.members.append(node)
        of[node] = group
    for a, b, reason in links:
        of[a].links.append((a, b, reason))
    return ColocationGroups(list(by_root.values()), of)


def drop_colocation_with(graph: Graph, names: set[str]) -> int:
    """Remove the `loc:@NAME` entries naming `names` from every `_class` attr (the attr goes when
    nothing is left); returns how many nodes changed."""
    changed = 0
    for node in graph.nodes:
        groups = class_entries(node)
        if groups is None:
            continue
        kept = [g for g in groups if not (g.startswith(_LOC_PREFIX) and g[len(_LOC_PREFIX):] in names)]
        if len(kept) == len(groups):
            continue
        changed += 1
        if kept:
            node.set_attr(COLOCATION_ATTR, kept, "list(string)")
        else:
            node.del_attr(COLOCATION_ATTR)
    return changed


def drop_dangling_colocation(graph: Graph) -> int:
    """Drop `loc:@NAME` entries whose node is gone (folded, pruned or frozen away): TensorFlow
    refuses to import a graph that asks to colocate with a node it does not have."""
    missing = {g[len(_LOC_PREFIX):] for node in graph.nodes for g in (class_entries(node) or ())
               if g.startswith(_LOC_PREFIX) and g[len(_LOC_PREFIX):] not in graph}
    return drop_colocation_with(graph, missing) if missing else 0


def class_entries(node: Node) -> list[str] | None:
    """The strings of a node's `_class` attr, or None when it has none. TensorFlow reads the attr
    as list(string) and refuses a graph where it is anything else; so do we (InvalidGraphError
    naming the node), instead of guessing what a string or a number was meant to say."""
    if not node.has_attr(COLOCATION_ATTR):
        return None
    try:
        specs = node.attr(COLOCATION_ATTR)
    except DftoolError as exc:
        raise InvalidGraphError(f"node '{node.name}': its {COLOCATION_ATTR} attr cannot be read ({exc})") from None
    if not isinstance(specs, (list, tuple)) or not all(isinstance(s, (str, bytes)) for s in specs):
        what = type(specs).__name__ if not isinstance(specs, (list, tuple)) else \
            "a list holding " + ", ".join(sorted({type(s).__name__ for s in specs if not isinstance(s, (str, bytes))}))
        raise InvalidGraphError(f"node '{node.name}': its {COLOCATION_ATTR} attr must be a list of strings "
                                f"('loc:@NODE'), not {what}", hint="TensorFlow refuses such a graph too")
    return [s.decode("utf-8", "replace") if isinstance(s, bytes) else s for s in specs]


def _class_targets(graph: Graph, node: Node) -> list[Node]:
    names = class_entries(node) or []
    targets = [graph.get(name[len(_LOC_PREFIX):]) for name in names if name.startswith(_LOC_PREFIX)]
    return [t for t in targets if t is not None and t is not node]


def _handle_kind(dtype) -> str:
    """'reference' / 'resource' for a ref or resource input type, else ''."""
    if dtype is None:
        return ""
    if dtype.is_ref:
        return "reference"
    return "resource" if dtype.base is dtypes.resource else ""


def _input_dtypes(node: Node) -> list:
    """The declared type of each input (the consumer decides, as in TensorFlow); for an op the
    registry does not know, the producer's declared output type; None where unknown."""
    if node.spec is not None:
        try:
            declared = node.spec.input_dtypes(node)
        except (KeyError, IndexError, TypeError, ValueError):
            declared = []
        return [declared[slot] if slot < len(declared) else None for slot in range(len(node.inputs))]
    outputs: dict[Node, list] = {}
    return [_output_dtype(ref, outputs) for ref in node.inputs]


def _output_dtype(ref, cache: dict):
    try:
        if ref.node not in cache:
            producer = ref.node.spec
            cache[ref.node] = producer.output_dtypes(ref.node) if producer is not None else []
        found = cache[ref.node]
        return found[ref.index] if ref.index < len(found) else None
    except (KeyError, IndexError, TypeError, ValueError):
        return None


def _loop_links(node: Node) -> list[tuple[Node, Node, str]]:
    if node.op in _MERGE_OPS:
        return [(node, ref.node, "loop back edge") for ref in node.inputs if ref.node.op in _NEXT_ITERATION_OPS]
    if node.op in _SWITCH_OPS and node.inputs and _is_loop_switch(node):
        return [(node, node.inputs[0].node, "loop variable switch")]
    return []


def _is_loop_switch(switch: Node) -> bool:
    """A while loop's Switch: reads a Merge and is driven by a LoopCond (not a cond's Switch)."""
    data, pred = (switch.inputs + (None, None))[:2]
    return (data is not None and data.node.op in _MERGE_OPS
            and pred is not None and pred.node.op == "LoopCond")
