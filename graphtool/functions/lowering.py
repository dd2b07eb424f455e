"""Lowering TensorFlow 2 functional ops to v1 control flow (TensorFlow's LowerFunctionalOps plus
function inlining), so placement, partitioning, gradients and the executor's frames see one graph.

    report = lower_functional_ops(graph)    # in place; report.counts == {"StatelessWhile": 1, ...}

- PartitionedCall / StatefulPartitionedCall (and a node whose op names a library function): the
  body is inlined (graphtool/functions/inline.py).
- If / StatelessIf: a Switch/Merge cond. The predicate goes through ToBool unless it is bool;
  branch nodes without data inputs hang on a pivot Identity of the predicate, so they are dead
  with their branch.
- Case / StatelessCase: a chain of conds on `index == k`; an index out of range (negative too)
  runs the last branch, as TensorFlow does.
- While / StatelessWhile: an Enter/Merge/Switch/LoopCond/NextIteration/Exit frame named after the
  node (unique), with the While's parallel_iterations.
- SymbolicGradient: f is inlined and differentiated with graphtool/grad (the vector-Jacobian
  product with the incoming gradients).

Bodies are lowered before they are inlined, so functions nested in functions, calls in loop bodies
and conds in loops come out lowered at every depth. The lowered node's name survives as an
IdentityN of the results (a NoOp when there are none), so `while:0` fetches, feeds, `--expect`
files and `^node` control users keep working; the side effects of the body (control_ret) run
before it. Functions nothing calls afterwards are dropped from the library.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .. import dtypes
from ..errors import InvalidGraphError
from ..ir import Graph, Node, TensorRef
from .inline import inline_body
from .instantiate import MAX_CALL_DEPTH, FunctionBody, instantiate
from .library import CALL_OPS, drop_unreferenced, function_names

_IF_OPS = ("If", "StatelessIf")
_CASE_OPS = ("Case", "StatelessCase")
_WHILE_OPS = ("While", "StatelessWhile")


# Nodes all inlining of one graph may create (function bodies copied into callers, nested ones
# counted at every level). Far beyond real models; a library of a few kilobytes whose functions
# each call the next twice would otherwise make 2^depth copies (memory and time without bound).
MAX_INLINED_NODES = 1 << 18


@dataclass
class LoweringReport:
    counts: Counter = field(default_factory=Counter)   # op -> nodes lowered (nested ones included)
    dropped_functions: list[str] = field(default_factory=list)
    inlined_nodes: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.counts) or bool(self.dropped_functions)

    def summary(self) -> str:
        """'1 StatelessWhile, 2 PartitionedCall' (most frequent first)."""
        return ", ".join(f"{n} {op}" for op, n in self.counts.most_common())

    def notice(self) -> str:
        """The one line commands print on stderr."""
        text = f"lowered functional ops to v1 control flow: {self.summary()}"
        if self.dropped_functions:
            text += f"; {len(self.dropped_functions)} function(s) no longer called dropped from the library"
        return text


def needs_lowering(graph: Graph) -> bool:
    """Whether the graph holds a functional op or a call of a library function."""
    from .library import FUNCTIONAL_OPS

    known = function_names(graph.library) if len(graph.library.function) else set()
    return any(n.op in FUNCTIONAL_OPS or n.op in known for n in graph.nodes)


def lower_functional_ops(graph: Graph) -> LoweringReport:
    """Lower every functional op of `graph` in place (see the module docstring); InvalidGraphError
    naming the function and node for a malformed body or a missing function."""
    report = LoweringReport()
    _lower_graph(graph, report, 0)
    if report.counts:
        report.dropped_functions = drop_unreferenced(graph)
    return report


def _lower_graph(graph: Graph, report: LoweringReport, depth: int) -> None:
    known = function_names(graph.library) if len(graph.library.function) else set()
    for node in graph.nodes:
        lowerer = _LOWERERS.get(node.op) or (_lower_call if node.op in known else None)
        if lowerer is None:
            continue
        if depth >= MAX_CALL_DEPTH:
            raise InvalidGraphError(f"node '{node.name}' ({node.op}): functions nest deeper than "
                                    f"{MAX_CALL_DEPTH} levels (a function calling itself?)")
        size = len(graph)
        op = node.op
        lowerer(graph, node, _Context(graph, report, depth))
        report.counts[op] += 1
        # The new nodes come last (the replacement, renamed, is the very last).
        added = len(graph) - size + 1
        _drop_unused_plumbing(graph, graph.nodes[-added:] if added > 0 else [])


# Skeleton nodes a lowering may leave without users (a switched input no branch reads, a pivot of
# a branch without inputs): dropped so they do not show up as graph outputs.
_PLUMBING_OPS = frozenset({"Identity", "Switch", "Const", "Equal"})


def _drop_unused_plumbing(graph: Graph, created: list[Node]) -> None:
    candidates = {n for n in created if n.op in _PLUMBING_OPS}
    pending = list(candidates)
    while pending:
        node = pending.pop()
        if node not in candidates or node.has_users:
            continue
        candidates.discard(node)
        producers = [p for p in node.input_nodes() if p in candidates]
        graph.remove_node(node)
        pending.extend(producers)


@dataclass
class _Context:
    graph: Graph
    report: LoweringReport
    depth: int

    def body(self, func_name: str, call_attrs, caller: Node) -> FunctionBody:
        """The instantiated body, with its own functional ops already lowered."""
        body = instantiate(self.graph.library, func_name, call_attrs, caller.name)
        _lower_graph(body.graph, self.report, self.depth + 1)
        # A malformed body node (a type attr holding an int) is the input's fault: say so naming the
        # function, before it is inlined or differentiated (where it would look like dftool's bug).
        problems = body.graph.problems()
        if problems:
            more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
            raise InvalidGraphError(f"function '{func_name}' (called by '{caller.name}'): {problems[0]}{more}")
        # A lowered node's replacement keeps its name; control outputs must point at it.
        body.control_outputs = [body.graph.node(n.name) for n in body.control_outputs]
        return body

    def func_body(self, node: Node, attr_name: str) -> FunctionBody:
        func = node.attr(attr_name)
        return self.body(func.name, dict(func.attr), node)

    def inline(self, body: FunctionBody, inputs, controls, scope: str, device: str, caller: Node, anchor=None):
        if len(inputs) != len(body.args):
            raise InvalidGraphError(f"node '{caller.name}' ({caller.op}) passes {len(inputs)} input(s) to "
                                    f"function '{body.name}', which takes {len(body.args)}")
        self.report.inlined_nodes += len(body.graph)
        if self.report.inlined_nodes > MAX_INLINED_NODES:
            raise InvalidGraphError(f"node '{caller.name}' ({caller.op}): inlining function '{body.name}' "
                                    f"takes the graph past {MAX_INLINED_NODES:,} inlined nodes (calls that "
                                    f"fan out at every level?)")
        return inline_body(self.graph, body, list(inputs), list(controls), scope, device, anchor)


# --- the node that keeps the original name -----------------------------------------------------

def _replace(graph: Graph, old: Node, outputs: list[TensorRef], output_dtypes, after: list[Node]) -> Node:
    """Put an IdentityN of `outputs` (a NoOp if none) named like `old` in its place: data users
    read the new outputs, `^old` users wait for it, and it waits for the nodes in `after`."""
    # (An opaque node calling a function by op name knows only the outputs its consumers use.)
    if len(outputs) < old.num_outputs or (len(outputs) > old.num_outputs and old.spec is not None):
        raise InvalidGraphError(f"node '{old.name}' ({old.op}) has {old.num_outputs} output(s) but its "
                                f"function returns {len(outputs)}")
    temporary = graph.unique_name(f"{old.name}/lowered")
    if outputs:
        new = graph.add_node("IdentityN", temporary, inputs=outputs, control_inputs=after,
                             attrs={"T": list(output_dtypes)}, device=old.device)
    else:
        new = graph.add_node("NoOp", temporary, control_inputs=after, device=old.device)
    for index in range(old.num_outputs):
        graph.replace_all_uses_with(TensorRef(old, index), TensorRef(new, index))
    graph.move_control_uses(old, new)
    name = old.name
    graph.remove_node(old)
    graph.rename(new, name)
    return new


def _const(graph: Graph, name: str, value, dtype, controls, device: str) -> TensorRef:
    import numpy as np

    return graph.add_node("Const", graph.unique_name(name), control_inputs=controls, device=device,
                          attrs={"dtype": dtype, "value": np.asarray(value, dtype.numpy)}).output(0)


def _to_bool(graph: Graph, ref: TensorRef, dtype, scope: str, device: str) -> TensorRef:
    """A bool scalar predicate from `ref` with TensorFlow's rules (ToBool) unless already bool."""
    if dtype.base is dtypes.bool_:
        return ref
    return graph.add_node("ToBool", graph.unique_name(f"{scope}/to_bool"), inputs=[ref], attrs={"T": dtype.base},
                          device=device).output(0)


