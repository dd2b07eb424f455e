"""v1 conds (Switch/Merge on one predicate) -> functional If / StatelessIf nodes (TensorFlow's
functionalize_cond, for the shapes tf.cond builds).

    x -> Switch(x, p) -:1-> then nodes -> Merge -> y      x, z -> If(p, then_branch=f_t, else_branch=f_e)
                      -:0-> else nodes -/                  y = Identity(If:0)   (the Merge's name)
    z -------------------------------^ (read directly by a branch node: an If input too)

Every tensor gets a *branch state*: the set of (predicate, side) pairs it is alive under, from
the Switches it passed and the Merges that joined branches again. A Merge whose two inputs differ
in exactly one pair (p, true) / (p, false) closes a cond on p; the Merges closing conds on the same
p under the same outer state are one If. Each side's function is what its Merge inputs depend on
under (p, side); switched tensors and tensors read from outside become the If's inputs (shared by
both branches). Innermost conds go first, so an outer branch holds the inner If. A Merge fed from
different predicates, a branch value used outside its cond, or a used value_index stay as they
are with the reason.
"""
from __future__ import annotations

from collections import defaultdict

from .. import dtypes
from ..ir import Graph, Node, TensorRef
from ..ir.frames import ENTER_OPS, EXIT_OPS, NEXT_ITERATION_OPS
from ..proto.attr_value_pb2 import NameAttrList
from . import function_writer as fw
from .subgraph import ShapeBook, Unconvertible, backward_closure, copy_nodes, in_graph_order, stand_in

_LOOP_OPS = ENTER_OPS | EXIT_OPS | NEXT_ITERATION_OPS | {"LoopCond"}
_SIDES = ((1, "then"), (0, "else"))


def _is_cond_switch(node: Node) -> bool:
    return node.op == "Switch" and len(node.inputs) == 2 and node.inputs[1].node.op != "LoopCond"


def canonical_pred(ref: TensorRef) -> TensorRef:
    """The tensor a predicate copies: an Identity (tf.cond's pred_id) does not change its value, so
    Switches on p and on Identity(p) belong to one cond. (When the copies are alive is the branch
    states' business; the If waits for the copies' control inputs, see _pred_controls.)"""
    seen = 0
    while ref.node.op == "Identity" and len(ref.node.inputs) == 1 and seen < 1000:
        ref, seen = ref.node.inputs[0], seen + 1
    return ref


def _pred_controls(switches: list[Node]) -> list[Node]:
    """The control inputs along the Identity chains from the switches' predicates to the canonical
    one: the If reads the canonical predicate, so it waits for those itself."""
    found: dict[Node, None] = {}
    for switch in switches:
        ref, seen = switch.inputs[1], 0
        while ref.node.op == "Identity" and len(ref.node.inputs) == 1 and seen < 1000:
            found.update(dict.fromkeys(ref.node.control_inputs))
            ref, seen = ref.node.inputs[0], seen + 1
    return list(found)


def _is_cond_merge(node: Node) -> bool:
    return node.op == "Merge" and not any(r.node.op in NEXT_ITERATION_OPS or r.node.op in ENTER_OPS
                                          for r in node.inputs)


class BranchStates:
    """Branch states of every node's inputs (`of`) and of every output (`out`)."""

    def __init__(self, graph: Graph):
        self.of: dict[Node, frozenset] = {}
        self.closes: dict[Node, tuple[TensorRef, frozenset] | str] = {}   # Merge -> (p, outer) or why not
        self.sinks: dict[tuple, list[Node]] = defaultdict(list)   # (p, side) -> nodes nothing uses
        for node in graph.topological_order():
            self.learn(node)

    def learn(self, node: Node) -> None:
        """The state of `node` from its inputs' (new nodes are learnt after a conversion)."""
        state: frozenset = frozenset()
        if node.op == "ControlTrigger":
            pass   # never dead: it fires once its inputs are done, dead or alive
        elif _is_cond_merge(node):
            state = self._merge(node)
        else:
            for ref in node.inputs:
                state |= self.out(ref)
        for control in node.control_inputs if node.op != "ControlTrigger" else ():
            state |= self.of.get(control, frozenset())
        self.of[node] = state
        if not node.has_users:
            for key in state:
                self.sinks[key].append(node)

    def out(self, ref: TensorRef) -> frozenset:
        state = self.of.get(ref.node, frozenset())   # back edges (NextIteration) are not seen yet
        if _is_cond_switch(ref.node) and ref.index in (0, 1):
            state = state | {(canonical_pred(ref.node.inputs[1]), ref.index)}
        return state

    def _merge(self, merge: Node) -> frozenset:
        states = [self.out(r) for r in merge.inputs]
        common = frozenset.intersection(*states) if states else frozenset()
        if len(states) != 2:
            self.closes[merge] = f"it joins {len(states)} inputs, not 2"
            return common
        a, b = states
        diff_a, diff_b = a - b, b - a
        if len(diff_a) == 1 and len(diff_b) == 1:
            (pa, sa), = diff_a
            (pb, sb), = diff_b
            if pa == pb and sa != sb:
                self.closes[merge] = (pa, common)
                return common
        self.closes[merge] = "its inputs are not the two sides of one predicate's Switches"
        return common


