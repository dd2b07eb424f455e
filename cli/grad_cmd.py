"""`dftool grad IN OUT --y T [--x T ...] [--prefix grad]`: add a gradient subgraph (see docs/commands.md)."""
from __future__ import annotations

import click
from rich.table import Table

from graphtool import graph_io
from graphtool.errors import InvalidGraphError, UsageError

from . import output
from .common import (common_options, console, emit_report, graph_output_options, info, load_graph, lower_if_needed,
                     prepare_graph_output, save_graph, settings, signature_option)
from .output import show, stage


def _gradient_table(report) -> Table:
    table = output.table(f"gradients of {report.y}", ["x", "gradient", ""])
    for entry in report.gradients:
        table.add_row(entry.x, entry.name, "zeros" if entry.zero else "")
    return table


@click.command("grad")
@click.argument("input_path", metavar="IN")
@click.argument("output_path", metavar="OUT")
@click.option("--y", "y", required=True, metavar="T", help="The tensor to differentiate (summed if not scalar).")
@click.option("--x", "xs", multiple=True, metavar="T",
              help="A tensor to differentiate with respect to (repeatable). Default: the parameters "
                   "y depends on: every floating Variable/VariableV2 and every floating Const of "
                   "rank >= 1 (frozen weights).")
@click.option("--prefix", default="grad", show_default=True,
              help="Name prefix of the new nodes: the gradient of x = node:k is PREFIX/node (k = 0) "
                   "or PREFIX/node_k.")
@graph_output_options
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report on stdout (needs OUT other than '-').")
@click.option("--report", metavar="FILE.json", help="Write the JSON report to a file.")
@signature_option
@common_options
def command(input_path, output_path, y, xs, prefix, text, binary, as_json, report, signature):
    """Add the gradient of --y with respect to each --x to IN and write OUT."""
    from graphtool import api
    from graphtool.grad.driver import default_xs

    text = prepare_graph_output(output_path, text=text, binary=binary, as_json=as_json)
    if report:
        graph_io.check_writable(report)
    graph = load_graph(input_path, signature=signature)
    lower_if_needed(graph)
    chosen = list(xs) or default_xs(graph, y)
    if not chosen:
        raise UsageError(f"no --x given, and y '{y}' depends on no floating Variable or Const of rank >= 1",
                         hint="name the tensors to differentiate with respect to with --x")
    try:
        with stage("differentiating"):
            graph, result = api.grad(graph, y, chosen, prefix=prefix, inplace=True, report=True)
    except InvalidGraphError as exc:   # e.g. unknown ops on the path: say which file
        raise InvalidGraphError(f"{'<stdin>' if input_path == '-' else input_path}: {exc}", hint=exc.hint) from None
    save_graph(graph, output_path, text=text)

    if not settings.quiet:
        for warning in result.warnings:
            output.warning(warning)
        if settings.verbose or len(result.gradients) <= 20:
            show(console, _gradient_table(result))
        zeros = sum(entry.zero for entry in result.gradients)
        info(f"{len(result.gradients)} gradient(s) of {result.y}"
             + (" (--x not given: the parameters y depends on)" if not xs else "")
             + f", {result.nodes_added} nodes added, {result.loops} backward loop(s), "
             f"{result.stacks} value(s) saved on stacks, {zeros} zero gradient(s)")
    if as_json or report:
        emit_report({"command": "grad", "graph": input_path, "output": output_path, **result.to_dict()},
                    as_json=as_json, report_path=report)
