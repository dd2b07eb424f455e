"""`dftool inspect GRAPH`: what a graph contains, as tables (stdout; stderr with --json) and/or a
JSON report."""
from __future__ import annotations

import shlex

import click
from rich.table import Table

from graphtool import graph_io
from graphtool.errors import InvalidGraphError, UsageError
from graphtool.inspect import inspect_graph, problem_summary

from .common import common_options, emit_report, settings, signature_option
from .output import result_console, results_shown, show, stage, take_stdout


@click.command("inspect")
@click.argument("graph", metavar="GRAPH")
@click.option("--json", "as_json", is_flag=True, help="Write the JSON report to stdout.")
@click.option("--report", "report_path", metavar="FILE", help="Write the JSON report to FILE.")
@click.option("--nodes", "list_nodes", is_flag=True,
              help="List the nodes instead: name, op, device, outputs (dtype, shape), inputs.")
@click.option("--op", "ops", multiple=True, metavar="OP[,OP...]", help="With --nodes (implied): only nodes of these ops.")
@click.option("--match", "pattern", metavar="REGEX", help="With --nodes (implied): only nodes whose name REGEX matches.")
@click.option("--costs", "with_costs", is_flag=True,
              help="Add cost figures: parameters, model size, FLOPs, MACs and memory access per op type "
                   "(with --nodes: per node).")
@click.option("--tensorboard", "logdir", metavar="LOGDIR",
              help="Also write the graph as a TensorBoard event file in LOGDIR (the Graphs dashboard).")
@signature_option
@common_options
def command(graph: str, as_json: bool, report_path: str | None, list_nodes: bool, ops: tuple[str, ...],
            pattern: str | None, with_costs: bool, logdir: str | None, signature: str | None) -> None:
    """Summarize GRAPH ('-': stdin): ops, inputs, outputs, devices, loops, parameters.

    Also shape-inference coverage, warnings about suspicious but legal structure, and a
    ready-to-paste `dftool run` line. A graph with problems (invalid nodes, ops dftool does not
    know) is still summarised; every problem is listed (-v: every node of each unknown op, -vv:
    their inputs and outputs), and the command then exits 3. A SavedModel's signatures are listed.

    A TensorFlow checkpoint (its prefix, .index file or a data shard) is listed instead: each
    tensor's name, dtype, shape and bytes.

    --nodes (or --op/--match) lists the nodes instead of the summary; --costs adds FLOPs, MACs,
    memory access, parameters and model size; --tensorboard LOGDIR writes the graph for
    TensorBoard's Graphs dashboard."""
    from graphtool.checkpoint.inspect import checkpoint_prefix
    from graphtool.loader import load_graph_and_origin

    if as_json:
        take_stdout()
    if report_path:
        graph_io.check_writable(report_path)
    op_names = [name.strip() for value in ops for name in value.split(",") if name.strip()]
    list_nodes = list_nodes or bool(op_names) or pattern is not None
    prefix = checkpoint_prefix(graph)
    if prefix is not None:
        if signature is not None:
            raise UsageError(f"{graph}: --signature selects a SavedModel signature; a checkpoint has none")
        for flag, given in (("--nodes/--op/--match", list_nodes), ("--costs", with_costs), ("--tensorboard", logdir)):
            if given:
                raise UsageError(f"{graph}: {flag} describes a graph; a checkpoint has none")
        inspect_checkpoint_prefix(prefix, as_json=as_json, report_path=report_path)
        return
    build_problems: list[str] = []
    source = "<stdin>" if graph == "-" else graph
    with stage(f"loading {source}"):
        loaded, saved_model = load_graph_and_origin(graph, signature=signature, verify=False, problems=build_problems)
    if logdir is not None:
        write_tensorboard_graph(loaded, logdir)
    if list_nodes:
        inspect_nodes(loaded, source, op_names, pattern, with_costs, as_json=as_json, report_path=report_path)
        problems = list(build_problems) + loaded.problems()
        if problems:   # listed all the same; the exit status says the graph is invalid, as without --nodes
            more = f" (and {len(problems) - 1} more problem(s); `dftool inspect` lists them)" if len(problems) > 1 else ""
            raise InvalidGraphError(f"{source}: {problems[0]}{more}")
        return
    with stage(f"inspecting {source}"):
        report = inspect_graph(loaded, graph, build_problems)
    if saved_model is not None:
        add_saved_model(report, saved_model)
    if with_costs:
        from graphtool.costs import graph_costs

        with stage(f"counting costs of {source}"):
            report["costs"] = graph_costs(loaded).to_json()
    # The report first: if --report cannot be written, the error is all that is printed.
    emit_report(report, as_json=as_json, report_path=report_path)
    if results_shown():
        render(report, loaded if settings.verbose >= 2 else None)
    summary = problem_summary(report)
    if summary:
        raise InvalidGraphError(f"{'<stdin>' if graph == '-' else graph}: {summary}")


