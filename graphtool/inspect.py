"""`dftool inspect`: a structural report on a graph, also one that cannot run.

inspect_graph(graph, source) returns a plain dict, ready to be dumped as the JSON report and
rendered as tables by the CLI. It never changes the graph. What makes a graph unusable is listed
in full, not just the first of it: `problems` (what Graph.verify() rejects, plus what kept nodes
or edges from being built) and `unknown_ops` (nodes whose op dftool does not know: they are
opaque, so the graph loads, but fetches that need them cannot run); everything else is still
summarised around them. `findings` are warnings: something legal that is probably not what the
author meant.
"""
from __future__ import annotations

import re
import shlex
from collections import Counter, deque
from collections.abc import Sequence

from . import dtypes
from .costs import parameter_stats
from .errors import DftoolError
from .functions.library import summarize_functions
from .ir import Graph, Node, TensorRef
from .ir.queries import PLACEHOLDER_OPS, graph_sinks, picked_outputs
from .ops import opaque
from .prune import needed_nodes
from .shape_inference import ShapeResult, infer_shapes
from .shapes import Shape

UNPLACED = "(unplaced)"

# One component of a TensorFlow device name (DeviceNameUtils::ParseFullName): a device is written
# as any sequence of these, e.g. /job:worker/replica:0/task:1/device:GPU:0, /cpu:0, /device:GPU:*.
_ID = r"(?:\d+|\*)"
_DEVICE_COMPONENT = re.compile(
    rf"/(?:job:(?:[A-Za-z][\w.\-]*|\*)|replica:{_ID}|task:{_ID}"
    rf"|device:(?:[A-Za-z]\w*|\*)(?::{_ID})?|(?:cpu|CPU|gpu|GPU):{_ID})")


def inspect_graph(graph: Graph, source: str = "graph", build_problems: Sequence[str] = ()) -> dict:
    """The body of the `dftool.inspect/2` report on `graph` (loaded from `source`;
    docs/schemas/inspect.schema.json); the command adds `schema`. Its keys:

    command "inspect"; graph (the source); producer (GraphDef version); node_count;
    edges {data, control}; op_counts {op: n} (most frequent first);
    inputs [{name, op, dtype, shape, optional, used}] (placeholders; shape is a list with null
    for unknown dims, or null for unknown rank); outputs [{name, op, dtype, shape}] (every output
    tensor of nodes nobody uses that is a real output: ir.queries.picked_outputs, what a run
    fetches by default); left_out_outputs [{name, op, reason}] (the unused tensors it left out,
    and why); sinks [{name, op}] (unused nodes without outputs);
    devices [{device, nodes}]; frames [{name, parent, depth, nodes, enters, exits,
    parallel_iterations}]; functions [{name, inputs [{name, dtype}], outputs, nodes, stateful,
    callers}] (the function library; callers are node names, 'function/node' inside bodies); parameters (see parameter_stats); shapes {tensors, fully_known,
    partial, unknown, errors}; findings [{kind, node, message}] with kind one of shape_error,
    shape_inference, undeclared_attr, unused_input, unreachable, bad_device, unknown_op, summary;
    problems [messages] (the graph is invalid: `build_problems`, then Graph.problems());
    unknown_ops [{op, count, nodes}] (most frequent first); run_command (fetching only the outputs
    that need no unknown op; null when none does)."""
    problems = _problems(graph, build_problems)
    unknown_by_op = opaque.merge(opaque.unknown_ops(graph.nodes), opaque.unknown_ops_in_functions(graph.library))
    unknown = [{"op": op, "count": len(names), "nodes": names} for op, names in unknown_by_op.items()]
    findings: list[dict] = []
    shapes, shape_failure = _infer(graph)
    inputs = [_input_entry(node) for node in graph.nodes if node.op in PLACEHOLDER_OPS]
    # A broken graph may defeat a section (a cycle has no frames): report that, keep the rest.
    broken = bool(problems)
    outputs = _section("outputs", findings, broken, lambda: _output_entries(graph, shapes, bool(unknown)))
    left_out = _section("left-out outputs", findings, broken, lambda: left_out_outputs(graph))
    sinks = _section("sinks", findings, broken, lambda: [{"name": n.name, "op": n.op} for n in graph_sinks(graph)])
    frames = _section("frames", findings, broken, lambda: _frames(graph))
    for op, names in unknown_by_op.items():
        found = opaque.describe({op: names})
        findings.append(_finding("unknown_op", graph.get(names[0]),
                                 f"op '{op}' is not known to dftool ({found}): opaque, fetches "
                                 f"that need it cannot run"))
    findings += _section("findings", findings, broken, lambda: _findings(graph, shapes, shape_failure))
    return {
        "command": "inspect",
        "graph": source,
        "producer": graph.versions.producer,
        "node_count": len(graph),
        "edges": _edge_counts(graph),
        "op_counts": _op_counts(graph),
        "inputs": inputs,
        "outputs": outputs,
        "left_out_outputs": left_out,
        "sinks": sinks,
        "devices": _devices(graph),
        "frames": frames,
        "functions": [f.to_json() for f in summarize_functions(graph)],
        "parameters": parameter_stats(graph),
        "shapes": _shape_summary(graph, shapes),
        "findings": findings,
        "problems": problems,
        "unknown_ops": unknown,
        "run_command": run_command(source, inputs, outputs),
    }