def functionalize_conds(graph: Graph, shapes: ShapeBook, report, within: str = "") -> None:
    """Turn every convertible Switch/Merge cond of `graph` into an If node, innermost first."""
    failed: set[str] = set()
    where = f" (in {within})" if within else ""
    while True:
        states = BranchStates(graph)
        groups: dict[tuple, list[Node]] = defaultdict(list)
        for merge in graph.nodes:
            if merge not in states.closes or merge.name in failed:
                continue
            closes = states.closes[merge]
            if isinstance(closes, str):
                failed.add(merge.name)
                report.refuse("cond", merge.name + where, closes)
                continue
            groups[closes].append(merge)
        # Innermost first (the longest outer state); conds a sweep converts change no other
        # node's state, so one sweep converts every group whose Merges do not wait for another's.
        progress = False
        for (pred, outer), group in sorted(groups.items(), key=lambda item: -len(item[0][1])):
            # A group's Merges that wait for another of its Merges (conds in a row on one predicate,
            # a gradient cond reading the forward one) become Ifs of their own, one layer at a time.
            while True:
                merges = _independent([m for m in group if graph.get(m.name) is m and m.name not in failed])
                if not merges:
                    break
                progress = True   # converted, or failed for good: either way the next sweep has less to do
                try:
                    with report.transaction(graph):
                        made = _convert(graph, pred, outer, merges, states, shapes, report)
                except Unconvertible as exc:
                    failed.update(m.name for m in merges)
                    report.refuse("cond", merges[0].name + where, str(exc))
                    continue
                for node in made:
                    states.learn(node)
        if not progress:
            return


def _independent(merges: list[Node]) -> list[Node]:
    """The Merges of a group that depend on no other Merge of it: a gradient cond on the same
    predicate reads the forward cond's result, so it becomes an If of its own afterwards."""
    later: set[Node] = set()
    pending = [c for m in merges for c in m.consumers()]
    while pending:
        node = pending.pop()
        if node in later:
            continue
        later.add(node)
        pending.extend(node.consumers())
    return [m for m in merges if m not in later]