# --- tables -----------------------------------------------------------------------------------

def _shape_text(dims) -> str:
    if dims is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def _table(title: str, columns: list[str], rows: list[list], right: tuple[str, ...] = ()) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for column in columns:
        table.add_column(column, justify="right" if column in right else "left", overflow="fold")
    for row in rows:
        table.add_row(*(str(cell) for cell in row))
    return table


def _signature_text(args: list[dict]) -> str:
    return ", ".join(f"{a['name']}: {a['dtype']}" for a in args)


def _summary_lines(report: dict) -> list[str]:
    params, shapes = report["parameters"], report["shapes"]
    return [
        f"graph {report['graph']}: {report['node_count']} nodes, {len(report['op_counts'])} op types, "
        f"{report['edges']['data']} data + {report['edges']['control']} control edges",
        f"parameters: {params['elements']:,} elements in {params['tensors']} tensors, "
        f"{params['bytes']:,} bytes",
        f"shapes: {shapes['fully_known']} fully known, {shapes['partial']} partial, "
        f"{shapes['unknown']} unknown of {shapes['tensors']} tensors ({shapes['errors']} errors)",
    ]


def _tables(report: dict) -> list[Table]:
    tables = [
        _table("ops", ["op", "count"], [[op, n] for op, n in report["op_counts"].items()], ("count",)),
        _table("inputs", ["name", "op", "dtype", "shape"],
               [[i["name"], i["op"], i["dtype"], _shape_text(i["shape"])] for i in report["inputs"]]),
        _table("outputs", ["name", "op", "dtype", "shape"],
               [[o["name"], o["op"], o["dtype"], _shape_text(o["shape"])] for o in report["outputs"]]),
        _table("outputs left out (unused, not fetched)", ["name", "op", "why"],
               [[o["name"], o["op"], o["reason"]] for o in report.get("left_out_outputs", [])]),
        _table("sinks", ["name", "op"], [[s["name"], s["op"]] for s in report["sinks"]]),
        _table("devices", ["device", "nodes"], [[d["device"], d["nodes"]] for d in report["devices"]],
               ("nodes",)),
        _table("loop frames", ["frame", "parent", "depth", "nodes", "enters", "exits", "parallel"],
               [[f["name"], f["parent"] or "(root)", f["depth"], f["nodes"], f["enters"], f["exits"],
                 f["parallel_iterations"]] for f in report["frames"]],
               ("depth", "nodes", "enters", "exits", "parallel")),
        _table("functions", ["function", "inputs", "outputs", "nodes", "callers"],
               [[f["name"] + (" (stateful)" if f["stateful"] else ""), _signature_text(f["inputs"]),
                 _signature_text(f["outputs"]), f["nodes"], ", ".join(f["callers"]) or "(none)"]
                for f in report.get("functions", [])], ("nodes",)),
        _table("findings", ["kind", "node", "message"],
               [[f["kind"], f["node"] or "", f["message"]] for f in report["findings"]
                if f["kind"] != "unknown_op"]),   # the unknown-ops table has them
    ]
    return [t for t in tables if t.row_count]


# --- checkpoints ------------------------------------------------------------------------------