def _problems(graph: Graph, build_problems: Sequence[str]) -> list[str]:
    """Build problems, then what verify() finds, leaving out what only restates a build problem
    (a node that lost an input to a missing producer now has too few)."""
    broken = set(re.findall(r"^node '([^']*)'", "\n".join(build_problems), re.M))
    found = [p for p in graph.problems() if not any(p.startswith(f"node '{n}'") for n in broken)]
    return list(build_problems) + found


def _section(name: str, findings: list[dict], broken: bool, compute):
    """compute(), or [] plus a finding when the graph is `broken` and defeats it (on a valid
    graph an exception here is a bug and propagates)."""
    try:
        return compute()
    except (DftoolError, KeyError, ValueError, TypeError, IndexError) as exc:
        if not broken:
            raise
        message = exc.one_line() if isinstance(exc, DftoolError) else f"{type(exc).__name__}: {exc}"
        findings.append(_finding("summary", None, f"cannot summarise {name}: {message}"))
        return []


def problem_summary(report: dict) -> str | None:
    """One line for the error `inspect` exits with when the graph is unusable, else None."""
    parts = []
    problems = report["problems"]
    if problems:
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        parts.append(problems[0] + more)
    if report["unknown_ops"]:
        found = {entry["op"]: entry["nodes"] for entry in report["unknown_ops"]}
        total = sum(entry["count"] for entry in report["unknown_ops"])
        parts.append(f"{total} node(s) of {len(found)} op type(s) dftool does not know: {opaque.describe(found)}")
    return "; ".join(parts) or None


# --- structure --------------------------------------------------------------------------------

def _edge_counts(graph: Graph) -> dict:
    return {"data": sum(len(n.inputs) for n in graph.nodes),
            "control": sum(len(n.control_inputs) for n in graph.nodes)}


def _op_counts(graph: Graph) -> dict[str, int]:
    """Op type -> node count, most frequent first (ties by name)."""
    counts = Counter(n.op for n in graph.nodes)
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _devices(graph: Graph) -> list[dict]:
    counts = Counter(n.device or UNPLACED for n in graph.nodes)
    return [{"device": device, "nodes": count} for device, count in sorted(counts.items())]


def _frames(graph: Graph) -> list[dict]:
    """One entry per while-loop frame, outer frames first. Enter nodes run in the parent frame
    and Exit nodes in the loop's frame (as in TensorFlow's executor); `nodes` counts the latter."""
    loops = sorted(graph.frames().loops, key=lambda f: (f.depth, f.name))
    return [{"name": f.name, "parent": f.parent.name or None, "depth": f.depth,
             "nodes": len(f.nodes), "enters": len(f.enters), "exits": len(f.exits),
             "parallel_iterations": f.parallel_iterations} for f in loops]


# --- tensors ----------------------------------------------------------------------------------

def shape_to_json(shape: Shape) -> list[int | None] | None:
    """[2, None] for a partly known shape, None for an unknown rank."""
    return None if shape.dims is None else list(shape.dims)


