"""Pruning: the part of a graph that computing some fetches needs, given some feeds.

`prune(graph, fetches, feeds)` (what `dftool prune` runs) walks backwards from the fetched tensors
along data and control inputs and stops at fed tensors, whose values come from outside:

    x -> a -> b -> c        prune(fetches=["c"], feeds=["a"])  ->   a (Placeholder) -> b -> c

Rules, and the choices made where TensorFlow leaves room:
- A fed tensor `node:k` becomes a Placeholder of its inferred dtype and shape, named `node` for
  k = 0 and `node_k` otherwise (`NAME/fed` + a suffix if that name is still taken, e.g. because
  another output of `node` is needed). It carries the attr `_fed_tensor = "node:k"`, so
  `dftool run` also accepts the original tensor name as a feed key. A fed Placeholder stays as it
  is. Every feed becomes an input of the pruned graph, even one the fetches do not need (it is
  reported as unused), so the inputs are exactly the --feed list.
- Control edges out of a fed Placeholder move to its replacement; control edges out of any other
  fed node keep that node (and what it needs) running, as in TensorFlow's FeedInputs.
- While-loop frames are never cut in half: if any node of a loop is needed, every node of its
  outermost loop frame (frames nested in it, its condition, its Enter and Exit nodes) is kept.
  Feeding a tensor that lives inside a loop frame is an error (the loop would be cut).
- `call_frame=True` makes feeds `_Arg` nodes (attr `index` in feed order, `T`, named like the
  Placeholders above) and fetches `_Retval` nodes (attr `index` in fetch order), named as
  TensorFlow names them: `_retval_NODE_PORT_INDEX`. `dftool run` feeds an `_Arg` by its name and by
  default fetches the `_Retval`s, in index order.

`needed_nodes` and `pruned_copy` are the node-level primitives the Session and DCE use.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from . import dtypes
from .errors import InvalidGraphError, UsageError
from .ir import Graph, Node, TensorRef, parse_tensor_name
from .placement.colocation import drop_dangling_colocation

from .ops import opaque
from .ops.core import FED_INPUT_OPS
# Attr naming the original tensor a prune feed node stands for (underscore attrs are allowed on
# any op by TensorFlow and ignored by it).
FED_TENSOR_ATTR = "_fed_tensor"
# Attrs naming the SavedModel signature key a feed node / output Identity stands for (set by
# graphtool.saved_model; an output Identity named after its key needs none).
SIGNATURE_INPUT_ATTR = "_signature_input"
SIGNATURE_OUTPUT_ATTR = "_signature_output"


def needed_nodes(graph: Graph, fetch_nodes: Iterable[Node], fed_nodes: Iterable[Node] = ()) -> set[Node]:
    """Every node that must run to produce `fetch_nodes` when `fed_nodes` are given."""
    fed = set(fed_nodes)
    needed: set[Node] = set()
    stack = list(fetch_nodes)
    while stack:
        node = stack.pop()
        if node in needed:
            continue
        needed.add(node)
        if node in fed:
            continue
        stack.extend(p for p in node.input_nodes() if p not in needed)
    return needed


def pruned_copy(graph: Graph, keep: set[Node], fed: Iterable[Node] = ()) -> Graph:
    """A new graph holding only `keep` (closed under inputs except at `fed` nodes, whose inputs
    are dropped: their values come from outside)."""
    copy = graph.copy()
    for node in fed:
        fed_copy = copy.node(node.name)
        had_inputs = bool(fed_copy.inputs)
        fed_copy.clear_inputs()
        if fed_copy.op == "PlaceholderWithDefault":
            # Fed, its default is not needed: a Placeholder (the same dtype and shape attrs) is what
            # it now is, and the graph stays valid for placement and partitioning (TF Savers'
            # filename tensors are such nodes, pinned to a CPU).
            fed_copy.op = "Placeholder"
        elif had_inputs and node.spec is not None:
            _stand_in_for_fed(fed_copy, node)
    doomed = [copy.node(n.name) for n in graph.nodes if n not in keep]
    for node in doomed:
        node.clear_inputs()
    copy.remove_nodes(doomed)
    return copy


def _stand_in_for_fed(fed_copy: Node, original: Node) -> None:
    """Make `fed_copy` a _FedOutputs node with `original`'s name, device and output types."""
    dtypes = original.spec.output_dtypes(original)
    kept: dict[str, object] = {name: fed_copy.attrs[name] for name in ("_class", "_output_shapes")
                               if name in fed_copy.attrs}
    fed_copy.attrs.clear()
    fed_copy.attrs.update(kept)
    fed_copy.op = "_FedOutputs"
    fed_copy.set_attr("dtypes", dtypes, kind="list(type)")