def inspect_checkpoint_prefix(prefix: str, *, as_json: bool, report_path: str | None) -> None:
    """`dftool inspect CKPT`: the tensors of a checkpoint (name, dtype, shape), as a table and/or
    the inspect_checkpoint JSON report."""
    from graphtool.checkpoint.inspect import inspect_checkpoint

    with stage(f"reading checkpoint {prefix}"):
        body = inspect_checkpoint(prefix)
    emit_report({"command": "inspect", **body}, as_json=as_json, report_path=report_path,
                kind="inspect_checkpoint")
    if not results_shown():
        return
    console = result_console()
    shards = len(body["data_files"])
    where = f"in {shards} data shard{'s' if shards != 1 else ''}" if body["format"] == "V2" else "(V1 format, one file)"
    show(console, f"checkpoint {body['checkpoint']}: {body['tensor_count']} tensors, {body['total_bytes']:,} bytes "
                  f"{where}", "")
    partitioned = any(t["parts"] for t in body["tensors"])
    columns = ["name", "dtype", "shape", "bytes"] + (["parts"] if partitioned else [])
    rows = [[t["name"], t["dtype"], _shape_text(t["shape"]), f"{t['bytes']:,}"]
            + ([t["parts"] or ""] if partitioned else []) for t in body["tensors"]]
    show(console, _table("tensors", columns, rows, ("bytes", "parts")))


# --- SavedModels ------------------------------------------------------------------------------

def add_saved_model(report: dict, info) -> None:
    """Every signature of the SavedModel in the report; the run line feeds signature keys."""
    report["saved_model"] = info.to_json()
    words = ["dftool", "run", info.path]
    if info.signature.key != "serving_default":
        words += ["--signature", info.signature.key]
    for tensor in info.signature.inputs:
        words += ["--feed", f"{tensor.key}={tensor.key.replace('/', '_')}.npy"]
    report["run_command"] = " ".join(shlex.quote(word) for word in words)


def _saved_model_lines(report: dict) -> list[str]:
    saved = report.get("saved_model")
    if not saved:
        return []
    return [f"SavedModel {saved['path']} (tags {','.join(saved['tags'])}): signature '{saved['signature']}' "
            f"loaded, {saved['variables_frozen']} variable(s) frozen"
            + (", functions lowered" if saved["lowered_functions"] else "")]


def _signature_table(report: dict) -> list[Table]:
    saved = report.get("saved_model")
    if not saved:
        return []

    def tensors(entries):
        return ", ".join(f"{t['key']}: {t['dtype']}{_shape_text(t['shape'])}" for t in entries)

    rows = [[("* " if s["name"] == saved["signature"] else "  ") + s["name"], tensors(s["inputs"]),
             tensors(s["outputs"]), s["method"]] for s in saved["signatures"]]
    return [_table("signatures (* loaded)", ["signature", "inputs", "outputs", "method"], rows)]


def _problem_tables(report: dict, graph) -> list[Table]:
    """Every problem, and the unknown ops (first nodes; -v every node; -vv each node's edges)."""
    tables = [_table("problems (the graph is invalid)", ["#", "problem"],
                     [[i + 1, p] for i, p in enumerate(report["problems"])], ("#",))]
    shown = None if settings.verbose else 3
    rows = []
    for entry in report["unknown_ops"]:
        names = entry["nodes"] if shown is None else entry["nodes"][:shown]
        more = f", ... ({len(entry['nodes']) - shown} more; -v lists all)" \
            if shown is not None and len(entry["nodes"]) > shown else ""
        rows.append([entry["op"], entry["count"], ", ".join(names) + more])
    tables.append(_table("unknown ops (opaque: kept as they are; fetches that need them cannot run)",
                         ["op", "count", "nodes"], rows, ("count",)))
    if graph is not None:
        tables.append(_table("unknown-op nodes", ["node", "op", "inputs", "outputs (dtype shape)"],
                             _opaque_node_rows(report, graph)))
    return [t for t in tables if t.row_count]


def _opaque_node_rows(report: dict, graph) -> list[list]:
    from graphtool.ops import opaque

    rows = []
    for entry in report["unknown_ops"]:
        for name in entry["nodes"]:
            node = graph.node(name)
            shapes = opaque.declared_shapes(node) or []
            outputs = [f"{dtype} {shapes[i] if i < len(shapes) else '<unknown>'}"
                       for i, dtype in enumerate(opaque.output_dtypes(node))]
            inputs = [ref.name for ref in node.inputs] + ["^" + c.name for c in node.control_inputs]
            rows.append([name, node.op, ", ".join(inputs), "; ".join(outputs)])
    return rows