# --- calls ------------------------------------------------------------------------------------

def _lower_call(graph: Graph, node: Node, ctx: _Context) -> None:
    if node.op in CALL_OPS:
        func = node.attr("f")
        body = ctx.body(func.name, dict(func.attr), node)
    else:   # the op is a library function, called with the node's attrs
        body = ctx.body(node.op, dict(node.attrs), node)
    inlined = ctx.inline(body, node.inputs, node.control_inputs, node.name, node.device, node)
    after = list(inlined.control_outputs)
    if not inlined.outputs and not after:
        after = inlined.inputs or list(node.control_inputs)
    _replace(graph, node, inlined.outputs, body.output_dtypes, after)


# --- conds ------------------------------------------------------------------------------------

def _cond(graph: Graph, scope: str, pred: TensorRef, inputs: list[TensorRef], controls: list[Node],
          device: str, then_build, else_build, in_dtypes, out_dtypes) -> tuple[list[TensorRef], list[Node]]:
    """A v1 cond: inputs switched on `pred`, each side built by `*_build(inputs, pivot)` which
    returns (outputs, control outputs); outputs merged. Returns (merged outputs, nodes to wait for
    so that both sides' effects are done)."""
    switch_pred = graph.add_node("Switch", graph.unique_name(f"{scope}/switch_pred"), inputs=[pred, pred],
                                 control_inputs=controls, attrs={"T": dtypes.bool_}, device=device)
    pivots = [graph.add_node("Identity", graph.unique_name(f"{scope}/pivot_{side}"),
                             inputs=[switch_pred.output(port)], attrs={"T": dtypes.bool_}, device=device)
              for side, port in (("f", 0), ("t", 1))]
    switches = []
    for k, (ref, dtype) in enumerate(zip(inputs, in_dtypes)):
        switches.append(graph.add_node("Switch", graph.unique_name(f"{scope}/switch_{k}"), inputs=[ref, pred],
                                       control_inputs=controls, attrs={"T": dtype}, device=device))
    else_out, else_controls = else_build([s.output(0) for s in switches], pivots[0])
    then_out, then_controls = then_build([s.output(1) for s in switches], pivots[1])
    merged = []
    for k, (t, e) in enumerate(zip(then_out, else_out)):
        merged.append(graph.add_node("Merge", graph.unique_name(f"{scope}/merge_{k}"), inputs=[t, e],
                                     attrs={"T": out_dtypes[k], "N": 2}, device=device).output(0))
    if not (then_controls or else_controls or not merged):
        return merged, []
    done = [graph.add_node("Identity", graph.unique_name(f"{scope}/{side}_done"), inputs=[pivot.output(0)],
                           control_inputs=side_controls, attrs={"T": dtypes.bool_}, device=device).output(0)
            for side, pivot, side_controls in (("then", pivots[1], then_controls),
                                               ("else", pivots[0], else_controls))]
    executed = graph.add_node("Merge", graph.unique_name(f"{scope}/branch_executed"), inputs=done,
                              attrs={"T": dtypes.bool_, "N": 2}, device=device)
    return merged, [executed]