def _attr_or(node: Node, name: str, fallback):
    """A decoded attr, or `fallback` when it is absent or undecodable (a report must not fail)."""
    try:
        return node.attr(name)
    except (KeyError, DftoolError):
        return fallback


def _input_entry(node: Node) -> dict:
    if node.op == "_Arg":   # _Arg keeps its dtype in T and its shape in _output_shapes
        dtype = _attr_or(node, "T", dtypes.INVALID)
        shape = Shape.of((_attr_or(node, "_output_shapes", None) or [Shape.unknown()])[0])
    else:
        dtype = _attr_or(node, "dtype", dtypes.INVALID)
        shape = Shape.of(_attr_or(node, "shape", Shape.unknown()))
    return {"name": node.name, "op": node.op, "dtype": str(dtype), "shape": shape_to_json(shape),
            "optional": node.op == "PlaceholderWithDefault", "used": node.has_users}


def left_out_outputs(graph: Graph) -> list[dict]:
    """The unused output tensors the default fetches leave out: name, op and why."""
    _, left_out = picked_outputs(graph)
    return [{"name": left.tensor.name, "op": left.tensor.node.op, "reason": left.reason} for left in left_out]


def _output_entries(graph: Graph, shapes: ShapeResult, has_unknown: bool) -> list[dict]:
    entries = []
    in_functions = opaque.unknown_ops_by_function(graph.library) if has_unknown else {}
    picked, _ = picked_outputs(graph)
    for node in dict.fromkeys(ref.node for ref in picked):
        extra = {}
        if has_unknown:   # the key appears only in reports on graphs with unknown ops
            needs = set()
            for needed in needed_nodes(graph, [node]):
                if needed.spec is None and needed.op not in in_functions:
                    needs.add(needed.op)
                for function in opaque.called_functions(needed, graph.library):
                    needs |= in_functions[function]
            extra["needs_unknown_ops"] = sorted(needs)
        for ref in node.outputs:
            if ref in picked:
                entries.append({**_tensor_entry(ref, shapes), **extra})
    return entries


def _tensor_entry(ref: TensorRef, shapes: ShapeResult) -> dict:
    return {"name": ref.name, "op": ref.node.op, "dtype": str(shapes.dtype(ref)),
            "shape": shape_to_json(shapes.shape(ref))}


# --- parameters: graphtool/costs.py (parameter_stats, constant_bytes) ---------------------------

# --- shapes -----------------------------------------------------------------------------------

def _infer(graph: Graph) -> tuple[ShapeResult, str | None]:
    """Shape inference, degrading to "everything unknown" (plus a finding) if it cannot run."""
    try:
        return infer_shapes(graph), None
    except DftoolError as exc:
        return ShapeResult(), exc.one_line()


def _shape_summary(graph: Graph, shapes: ShapeResult) -> dict:
    """How many output tensors have a fully known, partly known (rank only) or unknown shape."""
    kinds: Counter[str] = Counter()
    for node in graph.nodes:
        for ref in node.outputs:
            shape = shapes.shape(ref)
            kinds["fully_known" if shape.fully_defined else "partial" if shape.known_rank else "unknown"] += 1
    return {"tensors": sum(kinds.values()), "fully_known": kinds["fully_known"],
            "partial": kinds["partial"], "unknown": kinds["unknown"], "errors": len(shapes.errors)}


# --- findings ---------------------------------------------------------------------------------

def _finding(kind: str, node: Node | None, message: str) -> dict:
    return {"kind": kind, "node": node.name if node is not None else None, "message": message}


def _findings(graph: Graph, shapes: ShapeResult, shape_failure: str | None) -> list[dict]:
    found = []
    if shape_failure:
        found.append(_finding("shape_inference", None, f"shape inference failed: {shape_failure}"))
    found += [_finding("shape_error", node, message) for node, message in shapes.errors.items()]
    for node in graph.nodes:
        found += _node_findings(node)
    found += [_finding("unreachable", node, f"node '{node.name}' ({node.op}) does not lead to any "
                       f"output or sink (a loop without an Exit?)") for node in unreachable_nodes(graph)]
    return found


