"""The gradient driver: add the gradient of y with respect to some xs to a graph, as new nodes.

    report = add_gradients(graph, "loss", ["w", "b"])           # graph now has grad/w, grad/b
    new_graph, report = gradients(graph, "loss", ["w"], prefix="d")   # on a copy: d/w

The gradient of x = node:k is the Identity named `PREFIX/node` (k = 0) or `PREFIX/node_k`
(docs/commands.md). A non-scalar y is differentiated as sum(y) (seeded with ones shaped like y). An x that
y does not depend on through floating values (or that is not floating itself) still gets its
gradient node, zeros shaped like x, with a warning in the report. Backward nodes are named
under `PREFIX/<forward node>_grad/` and placed on the forward node's device.

The walk (walk.py) visits the nodes between the xs and y in reverse topological order, calling
each op's registered gradient function (registry.py); conds are differentiated op by op
(control_flow.py), while loops as a whole, with a backward loop that pops the forward values
saved on stacks (while_loop.py, stacks.py).

y and the xs must live in one frame. At the root that needs nothing more; gradients inside a
while loop body (an in-graph training step) are taken with the GraphBuilder building that body,
passed as `builder`, so the new nodes join that loop.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

import numpy as np

from .. import dtypes
from ..builder.binding import GraphBuildError
from ..errors import InvalidGraphError, RuntimeFailure, UsageError
from ..ir import Frame, Graph, TensorRef, parse_tensor_name
from ..ops import opaque
from .building import current_context
from .forward import ForwardInfo, between, nodes_reaching
from .walk import Backprop
from .while_loop import TopScope

_PREFIX = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/]*$")
_PARAMETER_OPS = ("VariableV2", "Variable")


@dataclass
class GradientEntry:
    x: str            # the tensor differentiated against, as given
    name: str         # the node holding its gradient
    zero: bool        # structurally zero: y does not depend on x


@dataclass
class GradReport:
    y: str
    prefix: str
    gradients: list[GradientEntry] = field(default_factory=list)
    nodes_added: int = 0
    loops: int = 0            # backward while loops built
    stacks: int = 0           # forward loop values saved on stacks
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    def tensors(self, graph: Graph) -> list[TensorRef]:
        """The gradient tensors, in the order of the xs (to keep building with them)."""
        return [graph.tensor(entry.name) for entry in self.gradients]


def gradient_name(x: str, prefix: str = "grad") -> str:
    """docs/commands.md: the gradient of x = node:k is PREFIX/node when k = 0, else PREFIX/node_k."""
    node, port = parse_tensor_name(x)
    return f"{prefix}/{node}" if port == 0 else f"{prefix}/{node}_{port}"


def gradients(graph: Graph, y, xs, prefix: str = "grad") -> tuple[Graph, GradReport]:
    """add_gradients on a copy of `graph`; returns (the copy, the report)."""
    copy = graph.copy()
    return copy, add_gradients(copy, y, xs, prefix)


def add_gradients(graph: Graph, y, xs, prefix: str = "grad", *, builder=None) -> GradReport:
    """Add the gradient of `y` (a tensor name or TensorRef; summed if not scalar) with respect to
    each of `xs` to `graph`, in place. Raises UsageError for a missing tensor, a y that is not
    floating, xs in another frame than y, or gradient names already taken (before changing
    anything); RuntimeFailure for an op without a registered gradient on a path from an x to y
    (the graph may then hold part of the backward nodes: gradients() works on a copy)."""
    prefix = _check_prefix(prefix)
    y_ref = _resolve(graph, y, "y")
    x_refs = list(dict.fromkeys(_resolve(graph, x, "x") for x in xs))
    names = [gradient_name(x.name, prefix) for x in x_refs]
    for x, name in zip(x_refs, names):
        if names.count(name) > 1:
            raise UsageError(f"two xs would both have their gradient named '{name}' ('{x.name}' is one)",
                             hint="differentiate with respect to them in separate calls")
        if name in graph:
            raise UsageError(f"the gradient of '{x.name}' would be named '{name}', which the graph already has",
                             hint="choose another --prefix")
    if builder is None:
        from ..builder import GraphBuilder

        builder = GraphBuilder(graph)
    info = ForwardInfo(graph, builder.shapes)
    if not info.dtype(y_ref).base.is_floating:
        raise UsageError(f"y '{y_ref.name}' is {info.dtype(y_ref).base}: only a floating tensor can be differentiated")
    frame = _common_frame(info, y_ref, x_refs)
    on_path = between(info, y_ref, x_refs)
    opaque.require_known([n for n in graph.nodes if n in on_path], f"differentiate '{y_ref.name}'",
                         hint="differentiate with respect to tensors past them (--x), or prune them away")
    run = Backprop(builder, info, on_path, prefix)
    before = len(graph)
    forward_nodes = set(graph.nodes)
    report = GradReport(y_ref.name, prefix)
    try:
        run.top = TopScope(frame, _top_context(builder, frame, y_ref))
        arrived = run.backprop_region(frame, run.top, {y_ref: [_seed(run, y_ref)]})
        for x, name in zip(x_refs, names):
            report.gradients.append(_emit(run, arrived, y_ref, x, name, report))
    except GraphBuildError as exc:   # outside any one node's gradient (those name their node)
        raise InvalidGraphError(f"cannot build the gradient of '{y_ref.name}': {exc}",
                                hint="the graph's shapes or dtypes do not fit together "
                                     "(dftool inspect shows them)") from None
    complete = current_context(builder) is None
    if complete:
        _drop_unused_backward_nodes(graph, forward_nodes, [graph.node(e.name) for e in report.gradients])
    _check_result(graph, complete=complete)
    report.nodes_added = len(graph) - before
    report.loops, report.stacks = run.loops, run.stacks
    return report


def default_xs(graph: Graph, y) -> list[str]:
    """What `dftool grad` differentiates against when no --x is given: the model's parameters,
    i.e. every floating Variable/VariableV2 and every floating Const of rank >= 1 (frozen
    weights; scalar constants are not parameters) that y depends on through floating values,
    in graph order."""
    from ..shape_inference import infer_shapes

    y_ref = _resolve(graph, y, "y")
    info = ForwardInfo(graph, infer_shapes(graph))
    feeding = nodes_reaching(info, y_ref)
    root = info.frame_of(y_ref)
    found = []
    for node in graph.nodes:
        if node not in feeding or node.op not in (*_PARAMETER_OPS, "Const") or info.frame_of(node) is not root:
            continue
        ref = node.output(0)
        if info.differentiable(ref) and (node.op != "Const" or (info.shapes.shape(ref).rank or 0) >= 1):
            found.append(ref.name)
    return found


# --- checks -----------------------------------------------------------------------------------

def _check_prefix(prefix: str) -> str:
    prefix = prefix.rstrip("/")
    if not prefix or not _PREFIX.match(prefix):
        raise UsageError(f"invalid gradient prefix '{prefix}': use letters, digits and _ . - /")
    return prefix


def _resolve(graph: Graph, tensor, what: str) -> TensorRef:
    if isinstance(tensor, TensorRef):
        return tensor
    try:
        return graph.tensor(str(tensor))
    except UsageError as exc:
        raise UsageError(f"{what} '{tensor}': {exc}", hint=exc.hint) from None


def _describe(frame: Frame) -> str:
    return "the root frame" if frame.is_root else f"while loop frame '{frame.name}'"


def _common_frame(info: ForwardInfo, y: TensorRef, xs: list[TensorRef]) -> Frame:
    frame = info.frame_of(y)
    for x in xs:
        if info.frame_of(x) is not frame:
            raise UsageError(f"x '{x.name}' is in {_describe(info.frame_of(x))} but y '{y.name}' is in "
                             f"{_describe(frame)}; differentiate tensors of one frame",
                             hint="take gradients of a loop's results (its Exits) instead of values inside it")
    return frame


def _top_context(builder, frame: Frame, y: TensorRef):
    """The builder context the gradients are built in: the root, or the while loop (being built
    by `builder`) whose frame y is in."""
    context = current_context(builder)
    if frame.is_root:
        if context is not None:
            raise UsageError(f"y '{y.name}' is at the root but the builder is building {context.describe()}")
        return None
    if context is None or not context.is_loop or context.frame_name != frame.name:
        raise UsageError(f"y '{y.name}' is inside {_describe(frame)}",
                         hint="take gradients inside a loop body with builder= the GraphBuilder building it")
    return context


def _drop_unused_backward_nodes(graph: Graph, forward_nodes: set, results: list) -> None:
    """Remove backward nodes no gradient asked for needs: a gradient function returns a gradient
    for every input (MatMul's for its data input too), and those for tensors that are not xs
    would otherwise dangle as extra graph outputs. Stateful nodes (stack pushes in the forward
    loop) and nodes the forward graph now depends on stay, with everything they need."""
    from ..ops import registry
    from ..prune import needed_nodes

    added = [node for node in graph.nodes if node not in forward_nodes]
    roots = list(results)
    for node in added:
        spec = registry.lookup(node.op)
        if (spec is not None and spec.stateful) or any(user in forward_nodes for user in node.consumers()):
            roots.append(node)
    needed = needed_nodes(graph, roots)
    graph.remove_nodes(node for node in added if node not in needed)


def _check_result(graph: Graph, complete: bool) -> None:
    """The gradient graph must be well formed; a problem here is a bug of the driver. Inside a
    loop body still being built only the frames can be checked."""
    problems = graph.problems() if complete else graph.frames().problems
    if problems:
        raise RuntimeFailure(f"internal error: the gradient graph is invalid: {problems[0]}")


# --- seeding and results ----------------------------------------------------------------------

def _seed(run: Backprop, y: TensorRef) -> TensorRef:
    """dy/dy: ones shaped like y (a non-scalar y is differentiated as the sum of its elements)."""
    b = run.b
    shape = run.info.shapes.shape(y)
    one = np.ones((), run.info.dtype(y).base.numpy)
    with run.building("", y.node.device):
        # Static dims only when they fit the int32 Fill takes here; a declared [2**62] reads y's shape at run time.
        static = shape.fully_defined and all(d < 2**31 for d in shape.as_list())
        dims = np.asarray(shape.as_list(), np.int32) if static else b.op("Shape", [y], out_type=dtypes.int32)
        return b.op("Fill", [dims, one], name="grad_ys")


def _emit(run: Backprop, arrived, y: TensorRef, x: TensorRef, name: str, report: GradReport) -> GradientEntry:
    """The gradient node of x: the sum of what arrived, or zeros shaped like x with a warning."""
    b = run.b
    total = None
    if run.info.differentiable(x):
        with run.grad_scope(x.node):
            total = run.take(arrived, x)
    zero = total is None
    if zero:
        dtype = run.info.dtype(x).base
        reason = (f"{dtype}, which carries no gradient" if not run.info.differentiable(x)
                  else f"not something y '{y.name}' depends on through differentiable ops")
        report.warnings.append(f"x '{x.name}' is {reason}: its gradient '{name}' is zeros")
        with run.grad_scope(x.node):
            total = b.op("ZerosLike", [x])
    with b.name_scope(None), b.device(None), b.device(x.node.device):
        node = b.op("Identity", [total], name=name).node
    _claim_name(run.info.graph, node, name)
    return GradientEntry(x.name, name, zero)


def _claim_name(graph: Graph, node, name: str) -> None:
    """Give `node` exactly `name`, moving a backward node that took it first out of the way."""
    if node.name == name:
        return
    other = graph.get(name)
    if other is not None:
        graph.rename(other, graph.unique_name(name))
    graph.rename(node, name)