def _dtype_of(ref: TensorRef):
    spec = ref.node.spec
    if spec is not None:
        try:
            return spec.output_dtypes(ref.node)[ref.index].base
        except Exception:
            pass
    raise InvalidGraphError(f"cannot tell the dtype of '{ref.name}' ({ref.node.op}) to lower its consumer")


def _branch(ctx: _Context, body: FunctionBody, scope: str, device: str, caller: Node):
    def build(inputs, pivot):
        inlined = ctx.inline(body, inputs, [pivot], scope, device, caller, anchor=pivot)
        return inlined.outputs, inlined.control_outputs
    return build


def _lower_if(graph: Graph, node: Node, ctx: _Context) -> None:
    scope, device = node.name, node.device
    pred = _to_bool(graph, node.inputs[0], node.attr("Tcond"), scope, device)
    then_body, else_body = ctx.func_body(node, "then_branch"), ctx.func_body(node, "else_branch")
    out_dtypes = node.attr("Tout")
    outputs, after = _cond(graph, scope, pred, list(node.inputs[1:]), list(node.control_inputs), device,
                           _branch(ctx, then_body, f"{scope}/then", device, node),
                           _branch(ctx, else_body, f"{scope}/else", device, node), node.attr("Tin"), out_dtypes)
    _replace(graph, node, outputs, out_dtypes, after)