def _node_findings(node: Node) -> list[dict]:
    found = []
    spec = node.spec
    if spec is not None:
        for name in node.attrs:
            if not name.startswith("_") and name not in spec.attrs:
                found.append(_finding("undeclared_attr", node,
                                      f"node '{node.name}' has attr '{name}', which {node.op} does not declare"))
    if node.op in PLACEHOLDER_OPS and not node.has_users:
        found.append(_finding("unused_input", node, f"placeholder '{node.name}' is not used by any node"))
    if node.device and not is_valid_device(node.device):
        found.append(_finding("bad_device", node,
                              f"node '{node.name}' has a device string that does not parse: '{node.device}'"))
    return found


def unreachable_nodes(graph: Graph) -> list[Node]:
    """Nodes from which no output or sink can be reached. In an acyclic graph every node reaches
    one; what remains are loops whose values never leave them."""
    targets = [n for n in graph.nodes if not n.has_users]
    seen = set(targets)
    queue = deque(targets)
    while queue:
        for producer in queue.popleft().input_nodes():
            if producer not in seen:
                seen.add(producer)
                queue.append(producer)
    return [n for n in graph.nodes if n not in seen]


def is_valid_device(text: str) -> bool:
    """True when `text` is a TensorFlow device name: a sequence of /job:, /replica:, /task:,
    /device:TYPE[:ID] and legacy /cpu:N, /gpu:N components ('*' allowed for ids)."""
    position = 0
    while position < len(text):
        match = _DEVICE_COMPONENT.match(text, position)
        if match is None:
            return False
        position = match.end()
    return True


# --- run command line -------------------------------------------------------------------------

def run_command(source: str, inputs: list[dict], outputs: list[dict]) -> str | None:
    """A `dftool run` line feeding every required, used placeholder from NAME.npy and fetching
    every output that needs no unknown op (None when there are outputs but none of them can run).
    Scoped names get a flat file name ('a/b' reads a_b.npy)."""
    runnable = [entry for entry in outputs if not entry.get("needs_unknown_ops")]
    if outputs and not runnable:
        return None
    outputs = runnable
    words = ["dftool", "run", source]
    for entry in inputs:
        if entry["optional"] or not entry["used"]:
            continue
        words += ["--feed", f"{entry['name']}={entry['name'].replace('/', '_')}.npy"]
    for entry in outputs:
        words += ["--fetch", entry["name"]]
    return " ".join(shlex.quote(word) for word in words)


# --- node listing (inspect --nodes) -----------------------------------------------------------

def node_entries(graph: Graph, ops: Sequence[str] = (), pattern: str | None = None) -> list[dict]:
    """`inspect --nodes`: one entry per node in graph order, {name, op, device, outputs [{name,
    dtype, shape}], inputs [tensor names, then '^node' control inputs]}, shapes from shape
    inference. `ops` keeps nodes of those op types; `pattern` (a regular expression, re.search)
    keeps nodes whose name it matches. A bad pattern, or an op that is neither in the graph nor
    known to dftool, is a UsageError naming it."""
    from .errors import UsageError
    from .ops import registry
    from .suggest import did_you_mean

    present = {node.op for node in graph.nodes}
    for op in ops:
        if op not in present and registry.lookup(op) is None:
            raise UsageError(f"--op {op}: no op of that name in the graph or known to dftool",
                             hint=did_you_mean(op, present))
    try:
        matcher = re.compile(pattern) if pattern is not None else None
    except re.error as exc:
        raise UsageError(f"--match {pattern!r}: not a regular expression ({exc})") from None
    shapes, _ = _infer(graph)
    wanted = set(ops)
    entries = []
    for node in graph.nodes:
        if wanted and node.op not in wanted:
            continue
        if matcher is not None and not matcher.search(node.name):
            continue
        outputs = [{"name": ref.name, "dtype": str(shapes.dtype(ref)), "shape": shape_to_json(shapes.shape(ref))}
                   for ref in node.outputs]
        entries.append({"name": node.name, "op": node.op, "device": node.device or None, "outputs": outputs,
                        "inputs": [ref.name for ref in node.inputs] + ["^" + c.name for c in node.control_inputs]})
    return entries
