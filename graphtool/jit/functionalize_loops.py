"""v1 while frames -> functional While / StatelessWhile nodes (TensorFlow's functionalize_while).

    Enter(x) -> Merge <- NextIteration <- body(...)          x ----> While(cond=f_cond, body=f_body)
                  |-> cond(...) -> LoopCond                  c ----/   (c: a loop invariant, passed
                  `-> Switch(., LoopCond) -:1-> body                    through the body unchanged)
                                          -:0-> Exit -> y    y = Identity(While:0)  (the Exit's name)
    Enter(c, is_constant) -> body / cond

One frame at a time, innermost first, so an inner loop is already one While node inside its
outer loop's body. Loop variables come first (in Merge order), then the invariants. The cond
function is everything the LoopCond's input depends on back to the Merges; the body function
everything else in the frame (what the NextIterations read, and nodes run only for their effect,
which become control outputs). Conds inside either function are functionalized there too.
A frame the pass cannot read (a stray NextIteration, a Switch:0 feeding something other than an
Exit, ref-typed loop values, ...) is left as it is with the reason.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes
from ..ir import Graph, Node, TensorRef
from ..ir.frames import ENTER_OPS, EXIT_OPS, NEXT_ITERATION_OPS
from ..proto.attr_value_pb2 import NameAttrList
from . import function_writer as fw
from .subgraph import ShapeBook, Unconvertible, backward_closure, copy_nodes, in_graph_order, stand_in

_LOOP_OPS = ENTER_OPS | EXIT_OPS | NEXT_ITERATION_OPS | {"LoopCond"}
_REF_FLOW_OPS = frozenset({"RefEnter", "RefExit", "RefNextIteration", "RefSwitch", "RefMerge"})


@dataclass
class _LoopVar:
    enter: Node
    merge: Node
    switch: Node
    next_iteration: Node
    exits: list[Node]


def functionalize_loops(graph: Graph, shapes: ShapeBook, report) -> None:
    """Turn every convertible while frame of `graph` into a While node, innermost first: each
    sweep converts the frames holding no other loop (they share no node, so one frame analysis
    serves them all); their parents are innermost in the next sweep."""
    failed: set[str] = set()
    while True:
        info = graph.frames()
        if info.problems:
            report.refuse("graph", "", f"its control-flow frames are inconsistent: {info.problems[0]}")
            return
        loops = [f for f in info.loops if f.name not in failed]
        if not loops:
            return
        parents = {f.parent for f in loops}
        for frame in [f for f in loops if f not in parents]:
            # A child left as v1 (it failed) blocks its parent: the parent holds a v1 loop.
            blocked = [c for c in info.loops if c.parent is frame and c.name in failed]
            try:
                if blocked:
                    raise Unconvertible(f"it holds loop '{blocked[0].name}', which could not be converted")
                with report.transaction(graph):
                    _convert_frame(graph, frame, shapes, report)
            except Unconvertible as exc:
                failed.add(frame.name)
                report.refuse("while loop", frame.name, str(exc))


def _loop_structure(frame) -> tuple[Node, list[_LoopVar], list[Node], set[Node]]:
    """(LoopCond, loop variables, invariant Enters, the machinery nodes) of a frame."""
    members = set(frame.nodes)
    refs = [n for n in frame.nodes + frame.enters if n.op in _REF_FLOW_OPS]
    if refs:
        raise Unconvertible(f"it carries ref-typed values ('{refs[0].name}', {refs[0].op})")
    loop_conds = [n for n in frame.nodes if n.op == "LoopCond"]
    if len(loop_conds) != 1:
        raise Unconvertible(f"it has {len(loop_conds)} LoopCond nodes, expected 1")
    loop_cond = loop_conds[0]
    variables, invariants = [], []
    for enter in frame.enters:
        if enter.attr("is_constant", False):
            invariants.append(enter)
            continue
        users = enter.consumers()
        merges = [u for u in users if u.op == "Merge"]
        if len(merges) != 1 or len(users) != 1 or enter.control_uses:
            raise Unconvertible(f"Enter '{enter.name}' is not a loop variable feeding one Merge")
        variables.append(_variable(enter, merges[0], loop_cond, members))
    claimed = {v.switch for v in variables}
    stray = [n for n in frame.nodes if n.op == "Switch" and n.inputs[1] == loop_cond.output(0) and n not in claimed]
    if stray:
        raise Unconvertible(f"Switch '{stray[0].name}' on the loop condition switches no loop variable")
    machinery = {loop_cond, *frame.enters}
    for var in variables:
        machinery.update([var.merge, var.switch, var.next_iteration, *var.exits])
    waiting = [n for n in machinery - set(frame.enters) if n.op not in NEXT_ITERATION_OPS and n.control_inputs]
    if waiting:
        raise Unconvertible(f"'{waiting[0].name}' ({waiting[0].op}) has control inputs")
    leftover = [n for n in frame.nodes if n.op in _LOOP_OPS and n not in machinery]
    if leftover:
        raise Unconvertible(f"'{leftover[0].name}' ({leftover[0].op}) belongs to no loop variable")
    return loop_cond, variables, invariants, machinery


def _variable(enter: Node, merge: Node, loop_cond: Node, members: set[Node]) -> _LoopVar:
    inputs = [r.node for r in merge.inputs]
    nexts = [n for n in inputs if n.op in NEXT_ITERATION_OPS]
    if len(inputs) != 2 or len(nexts) != 1 or enter not in inputs or merge not in members:
        raise Unconvertible(f"Merge '{merge.name}' does not join one Enter and one NextIteration")
    if merge.uses(1) or merge.control_inputs:
        raise Unconvertible(f"Merge '{merge.name}' has its value_index or control inputs used")
    switches = [u for u, slot in merge.uses(0) if u.op == "Switch" and slot == 0
                and u.inputs[1] == loop_cond.output(0)]
    if len(switches) != 1:
        raise Unconvertible(f"Merge '{merge.name}' feeds {len(switches)} Switches on the loop condition")
    switch = switches[0]
    exits = [u for u, _ in switch.uses(0)]
    if any(e.op not in EXIT_OPS for e in exits) or switch.control_inputs:
        raise Unconvertible(f"Switch '{switch.name}' feeds something other than an Exit when the loop ends")
    return _LoopVar(enter, merge, switch, nexts[0], exits)


def _convert_frame(graph: Graph, frame, shapes: ShapeBook, report) -> None:
    loop_cond, variables, invariants, machinery = _loop_structure(frame)
    if not variables:
        raise Unconvertible("it has no loop variable")
    work = [n for n in frame.nodes if n not in machinery]
    inside = set(work)
    cond_nodes = backward_closure([loop_cond.inputs[0].node], inside.__contains__)
    body_roots = [v.next_iteration.inputs[0].node for v in variables]
    needed = backward_closure(body_roots + [c for v in variables for c in v.next_iteration.control_inputs],
                              inside.__contains__)
    # What neither the condition nor the next iteration needs (a NextIteration's control inputs
    # count as needed) does not run in the v1 loop either: fetching an Exit prunes it. It goes
    # with the loop, unless the caller keeps (fetches or targets) one of its nodes.
    kept = [n for n in frame.nodes + frame.enters if n.name in report.keep and n.op not in EXIT_OPS]
    if kept:
        raise Unconvertible(f"loop node '{kept[0].name}' is to be kept (fetched)")
    body_nodes = needed
    shared = [n for n in cond_nodes & body_nodes if fw.is_stateful(n)]
    if shared:   # copied into both functions, it would run twice an iteration
        raise Unconvertible(f"stateful node '{shared[0].name}' ({shared[0].op}) feeds both the condition and the body")
    # What the next iteration waits for besides the values (a NextIteration's control inputs).
    ordering = [c for v in variables for c in v.next_iteration.control_inputs if c in body_nodes]

    entries = [v.enter for v in variables] + invariants
    arg_dtypes = [e.attr("T") for e in entries]
    arg_shapes = [shapes.shape(v.merge.output(0)) for v in variables] + [shapes.shape(e.output(0)) for e in invariants]
    scope = loop_cond.name.rpartition("/")[0] or frame.name

    def build(what: str, nodes: set[Node], results: list[tuple[TensorRef | None, int]], ctrl_out):
        body = fw.new_body(graph.library)
        args = [fw.add_arg(body, f"loop_var_{k}", d, k, s) for k, (d, s) in enumerate(zip(arg_dtypes, arg_shapes))]
        arg_of = {}
        for k, var in enumerate(variables):
            arg_of[var.merge.output(0)] = args[k].output(0)
            arg_of[var.switch.output(1)] = args[k].output(0)
        for j, enter in enumerate(invariants):
            arg_of[enter.output(0)] = args[len(variables) + j].output(0)
        mapping = copy_nodes(body, in_graph_order(graph, nodes), arg_of, machinery, f"loop '{frame.name}' {what}")
        retvals = []
        for k, (ref, arg_index) in enumerate(results):
            if ref is None:   # a loop invariant, passed through
                value = args[arg_index].output(0)
            else:
                found = TensorRef(mapping[ref.node], ref.index) if ref.node in mapping else arg_of.get(ref)
                if found is None:
                    raise Unconvertible(f"the {what} returns '{ref.name}' ({ref.node.op}) from the loop machinery")
                value = found
            dtype = dtypes.bool_ if what == "cond" else arg_dtypes[k]
            retvals.append(fw.add_retval(body, f"{what}_out_{k}", value, dtype, k))
        from .functionalize_conds import functionalize_conds

        functionalize_conds(body, shapes, report, within=f"loop '{frame.name}' {what}")
        outputs = fw.surviving(body, [mapping[n] for n in ctrl_out])
        name = fw.function_name(graph.library, f"{scope}_{what}")
        fdef = fw.add_function(graph.library, name, body, args, retvals, outputs)
        return name, fdef.signature.is_stateful

    pred = loop_cond.inputs[0]
    cond_name, cond_stateful = build("cond", cond_nodes, [(pred, 0)], [])
    results: list[tuple[TensorRef | None, int]] = [(v.next_iteration.inputs[0], k) for k, v in enumerate(variables)]
    results += [(None, len(variables) + j) for j in range(len(invariants))]
    body_name, body_stateful = build("body", body_nodes, results, ordering)
    op = "While" if cond_stateful or body_stateful else "StatelessWhile"
    controls = list(dict.fromkeys(c for e in entries for c in e.control_inputs))
    attrs = {"T": arg_dtypes, "cond": NameAttrList(name=cond_name), "body": NameAttrList(name=body_name),
             "parallel_iterations": frame.parallel_iterations}
    if any(s.dims is not None for s in arg_shapes):
        attrs["output_shapes"] = arg_shapes
    loop = graph.add_node(op, graph.unique_name(f"{scope}/functional_while"), inputs=[e.inputs[0] for e in entries],
                          control_inputs=controls, attrs=attrs, device=loop_cond.device or entries[0].device)
    stand_ins = [(stand_in(graph, exit_, loop.output(k), arg_dtypes[k]), exit_.name)
                 for k, var in enumerate(variables) for exit_ in var.exits]
    graph.remove_nodes(set(frame.nodes) | set(frame.enters))
    for node, name in stand_ins:
        graph.rename(node, name)
    report.converted[op] += 1
    report.functions += [cond_name, body_name]
    report.nodes.append(loop.name)