def render(report: dict, graph=None) -> None:
    """The human-readable report (stdout, or stderr when --json has stdout); empty sections are
    left out. With `graph` (-vv), unknown-op nodes are shown one by one."""
    console = result_console()
    show(console, *_saved_model_lines(report), *_summary_lines(report))
    for table in _signature_table(report) + _problem_tables(report, graph) + _tables(report) + _cost_tables(report):
        show(console, "", table)
    if "costs" in report:
        show(console, "", *_cost_lines(report["costs"]))
    show(console, "")
    if report["run_command"] is None:
        show(console, "nothing runs: every output needs an op dftool does not know")
        return
    blocked = sum(1 for o in report["outputs"] if o.get("needs_unknown_ops"))
    show(console, "run it with:" if not blocked else f"run it with ({blocked} output(s) needing unknown ops left out):",
         f"  {report['run_command']}")


# --- cost figures (--costs) -------------------------------------------------------------------

def _count_text(value: int | None) -> str:
    return "unknown" if value is None else f"{value:,}"


def _cost_tables(report: dict) -> list[Table]:
    costs = report.get("costs")
    if not costs:
        return []
    rows = [[op, t["nodes"], f"{t['flops']:,}", f"{t['macs']:,}", f"{t['bytes_accessed']:,}"]
            for op, t in costs["by_op"].items() if t["flops"] or t["bytes_accessed"] or t["unknown_nodes"]]
    return [_table("costs by op (one run)", ["op", "nodes", "FLOPs", "MACs", "memory bytes"], rows,
                   ("nodes", "FLOPs", "MACs", "memory bytes"))]


def _cost_lines(costs: dict) -> list[str]:
    total = costs["total"]
    return [f"costs: {total['flops']:,} FLOPs, {total['macs']:,} MACs, {total['bytes_accessed']:,} bytes of "
            f"memory access; {costs['parameters']:,} parameters ({costs['parameter_bytes']:,} bytes), "
            f"model size {costs['model_bytes']:,} bytes"] + [f"  note: {note}" for note in costs["notes"]]


# --- nodes (--nodes, --op, --match) -----------------------------------------------------------

def inspect_nodes(graph, source: str, ops: list[str], pattern: str | None, with_costs: bool, *,
                  as_json: bool, report_path: str | None) -> None:
    """`inspect --nodes`: the (filtered) nodes as a table and/or the inspect_nodes report."""
    from graphtool.inspect import node_entries

    with stage(f"listing nodes of {source}"):
        entries = node_entries(graph, ops, pattern)
        report: dict = {"command": "inspect", "graph": source, "ops": ops, "match": pattern,
                        "node_count": len(graph), "count": len(entries), "nodes": entries}
        if with_costs:
            from graphtool.costs import graph_costs

            costs = graph_costs(graph)
            for entry in entries:
                cost = costs.nodes[entry["name"]]
                entry.update(flops=cost.flops, macs=cost.macs, bytes_accessed=cost.bytes_accessed,
                             assumed_dims=cost.assumed)
            report["cost_notes"] = costs.notes
    emit_report(report, as_json=as_json, report_path=report_path, kind="inspect_nodes")
    if not results_shown():
        return
    columns = ["name", "op", "device", "outputs", "inputs"]
    if with_costs:
        columns += ["FLOPs", "MACs", "memory bytes"]
    rows = []
    for entry in entries:
        outputs = "; ".join(f"{o['dtype']} {_shape_text(o['shape'])}" for o in entry["outputs"])
        row = [entry["name"], entry["op"], entry["device"] or "", outputs, ", ".join(entry["inputs"])]
        if with_costs:
            row += [_count_text(entry["flops"]), _count_text(entry["macs"]), _count_text(entry["bytes_accessed"])]
        rows.append(row)
    console = result_console()
    what = f"{len(entries)} of {len(graph)} nodes" if len(entries) != len(graph) else f"{len(graph)} nodes"
    show(console, f"graph {source}: {what}", "",
         _table("nodes", columns, rows, ("FLOPs", "MACs", "memory bytes")))
    for note in report.get("cost_notes", []):
        show(console, f"note: {note}")


# --- TensorBoard (--tensorboard) --------------------------------------------------------------

def write_tensorboard_graph(graph, logdir: str) -> None:
    """The graph's GraphDef as an event file in `logdir` (TensorBoard's Graphs dashboard)."""
    from graphtool.ir import to_graphdef
    from graphtool.summary import EventLog

    from .common import info

    with EventLog(logdir) as log:
        log.add_graph(to_graphdef(graph).SerializeToString())
    info(f"wrote the graph for TensorBoard to {logdir} (tensorboard --logdir {shlex.quote(logdir)})")
