"""`dftool prune IN OUT --fetch T ... [--feed T ...] [--call-frame]` (see docs/commands.md).

A fed tensor `node:k` becomes a Placeholder named `node` (k = 0) or `node_k`; `dftool run` on the
pruned graph accepts either that name or the original `node:k` as the feed key. With --call-frame
feeds become `_Arg` nodes (same names) and fetches `_Retval` nodes, which `dftool run` fetches by
default. Unknown --fetch/--feed names are usage errors (exit 2).
"""
from __future__ import annotations

import click
from rich.table import Table

from graphtool import graph_io

from . import output
from .common import (common_options, console, emit_report, graph_output_options, info, load_graph, prepare_graph_output,
                     save_graph, settings, signature_option)
from .output import show, stage


def _feeds_table(report) -> Table:
    table = output.table("inputs of the pruned graph", ["fed tensor", "node", "op", "dtype", "shape", "used"])
    for feed in report.feeds:
        table.add_row(feed.tensor, feed.node, feed.op, feed.dtype, feed.shape, "yes" if feed.used else "no")
    return table


@click.command("prune")
@click.argument("input_path", metavar="IN")
@click.argument("output_path", metavar="OUT")
@click.option("--fetch", "fetches", multiple=True, required=True, metavar="T",
              help="Tensor to compute (repeatable); '^node' or an output-less node: a node that must run.")
@click.option("--feed", "feeds", multiple=True, metavar="T",
              help="Tensor supplied from outside (repeatable); becomes a Placeholder named "
                   "'node' (output 0) or 'node_k' (output k).")
@click.option("--call-frame", is_flag=True, help="Make feeds _Arg and fetches _Retval nodes instead.")
@graph_output_options
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report on stdout (needs OUT other than '-').")
@click.option("--report", metavar="FILE.json", help="Write the JSON report to a file.")
@signature_option
@common_options
def command(input_path, output_path, fetches, feeds, call_frame, text, binary, as_json, report, signature):
    """Keep only what computing the fetches needs, given the feeds; write OUT.

    A fed tensor node:k becomes a Placeholder named node (k = 0) or node_k (that name + "/fed"
    if it is taken); `dftool run` on OUT accepts that name or the original node:k as the feed key.
    While loops are kept whole or not at all; a tensor inside a loop cannot be fed."""
    from graphtool.prune import prune

    text = prepare_graph_output(output_path, text=text, binary=binary, as_json=as_json)
    if report:
        graph_io.check_writable(report)
    graph = load_graph(input_path, signature=signature)
    with stage("pruning"):
        pruned, result = prune(graph, list(fetches), list(feeds), call_frame=call_frame)
    save_graph(pruned, output_path, text=text)

    if not settings.quiet:
        if result.feeds:
            show(console, _feeds_table(result))
        for feed in result.feeds:
            if not feed.used:
                info(f"note: --feed {feed.tensor} is not needed by the fetches (kept as input '{feed.node}')")
        if settings.verbose:
            info("removed: " + (", ".join(result.removed) or "nothing"))
        renamed = {given: name for given, name in result.fetches.items() if given != name}
        for given, name in renamed.items():
            info(f"fetch {given} is '{name}' in the pruned graph")
        loops = f", {len(result.loops_kept)} while loop(s) kept whole" if result.loops_kept else ""
        made = f", added {len(result.added)} (feeds, _Retvals)" if result.added else ""
        info(f"kept {len(result.kept)} of {result.nodes_before} node(s), removed {len(result.removed)}{made}{loops}")
    if as_json or report:
        emit_report({"command": "prune", "graph": input_path, "output": output_path,
                     **result.to_json()}, as_json=as_json, report_path=report)