def _convert(graph: Graph, pred: TensorRef, outer: frozenset, merges: list[Node], states: BranchStates,
             shapes: ShapeBook, report) -> list[Node]:
    """One If for the conds on `pred` the `merges` close; returns the nodes it made (their branch
    states are the caller's to learn)."""
    if any(m.uses(1) for m in merges):
        raise Unconvertible("a Merge's value_index is used")
    sides = {}
    for side, label in _SIDES:
        key = (pred, side)
        results = []
        for merge in merges:
            refs = [r for r in merge.inputs if key in states.out(r)]
            results.append(refs[0])
        in_branch = (lambda n, key=key: key in states.of[n] and not _switches_on(n, pred))
        # Besides what the Merges read: what nothing reads (a fetch of the Merges prunes it in
        # the v1 cond too), gone with the branch unless the caller keeps it (then the cond stays).
        sinks = [n for n in states.sinks[key] if graph.get(n.name) is n and not n.has_users and in_branch(n)]
        nodes = backward_closure([r.node for r in results] + sinks, in_branch)
        kept = [n for n in nodes if n.name in report.keep]
        if kept:
            raise Unconvertible(f"branch node '{kept[0].name}' is to be kept (fetched)")
        sides[side] = (label, results, nodes)
    branch_nodes = sides[1][2] | sides[0][2]
    bad = [n for n in branch_nodes if n.op in _LOOP_OPS or (n.op == "Merge" and not _is_cond_merge(n))]
    if bad:
        raise Unconvertible(f"branch node '{bad[0].name}' ({bad[0].op}) is part of an unconverted loop")
    closing = set(merges)
    escapes = _escapes(graph, sides, branch_nodes | closing, shapes)
    # What the functions compute: what the Merges and the escaped values need.
    sides = {side: (label, results, backward_closure([r.node for r in results] +
                                                     [ref.node for ref, s in escapes if s == side],
                                                     nodes.__contains__))
             for side, (label, results, nodes) in sides.items()}

    # The If's inputs: each switched tensor (by what it switches) and each tensor read from outside.
    inputs: list[TensorRef] = []
    index_of: dict[TensorRef, int] = {}
    extra_controls: list[Node] = []
    dropped: set[Node] = set()

    def outer_value(ref: TensorRef, side: int) -> TensorRef:
        if _switches_on(ref.node, pred):
            if ref.index != side:
                raise Unconvertible(f"'{ref.name}' is read on the other side of the cond")
            return ref.node.inputs[0]
        return ref

    for side, (_, results, nodes) in sides.items():
        boundary = [r for n in nodes for r in n.inputs if r.node not in nodes]
        boundary += [r for r in results if r.node not in nodes]
        for ref in boundary:
            if not states.out(ref) - {(pred, side)} <= outer:
                raise Unconvertible(f"the {'then' if side else 'else'} branch reads '{ref.name}', which is "
                                    f"alive under other predicates than the cond's")
            value = outer_value(ref, side)
            if value not in index_of:
                index_of[value] = len(inputs)
                inputs.append(value)
        for node in nodes:
            for control in node.control_inputs:
                if control in nodes:
                    continue
                if not states.of[control] <= outer | {(pred, side)}:
                    raise Unconvertible(f"branch node '{node.name}' waits for '{control.name}', which is alive "
                                        f"under other predicates than the cond's")
                dropped.add(control)
                if not _switches_on(control, pred) and control not in extra_controls:
                    extra_controls.append(control)

    readers = [*branch_nodes, *merges]
    switches = [p for n in readers for p in n.input_nodes() if _switches_on(p, pred)]
    extra_controls += [c for c in _pred_controls(switches) if c not in extra_controls]
    in_dtypes = [_dtype(r) for r in inputs]
    if any(d.is_ref for d in in_dtypes) or any(m.attr("T").is_ref for m in merges):
        raise Unconvertible("a ref-typed value crosses the cond")
    in_shapes = [shapes.shape(r) for r in inputs]
    out_dtypes = [m.attr("T") for m in merges] + [_dtype(ref) for ref, _ in escapes]
    out_shapes = [shapes.shape(m.output(0)) for m in merges] + [shapes.shape(ref) for ref, _ in escapes]
    scope = merges[0].name.rpartition("/")[0] or merges[0].name
    funcs, stateful = {}, False
    for side, (label, results, nodes) in sides.items():
        body = fw.new_body(graph.library)
        args = [fw.add_arg(body, f"input_{k}", d, k, s) for k, (d, s) in enumerate(zip(in_dtypes, in_shapes))]
        arg_of = {}
        for ref in {r for n in nodes for r in n.inputs if r.node not in nodes} | {r for r in results if r.node not in nodes}:
            arg_of[ref] = args[index_of[outer_value(ref, side)]].output(0)
        mapping = copy_nodes(body, in_graph_order(graph, nodes), arg_of, dropped, f"cond '{scope}' {label} branch")
        values = [TensorRef(mapping[r.node], r.index) if r.node in mapping else arg_of[r] for r in results]
        values += [TensorRef(mapping[ref.node], ref.index) if escape_side == side
                   else _zeros(body, shapes.shape(ref), _dtype(ref), f"escaped_{k}")
                   for k, (ref, escape_side) in enumerate(escapes)]
        retvals = [fw.add_retval(body, f"{label}_out_{k}", v, d, k) for k, (v, d) in enumerate(zip(values, out_dtypes))]
        functionalize_conds(body, shapes, report, within=f"cond '{scope}' {label} branch")
        name = fw.function_name(graph.library, f"{scope}_{label}")
        fdef = fw.add_function(graph.library, name, body, args, retvals)
        funcs[label] = name
        stateful = stateful or fdef.signature.is_stateful
    op = "If" if stateful else "StatelessIf"
    attrs = {"Tcond": dtypes.bool_, "Tin": in_dtypes, "Tout": out_dtypes,
             "then_branch": NameAttrList(name=funcs["then"]), "else_branch": NameAttrList(name=funcs["else"])}
    if any(s.dims is not None for s in out_shapes):
        attrs["output_shapes"] = out_shapes
    cond = graph.add_node(op, graph.unique_name(f"{scope}/functional_if"), inputs=[pred, *inputs],
                          control_inputs=extra_controls, attrs=attrs, device=merges[0].device)
    plumbing = [n for n in _plumbing(switches) if n.name not in report.keep]
    stand_ins = [(stand_in(graph, m, cond.output(k), out_dtypes[k]), m.name) for k, m in enumerate(merges)]
    # An escaped value reaches its outside readers through a Switch on the predicate, so they are
    # alive exactly when they were (when the value's branch ran), with that branch's value.
    gates = []
    for k, (ref, side) in enumerate(escapes):
        gate = graph.add_node("Switch", graph.unique_name(f"{ref.node.name}/escaped"),
                              inputs=[cond.output(len(merges) + k), pred], attrs={"T": out_dtypes[len(merges) + k]},
                              device=ref.node.device)
        for user, slot in ref.node.uses(ref.index):
            if user not in branch_nodes:
                user.set_input(slot, gate.output(side))
        gates.append(gate)
    graph.remove_nodes(branch_nodes | closing)
    for node, name in stand_ins:
        graph.rename(node, name)
    _drop_idle(graph, plumbing)
    report.converted[op] += 1
    report.functions += [funcs["then"], funcs["else"]]
    report.nodes.append(cond.name)
    return [cond, *(node for node, _ in stand_ins), *gates]


