"""What a picture of a graph shows: items (nodes, collapsed name scopes, collapsed while loops),
the clusters (expanded name scopes) they sit in, and edges merged between items.

Rules:
- A name scope is the part of node names before a '/': node 'a/b/c' is in scopes 'a' and 'a/b';
  a node named like a scope ('a/b' when 'a/b/c' exists) belongs to that scope too.
- A scope of two or more nodes is drawn collapsed as one box unless it is expanded: by `depth`
  (scopes of at most that many components are expanded), by `expand_all`, or by naming it (or a
  scope inside it) in `expand`. An expanded scope is a cluster holding its items.
- A while loop (a frame, with its Enter nodes) is drawn as one box unless expanded
  (`expand_all`, or its frame name in `expand`), except inside a collapsed scope that holds the
  whole loop; the box takes in the loop's inner scopes. An inner loop of an expanded loop is
  drawn the same way.
- Edges between two nodes drawn in one box disappear; the others are merged per (source item,
  destination item): control only -> dashed; one data tensor -> labelled with its shape.
- More than `max_items` drawn items is refused (a UsageError saying how to draw less).
- `depth=None` (the CLI's default) starts at 0 and opens one more level while one box holds
  more than half of the graph's nodes and the picture stays within `max_items`: a graph wrapped
  in one scope (Keras' `model/`) is drawn one level inside it.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import UsageError
from ..ir import Graph, Node
from ..ir.frames import ENTER_OPS, Frame
from ..shape_inference import ShapeResult, infer_shapes
from ..suggest import did_you_mean

DEFAULT_MAX_ITEMS = 400
UNPLACED = "(unplaced)"
MIXED = "(mixed)"


@dataclass
class Item:
    """One drawn box: a node ('node'), a collapsed scope ('scope') or a collapsed loop ('loop')."""

    id: str
    kind: str
    label: str
    cluster: str          # the expanded scope it sits in ('' = top level)
    device: str           # a device name, UNPLACED, or MIXED for a box of several devices
    nodes: int = 1
    ops: Counter = field(default_factory=Counter)


@dataclass
class Edge:
    src: str
    dst: str
    control: bool
    label: str
    count: int


@dataclass
class Picture:
    """What to draw: items by id, the clusters (expanded scopes, parent before child), edges and
    the devices used (for the legend)."""

    title: str
    items: dict[str, Item]
    clusters: list[str]
    edges: list[Edge]
    devices: list[str]


def _scope_chain(name: str, scopes: set[str]) -> list[str]:
    parts = name.split("/")
    chain = ["/".join(parts[:i]) for i in range(1, len(parts))]
    if name in scopes:
        chain.append(name)
    return chain


def _loops_of(node: Node, frames) -> list[Frame]:
    """The while loops `node` is part of, innermost first (an Enter belongs to the loop it enters)."""
    frame = frames.frames.get(node.attr("frame_name")) if node.op in ENTER_OPS else frames.frame_of.get(node)
    found = []
    while frame is not None and not frame.is_root:
        found.append(frame)
        frame = frame.parent
    return found


def _shape_text(shapes: ShapeResult, ref) -> str:
    dims = shapes.shape(ref).dims
    if dims is None:
        return ""
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


@dataclass
class _Structure:
    """What the pictures of one graph at any depth share: its scopes (with node counts), each
    node's scope chain and loops, each loop's members and the scopes holding the whole loop."""

    scopes: Counter
    frame_names: set[str]
    chains: dict[Node, list[str]]
    loops: dict[Node, list[Frame]]
    common: dict[str, set[str]]


def _structure(graph: Graph) -> _Structure:
    scopes: Counter[str] = Counter()
    names = {node.name for node in graph.nodes}
    for name in names:
        parts = name.split("/")
        for i in range(1, len(parts)):
            scopes["/".join(parts[:i])] += 1
    for scope in list(scopes):
        if scope in names:
            scopes[scope] += 1          # the node named like the scope is in it
    scope_set = set(scopes)
    frames = graph.frames()
    chains = {node: _scope_chain(node.name, scope_set) for node in graph.nodes}
    loops = {node: _loops_of(node, frames) for node in graph.nodes}
    members: dict[str, list[Node]] = {}
    for node in graph.nodes:
        for frame in loops[node]:
            members.setdefault(frame.name, []).append(node)
    # The scopes a whole loop lies in: collapsing one of those hides the loop in its box.
    common = {name: set(chains[nodes[0]]).intersection(*(chains[n] for n in nodes[1:]))
              for name, nodes in members.items()}
    return _Structure(scopes, {f.name for f in frames.loops}, chains, loops, common)


def layout(graph: Graph, *, expand: Sequence[str] = (), expand_all: bool = False, depth: int | None = 0,
           max_items: int = DEFAULT_MAX_ITEMS, title: str = "graph", shapes: ShapeResult | None = None) -> Picture:
    """The picture of `graph` under the rules of the module doc."""
    shapes = shapes if shapes is not None else _shapes(graph)
    found = _structure(graph)
    for name in expand:
        if name not in found.scopes and name not in found.frame_names:
            raise UsageError(f"--expand {name}: no name scope or while-loop frame of that name",
                             hint=did_you_mean(name, list(found.scopes) + sorted(found.frame_names)))
    if depth is not None:
        return _layout(graph, found, expand, expand_all, depth, max_items, title, shapes)
    picture = _layout(graph, found, expand, expand_all, 0, max_items, title, shapes)
    level = 0
    while max((item.nodes for item in picture.items.values()), default=0) * 2 > len(graph):
        level += 1
        try:
            deeper = _layout(graph, found, expand, expand_all, level, max_items, title, shapes)
        except UsageError:          # one more level would be too big: keep this one
            break
        if len(deeper.items) == len(picture.items):
            break
        picture = deeper
    return picture


def _layout(graph: Graph, found: _Structure, expand: Sequence[str], expand_all: bool, depth: int, max_items: int,
            title: str, shapes: ShapeResult) -> Picture:
    scopes, chains, loops, common = found.scopes, found.chains, found.loops, found.common
    wanted = set(expand)
    # A named scope opens with every scope around it.
    opened = {"/".join(name.split("/")[:i]) for name in wanted for i in range(1, name.count("/") + 2)}

    def expanded(scope: str) -> bool:
        return expand_all or scope.count("/") < depth or scope in opened

    def loop_expanded(frame: Frame) -> bool:
        return expand_all or frame.name in wanted

    items: dict[str, Item] = {}
    owner: dict[Node, str] = {}
    for node in graph.nodes:
        chain = chains[node]
        collapsed = next((s for s in chain if not expanded(s) and scopes[s] >= 2), None)
        closed = [frame for frame in loops[node] if not loop_expanded(frame)]
        loop = closed[-1] if closed else None
        if loop is not None and (collapsed is None or collapsed not in common[loop.name]):
            item_id = f"loop:{loop.name}"
            if item_id not in items:
                around = sorted((s for s in common[loop.name] if expanded(s)), key=len)
                items[item_id] = Item(item_id, "loop", f"while loop {loop.name}", _cluster(around),
                                      _device(node), nodes=0)
        elif collapsed is not None:
            item_id = f"scope:{collapsed}"
            if item_id not in items:
                outer = [s for s in chain if len(s) < len(collapsed)]
                items[item_id] = Item(item_id, "scope", collapsed.rsplit("/", 1)[-1] + "/", _cluster(outer),
                                      _device(node), nodes=0)
        else:
            cluster = _cluster([s for s in chain if expanded(s)])
            short = node.name[len(cluster) + 1:] if cluster else node.name
            items[node.name] = Item(node.name, "node", short or node.name, cluster, _device(node), nodes=0)
            item_id = node.name
        _absorb(items[item_id], node)
        owner[node] = item_id
    if len(items) > max_items:
        raise UsageError(f"the picture would have {len(items)} boxes and nodes, more than --max-nodes {max_items}",
                         hint="collapse more (a smaller --depth, fewer --expand), draw a part of the graph "
                              "(dftool prune), or raise --max-nodes")
    used = {item.cluster for item in items.values() if item.cluster}
    # An expanded scope's enclosing scopes are expanded too, so every cluster's parents exist.
    clusters = sorted({"/".join(c.split("/")[:i]) for c in used for i in range(1, c.count("/") + 2)},
                      key=lambda s: (s.count("/"), s))
    return Picture(title, items, clusters, _edges(graph, owner, shapes), sorted({i.device for i in items.values()}))


def _cluster(chain: list[str]) -> str:
    return chain[-1] if chain else ""


def _device(node: Node) -> str:
    return node.device or UNPLACED


def _absorb(item: Item, node: Node) -> None:
    item.nodes += 1
    item.ops[node.op] += 1
    if item.nodes > 1 and item.device != _device(node):
        item.device = MIXED


def _shapes(graph: Graph) -> ShapeResult:
    from ..errors import DftoolError

    try:
        return infer_shapes(graph)
    except DftoolError:
        return ShapeResult()


def _edges(graph: Graph, owner: dict[Node, str], shapes: ShapeResult) -> list[Edge]:
    merged: dict[tuple[str, str], list] = {}
    for node in graph.nodes:
        dst = owner[node]
        for ref in node.inputs:
            src = owner[ref.node]
            if src != dst:
                merged.setdefault((src, dst), []).append(ref)
        for control in node.control_inputs:
            src = owner[control]
            if src != dst:
                merged.setdefault((src, dst), []).append(None)
    edges = []
    for (src, dst), refs in merged.items():
        data = list(dict.fromkeys(ref for ref in refs if ref is not None))
        if not data:
            edges.append(Edge(src, dst, True, "", len(refs)))
        elif len(data) == 1:
            edges.append(Edge(src, dst, False, _shape_text(shapes, data[0]), len(refs)))
        else:
            edges.append(Edge(src, dst, False, f"{len(data)} tensors", len(refs)))
    return edges
