"""`dftool replicate IN OUT --replicas N --split NAME[,NAME...]`: a synchronous data-parallel
training graph (see docs/commands.md)."""
from __future__ import annotations

import click
from rich.table import Table

from graphtool import graph_io
from graphtool.errors import InvalidGraphError, UsageError

from . import output
from .common import (common_options, console, emit_report, graph_output_options, info, load_graph, lower_if_needed,
                     prepare_graph_output, save_graph, settings, signature_option)
from .output import show, stage


def _names(values: tuple[str, ...]) -> list[str]:
    """Repeatable, comma-separated names: ('x,labels', 'w') -> ['x', 'labels', 'w']."""
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def _update_table(report) -> Table:
    table = output.table("averaged update inputs", ["update", "op", "averaged"])
    for update in report.updates:
        table.add_row(update["node"], update["op"], ", ".join(update["averaged"]))
    return table


@click.command("replicate")
@click.argument("input_path", metavar="IN")
@click.argument("output_path", metavar="OUT")
@click.option("--replicas", type=click.IntRange(min=1), required=True, metavar="N", help="How many replicas.")
@click.option("--split", "split", multiple=True, required=True, metavar="NAME[,NAME...]",
              help="Batch inputs (placeholders) whose dim 0 is divided among the replicas; they keep their names "
                   "and full-batch shapes (repeatable).")
@click.option("--devices", metavar="LIST",
              help="Comma-separated devices, short forms allowed (cpu:0,cpu:1 or worker:0/cpu:0,...): one per "
                   "replica; in ps mode optionally the parameter server first. Default: cpu:0..cpu:N-1.")
@click.option("--mode", type=click.Choice(["allreduce", "ps"]), default="allreduce", show_default=True,
              help="allreduce: variables on every replica, gradients averaged by CollectiveReduceV2; ps: "
                   "variables once on the parameter server, gradients averaged there.")
@click.option("--fuse-bytes", type=click.IntRange(min=0), default=64 * 1024 * 1024, show_default=True, metavar="B",
              help="Gradients of one dtype are fused into all-reduce buckets of up to B bytes (0: one all-reduce "
                   "per gradient).")
@click.option("--loss", "losses", multiple=True, metavar="T[,T...]",
              help="Tensors whose names become the replicas' mean (repeatable). Default: every per-batch floating "
                   "scalar nothing but summaries read (the loss).")
@graph_output_options
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report on stdout (needs OUT other than '-').")
@click.option("--report", metavar="FILE.json", help="Write the JSON report to a file.")
@signature_option
@common_options
def command(input_path, output_path, replicas, split, devices, mode, fuse_bytes, losses, text, binary, as_json,
            report, signature):
    """Make the single-device training graph IN synchronous data-parallel over N replicas and write OUT."""
    from graphtool.replicate import ReplicateOptions, replicate

    text = prepare_graph_output(output_path, text=text, binary=binary, as_json=as_json)
    if report:
        graph_io.check_writable(report)
    options = ReplicateOptions(replicas=replicas, split=_names(split), devices=devices, mode=mode,
                               fuse_bytes=fuse_bytes, losses=_names(losses))
    graph = load_graph(input_path, signature=signature)
    lower_if_needed(graph)
    try:
        with stage("replicating"):
            graph, result = replicate(graph, options)
    except InvalidGraphError as exc:   # the graph's fault: say which file
        raise InvalidGraphError(f"{'<stdin>' if input_path == '-' else input_path}: {exc}", hint=exc.hint) from None
    except UsageError:
        raise
    save_graph(graph, output_path, text=text)

    if not settings.quiet:
        if settings.verbose:
            show(console, _update_table(result))
        info(result.summary())
        if result.losses:
            info(f"mean over the replicas: {', '.join(result.losses)}; targets running every replica: "
                 f"{len(result.targets)}")
    if as_json or report:
        emit_report({"command": "replicate", "graph": input_path, "output": output_path, **result.to_dict()},
                    as_json=as_json, report_path=report)