# --- prune(): the command's model ---------------------------------------------------------------

@dataclass
class FeedInput:
    """How one fed tensor appears in the pruned graph."""

    tensor: str          # 'node:k' as fed
    node: str            # the Placeholder / _Arg standing for it
    op: str
    dtype: str
    shape: str
    used: bool           # whether the fetches need it


@dataclass
class PruneReport:
    nodes_before: int
    kept: list[str]                    # nodes of the original graph that are still there
    removed: list[str]                 # nodes of the original graph that are gone (fed ones included)
    added: list[str]                   # feed nodes and _Retvals made by prune
    feeds: list[FeedInput]
    fetches: dict[str, str]            # fetch as given -> its name in the pruned graph
    loops_kept: list[str] = field(default_factory=list)
    call_frame: bool = False

    def to_json(self) -> dict:
        return {"nodes": {"before": self.nodes_before, "after": len(self.kept) + len(self.added),
                          "kept": len(self.kept), "removed": len(self.removed), "added": len(self.added)},
                "kept": self.kept, "removed": self.removed, "added": self.added,
                "feeds": [vars(feed) for feed in self.feeds], "fetches": self.fetches,
                "loops_kept": self.loops_kept, "call_frame": self.call_frame}


def prune(graph: Graph, fetches: list[str], feeds: Iterable[str] = (),
          call_frame: bool = False) -> tuple[Graph, PruneReport]:
    """The minimal subgraph computing `fetches` (tensor names, or `^node` / an output-less node
    name for a node that must run) given `feeds`; the input graph is not changed.

        pruned, report = prune(graph, ["loss"], feeds=["hidden:0", "split:1"])
        [feed.node for feed in report.feeds]     # ['hidden', 'split_1']
    """
    if not fetches:
        raise UsageError("prune needs at least one --fetch")
    info = graph.frames()
    if info.problems:
        raise InvalidGraphError(info.problems[0])
    fetch_refs, targets = _resolve_fetches(graph, fetches, info, call_frame)
    feed_refs = _resolve_feeds(graph, feeds, info)
    fed = set(feed_refs)
    starts = [ref.node for ref in fetch_refs if ref is not None and ref not in fed] + targets
    keep, loops = _reachable(starts, fed, _LoopIndex(graph, info))

    from .shape_inference import infer_shapes

    shapes = infer_shapes(graph)
    builder = _PrunedGraphBuilder(graph, keep, shapes, call_frame)
    for index, ref in enumerate(feed_refs):
        builder.add_feed(index, ref)
    builder.remove_unneeded()
    builder.name_feeds()
    fetch_names = {given: given.lstrip("^") if ref is None else builder.fetch_name(index, ref)
                   for index, (given, ref) in enumerate(zip(fetches, fetch_refs))}
    drop_dangling_colocation(builder.graph)   # TensorFlow refuses `loc:@` naming a pruned node
    builder.graph.verify()
    added = set(builder.added)
    report = PruneReport(len(graph), [n.name for n in builder.graph.nodes if n not in added],
                         [n.name for n in graph.nodes if n.name not in builder.keep_names],
                         [n.name for n in builder.graph.nodes if n in added],
                         [builder.describe(ref, _uses_feed(ref, keep)) for ref in feed_refs], fetch_names,
                         sorted(loop.name for loop in loops), call_frame)
    return builder.graph, report


def _uses_feed(ref: TensorRef, keep: set[Node]) -> bool:
    placeholder_control = ref.node.op in FED_INPUT_OPS and any(c in keep for c in ref.node.control_uses)
    return placeholder_control or any(consumer in keep for consumer, _ in ref.node.uses(ref.index))


def _resolve(graph: Graph, option: str, name: str) -> TensorRef:
    try:
        return graph.tensor(name)
    except UsageError as exc:
        node_name, port = parse_tensor_name(name)
        role = "feed" if option == "--feed" else "fetch"
        alias = fed_tensor_aliases(graph, role).get(f"{node_name}:{port}")   # e.g. a signature key
        if alias is not None:
            return alias
        raise UsageError(f"{option} {name}: {exc}", hint=exc.hint) from None