def _escapes(graph: Graph, sides, inside: set[Node], shapes: ShapeBook) -> list[tuple[TensorRef, int]]:
    """Branch values read outside the cond (a v1 gradient cond reads the forward branch's values),
    with their side. Each becomes one more If output, the other branch giving zeros of its
    shape, so its static shape must be known."""
    escapes = []
    for side, (_, _, nodes) in sides.items():
        for node in in_graph_order(graph, nodes):
            waiting = [u for u in node.control_uses if u not in inside]
            if waiting:
                raise Unconvertible(f"branch node '{node.name}' is waited for by '{waiting[0].name}' outside the cond")
            for index in sorted({slot_ref.index for slot_ref in (u.inputs[s] for u, s in node.uses())}):
                readers = [u for u, _ in node.uses(index) if u not in inside]
                if not readers:
                    continue
                ref = node.output(index)
                shape, dtype = shapes.shape(ref), _dtype(ref)
                if not shape.fully_defined or not (dtype.is_numeric or dtype.is_bool) or dtype.is_ref:
                    raise Unconvertible(f"branch value '{ref.name}' ({dtype.name}, shape {shape}) is also used by "
                                        f"'{readers[0].name}' outside the cond")
                escapes.append((ref, side))
    return escapes


def _zeros(body: Graph, shape, dtype, name: str) -> TensorRef:
    """Zeros of a static shape inside a branch function (what the other branch returns for an
    escaped value)."""
    import numpy as np

    dims = body.add_node("Const", body.unique_name(f"{name}/shape"),
                         attrs={"dtype": dtypes.int32, "value": np.asarray(shape.dims, np.int32)})
    zero = body.add_node("Const", body.unique_name(f"{name}/zero"),
                         attrs={"dtype": dtype, "value": np.zeros((), dtype.numpy)})
    return body.add_node("Fill", body.unique_name(name), inputs=[dims.output(0), zero.output(0)],
                         attrs={"T": dtype, "index_type": dtypes.int32}).output(0)


def _switches_on(node: Node, pred: TensorRef) -> bool:
    return _is_cond_switch(node) and canonical_pred(node.inputs[1]) == pred


def _dtype(ref: TensorRef):
    if ref.node.op == "_Arg":
        return ref.node.attr("T")
    spec = ref.node.spec
    if spec is None:
        from ..ops import opaque

        return opaque.dtype_of(ref)
    return spec.output_dtypes(ref.node)[ref.index]


def _plumbing(switches: list[Node]) -> list[Node]:
    """The cond's Switches, their pivots (Identities of them) and the Identity chains (pred_id)
    their predicates come through: what may lose its last user when the cond is converted."""
    found: dict[Node, None] = {}
    for switch in switches:
        found[switch] = None
        found.update((u, None) for u in switch.consumers() if u.op == "Identity")
        ref, seen = switch.inputs[1], 0
        while ref.node.op == "Identity" and len(ref.node.inputs) == 1 and seen < 1000:
            found[ref.node] = None
            ref, seen = ref.node.inputs[0], seen + 1
    return [n for n in found if n.has_users]


def _drop_idle(graph: Graph, plumbing: list[Node]) -> None:
    """The cond's plumbing that the conversion left without users (it had some before)."""
    alive = {n for n in plumbing if graph.get(n.name) is n}
    pending = list(alive)
    while pending:
        node = pending.pop()
        if node not in alive or node.has_users:
            continue
        alive.discard(node)
        producers = [p for p in node.input_nodes() if p in alive]
        graph.remove_node(node)
        pending.extend(producers)