def _lower_case(graph: Graph, node: Node, ctx: _Context) -> None:
    scope, device = node.name, node.device
    branches = [ctx.body(f.name, dict(f.attr), node) for f in node.attr("branches")]
    in_dtypes, out_dtypes = list(node.attr("Tin")), node.attr("Tout")

    def level(k: int, inputs: list[TensorRef], index: TensorRef, controls: list[Node]):
        if k == len(branches) - 1:
            inlined = ctx.inline(branches[k], inputs, controls, f"{scope}/branch{k}", device, node)
            return inlined.outputs, inlined.control_outputs
        key = _const(graph, f"{scope}/level{k}/index", k, dtypes.int32, controls[:1] or [index.node], device)
        pred = graph.add_node("Equal", graph.unique_name(f"{scope}/level{k}/is_{k}"), inputs=[index, key],
                              attrs={"T": dtypes.int32}, device=device).output(0)

        def taken(switched, pivot):
            inlined = ctx.inline(branches[k], switched[:-1], [pivot], f"{scope}/branch{k}", device, node,
                                 anchor=pivot)
            return inlined.outputs, inlined.control_outputs

        def rest(switched, pivot):
            return level(k + 1, switched[:-1], switched[-1], [pivot])

        return _cond(graph, f"{scope}/level{k}", pred, inputs + [index], controls, device, taken, rest,
                     in_dtypes + [dtypes.int32], out_dtypes)

    outputs, after = level(0, list(node.inputs[1:]), node.inputs[0], list(node.control_inputs))
    _replace(graph, node, outputs, out_dtypes, after)


# --- loops ------------------------------------------------------------------------------------

def _lower_while(graph: Graph, node: Node, ctx: _Context) -> None:
    scope, device = node.name, node.device
    types = node.attr("T")
    if not types:
        raise InvalidGraphError(f"node '{node.name}' ({node.op}) has no loop variables to lower")
    cond_body, loop_body = ctx.func_body(node, "cond"), ctx.func_body(node, "body")
    parallel = node.attr("parallel_iterations")
    frame = scope
    merges = []
    for k, (ref, dtype) in enumerate(zip(node.inputs, types)):
        enter = graph.add_node("Enter", graph.unique_name(f"{scope}/enter_{k}"), inputs=[ref],
                               control_inputs=node.control_inputs, device=device,
                               attrs={"T": dtype, "frame_name": frame, "is_constant": False,
                                      "parallel_iterations": parallel})
        merges.append(graph.add_node("Merge", graph.unique_name(f"{scope}/merge_{k}"),
                                     inputs=[enter.output(0), enter.output(0)], attrs={"T": dtype, "N": 2},
                                     device=device))
    cond = ctx.inline(cond_body, [m.output(0) for m in merges], [], f"{scope}/cond", device, node)
    if len(cond.outputs) != 1:
        raise InvalidGraphError(f"node '{node.name}' ({node.op}): cond function '{cond_body.name}' returns "
                                f"{len(cond.outputs)} values, expected 1")
    pred = _to_bool(graph, cond.outputs[0], cond_body.output_dtypes[0], f"{scope}/cond", device)
    if cond.control_outputs:   # the cond's side effects happen before the loop goes on
        pred = graph.add_node("Identity", graph.unique_name(f"{scope}/cond/done"), inputs=[pred],
                              control_inputs=cond.control_outputs, attrs={"T": dtypes.bool_},
                              device=device).output(0)
    loop_cond = graph.add_node("LoopCond", graph.unique_name(f"{scope}/loop_cond"), inputs=[pred], device=device)
    switches, exits = [], []
    for k, (merge, dtype) in enumerate(zip(merges, types)):
        switch = graph.add_node("Switch", graph.unique_name(f"{scope}/switch_{k}"),
                                inputs=[merge.output(0), loop_cond.output(0)], attrs={"T": dtype}, device=device)
        switches.append(switch)
        exits.append(graph.add_node("Exit", graph.unique_name(f"{scope}/exit_{k}"), inputs=[switch.output(0)],
                                    attrs={"T": dtype}, device=device).output(0))
    # Input-less body nodes (weights, mostly) wait for the loop condition of their iteration only, not
    # for the loop variables: iterations overlap as far as parallel_iterations allows.
    go = graph.add_node("Switch", graph.unique_name(f"{scope}/switch_pivot"),
                        inputs=[loop_cond.output(0), loop_cond.output(0)], attrs={"T": dtypes.bool_}, device=device)
    pivot = graph.add_node("Identity", graph.unique_name(f"{scope}/pivot_body"), inputs=[go.output(1)],
                           attrs={"T": dtypes.bool_}, device=device)
    body = ctx.inline(loop_body, [s.output(1) for s in switches], [], f"{scope}/body", device, node, anchor=pivot)
    if len(body.outputs) != len(types):
        raise InvalidGraphError(f"node '{node.name}' ({node.op}): body function '{loop_body.name}' returns "
                                f"{len(body.outputs)} values for {len(types)} loop variables")
    for k, (merge, ref, dtype) in enumerate(zip(merges, body.outputs, types)):
        nxt = graph.add_node("NextIteration", graph.unique_name(f"{scope}/next_iteration_{k}"), inputs=[ref],
                             control_inputs=body.control_outputs, attrs={"T": dtype}, device=device)
        merge.set_input(1, nxt.output(0))
    _replace(graph, node, exits, types, [])