def _resolve_fetches(graph: Graph, fetches: list[str], info, call_frame: bool):
    """Per fetch its TensorRef (None for a node that must only run), plus those target nodes."""
    refs: list[TensorRef | None] = []
    targets: list[Node] = []
    for name in fetches:
        node_name = parse_tensor_name(name.lstrip("^"))[0]
        node = graph.get(node_name)
        is_target = name.startswith("^") or (node is not None and node.num_outputs == 0 and ":" not in name)
        if is_target and node is not None:
            if call_frame:
                raise UsageError(f"--fetch {name}: node '{node_name}' ({node.op}) has no output to "
                                 f"return from a call frame")
            refs.append(None)
            targets.append(node)
            continue
        ref = _resolve(graph, "--fetch", name)
        if call_frame and not info.output_frame(ref.node).is_root:
            raise UsageError(f"--fetch {name}: the tensor lives inside while-loop frame "
                             f"'{info.output_frame(ref.node).name}' and cannot be returned from a call frame",
                             hint="fetch a value after the loop (an Exit)")
        refs.append(ref)
    return refs, targets


def _resolve_feeds(graph: Graph, feeds: Iterable[str], info) -> list[TensorRef]:
    """Fed tensors in order, without repeats; a tensor inside a loop frame is refused."""
    refs: list[TensorRef] = []
    for name in feeds:
        ref = _resolve(graph, "--feed", name)
        frame = info.output_frame(ref.node)
        if not frame.is_root:
            raise UsageError(f"--feed {name}: the tensor lives inside while-loop frame '{frame.name}'; "
                             f"pruning keeps a loop whole, so it cannot be fed",
                             hint="feed a tensor outside the loop (e.g. the Enter's input)")
        dtype = opaque.dtype_of(ref).base
        if dtype in (dtypes.resource, dtypes.variant):
            raise UsageError(f"--feed {name}: a {dtype} handle cannot be fed")
        if ref not in refs:
            refs.append(ref)
    return refs


class _LoopIndex:
    """Outermost while-loop frame -> every node that must be kept with it."""

    def __init__(self, graph: Graph, info):
        self.members: dict[object, list[Node]] = {}
        self.loops_of: dict[Node, set] = {}
        for node in graph.nodes:
            # An Enter lives in the outer frame but feeds the inner one: it belongs to both.
            for frame in {info.frame_of[node], info.output_frame(node)}:
                if not frame.is_root:
                    loop = _outermost(frame)
                    self.members.setdefault(loop, []).append(node)
                    self.loops_of.setdefault(node, set()).add(loop)


def _outermost(frame):
    while frame.parent is not None and not frame.parent.is_root:
        frame = frame.parent
    return frame


def _reachable(starts: list[Node], fed: set[TensorRef], loops: _LoopIndex) -> tuple[set[Node], set]:
    """Reverse reachability cut at fed tensors (and at control edges from fed Placeholders), closed
    under "a needed node keeps its whole outermost loop"."""
    fed_placeholders = {ref.node for ref in fed if ref.node.op in FED_INPUT_OPS}
    needed: set[Node] = set()
    kept_loops: set = set()
    stack = list(starts)
    while stack:
        node = stack.pop()
        if node in needed:
            continue
        needed.add(node)
        stack.extend(ref.node for ref in node.inputs if ref not in fed)
        stack.extend(c for c in node.control_inputs if c not in fed_placeholders)
        for loop in loops.loops_of.get(node, ()):
            if loop not in kept_loops:
                kept_loops.add(loop)
                stack.extend(loops.members[loop])
    return needed, kept_loops