# --- SymbolicGradient -------------------------------------------------------------------------

def _lower_symbolic_gradient(graph: Graph, node: Node, ctx: _Context) -> None:
    """dL/dx for f's inputs x given dL/dy for its outputs y (the inputs after the xs): inline f,
    then differentiate sum_k sum(y_k * dy_k) with respect to the inlined inputs."""
    from ..grad.driver import add_gradients

    func = node.attr("f")
    body = ctx.body(func.name, dict(func.attr), node)
    n_in, n_out = len(body.args), len(body.retvals)
    if len(node.inputs) != n_in + n_out:
        raise InvalidGraphError(f"node '{node.name}' (SymbolicGradient): {len(node.inputs)} inputs, expected "
                                f"{n_in} inputs of '{func.name}' and {n_out} output gradients")
    scope, device = node.name, node.device
    inlined = ctx.inline(body, node.inputs[:n_in], node.control_inputs, f"{scope}/forward", device, node)
    terms = []
    for k, (y, dy, dtype) in enumerate(zip(inlined.outputs, node.inputs[n_in:], body.output_dtypes)):
        if not dtype.base.is_floating:
            continue
        product = graph.add_node("Mul", graph.unique_name(f"{scope}/vjp/product_{k}"), inputs=[y, dy],
                                 attrs={"T": dtype.base}, device=device)
        flat = graph.add_node("Reshape", graph.unique_name(f"{scope}/vjp/flat_{k}"),
                              inputs=[product.output(0), _const(graph, f"{scope}/vjp/minus_one_{k}", [-1],
                                                                dtypes.int32, [product], device)],
                              attrs={"T": dtype.base, "Tshape": dtypes.int32}, device=device)
        terms.append(graph.add_node("Sum", graph.unique_name(f"{scope}/vjp/sum_{k}"),
                                    inputs=[flat.output(0), _const(graph, f"{scope}/vjp/axis_{k}", 0, dtypes.int32,
                                                                   [product], device)],
                                    attrs={"T": dtype.base, "Tidx": dtypes.int32, "keep_dims": False},
                                    device=device).output(0))
    if not terms:
        raise InvalidGraphError(f"node '{node.name}' (SymbolicGradient): function '{func.name}' has no "
                                f"floating output to differentiate")
    if len(terms) > 1:
        if len({_dtype_of(t) for t in terms}) > 1:
            raise InvalidGraphError(f"node '{node.name}' (SymbolicGradient): outputs of mixed float types")
        total = graph.add_node("AddN", graph.unique_name(f"{scope}/vjp/total"), inputs=terms,
                               attrs={"T": _dtype_of(terms[0]), "N": len(terms)}, device=device).output(0)
    else:
        total = terms[0]
    xs = [identity.output(0) for identity in inlined.inputs]
    gradient_report = add_gradients(graph, total, xs, prefix=f"{scope}/grad")
    grads = [graph.node(entry.name).output(0) for entry in gradient_report.gradients]
    _replace(graph, node, grads, node.attr("Tout"), [])


_LOWERERS = {**{op: _lower_call for op in CALL_OPS}, **{op: _lower_if for op in _IF_OPS},
             **{op: _lower_case for op in _CASE_OPS}, **{op: _lower_while for op in _WHILE_OPS},
             "SymbolicGradient": _lower_symbolic_gradient}

__all__ = ["LoweringReport", "lower_functional_ops", "needs_lowering"]