class _PrunedGraphBuilder:
    """Edits a copy of the graph into the pruned one: feed nodes in, unneeded nodes out."""

    def __init__(self, graph: Graph, keep: set[Node], shapes, call_frame: bool):
        self.original = graph
        self.graph = graph.copy()
        self.keep_names = {n.name for n in keep}
        self.shapes = shapes
        self.call_frame = call_frame
        self.feed_nodes: dict[TensorRef, Node] = {}   # original ref -> node in the copy
        self.added: list[Node] = []                     # nodes made here (feeds, _Retvals)

    def add_feed(self, index: int, ref: TensorRef) -> None:
        """Make the node standing for fed tensor `ref` (the index-th feed) and rewire its users."""
        original = self.graph.node(ref.node.name)
        if ref.node.op in FED_INPUT_OPS and not self.call_frame:
            self.keep_names.add(original.name)   # already what a feed becomes
            self.feed_nodes[ref] = original
            return
        node = self._new_feed_node(index, ref, original.device)
        self.graph.replace_all_uses_with(TensorRef(original, ref.index), node.output(0))
        if ref.node.op in FED_INPUT_OPS:
            self.graph.move_control_uses(original, node)
        self.feed_nodes[ref] = node

    def _new_feed_node(self, index: int, ref: TensorRef, device: str) -> Node:
        dtype = self.shapes.dtype(ref).base
        if dtype is dtypes.INVALID:
            unknown = ", an op dftool does not know" if ref.node.spec is None else ""
            raise UsageError(f"--feed {ref.full_name}: its dtype cannot be inferred ({ref.node.op}{unknown})",
                             hint="feed a neighbouring tensor whose dtype is known")
        shape = self.shapes.shape(ref)
        temporary = self.graph.unique_name("_prune_feed")
        if self.call_frame:
            op, attrs = "_Arg", {"T": dtype, "index": index}
        else:
            op, attrs = "Placeholder", {"dtype": dtype, "shape": shape}
        attrs[FED_TENSOR_ATTR] = ref.full_name
        node = self.graph.add_node(op, temporary, attrs=attrs, device=device)
        self.added.append(node)
        if self.call_frame:
            # _Arg has no shape attr; TensorFlow's function graphs carry the shape this way.
            node.set_attr("_output_shapes", [shape], "list(shape)")
        return node

    def remove_unneeded(self) -> None:
        doomed = [self.graph.node(n.name) for n in self.original.nodes if n.name not in self.keep_names]
        self.graph.remove_nodes(doomed)

    def name_feeds(self) -> None:
        """Give each new feed node its documented name (see the module docstring)."""
        for ref, node in self.feed_nodes.items():
            if node.name == ref.node.name:
                continue
            wanted = ref.node.name if ref.index == 0 else f"{ref.node.name}_{ref.index}"
            if wanted in self.graph:
                wanted = self.graph.unique_name(f"{wanted}/fed")
            self.graph.rename(node, wanted)

    def fetch_name(self, index: int, ref: TensorRef) -> str:
        """The fetch's name in the pruned graph; with a call frame, the _Retval made for it."""
        if ref in self.feed_nodes:
            tensor = self.feed_nodes[ref].output(0)
        else:
            tensor = TensorRef(self.graph.node(ref.node.name), ref.index)
        if not self.call_frame:
            return tensor.name
        dtype = self.shapes.dtype(ref).base
        name = self.graph.unique_name(f"_retval_{ref.node.name}_{ref.index}_{index}")
        self.added.append(self.graph.add_node("_Retval", name, inputs=[tensor], attrs={"T": dtype, "index": index},
                                              device=tensor.node.device))
        return name

    def describe(self, ref: TensorRef, used: bool) -> FeedInput:
        node = self.feed_nodes[ref]
        return FeedInput(ref.full_name, node.name, node.op, str(self.shapes.dtype(ref).base),
                         str(self.shapes.shape(ref)), used)


# --- what `dftool run` needs to run pruned graphs ---------------------------------------------

def fed_tensor_aliases(graph: Graph, role: str | None = None) -> dict[str, TensorRef]:
    """'node:k' -> the feed node prune made for that tensor (from its `_fed_tensor` attr), and
    'key:0' -> the node standing for a SavedModel signature input (role "feed") or output (role
    "fetch") `key`; a signature may use one key for an input and an output. No role: both."""
    by_role: dict[str | None, tuple[str, ...]] = {
        "feed": (SIGNATURE_INPUT_ATTR,), "fetch": (SIGNATURE_OUTPUT_ATTR,)}
    attrs = by_role.get(role, (SIGNATURE_INPUT_ATTR, SIGNATURE_OUTPUT_ATTR))
    aliases = {}
    for node in graph.nodes:
        if node.has_attr(FED_TENSOR_ATTR):
            aliases[node.attr(FED_TENSOR_ATTR)] = node.output(0)
        for attr in attrs:
            if node.has_attr(attr):
                aliases[f"{node.attr(attr)}:0"] = node.output(0)
    return aliases


def retval_names(graph: Graph) -> list[str]:
    """The `_Retval` nodes of a call-frame graph in index order (the default fetches)."""
    retvals = [n for n in graph.nodes if n.op == "_Retval"]
    return [n.name for n in sorted(retvals, key=lambda n: (n.attr("index"), n.name))]
