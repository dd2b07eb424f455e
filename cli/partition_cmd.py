"""`dftool partition IN OUT`: cut a placed graph into per-device parts (see docs/commands.md)."""
from __future__ import annotations

import os

import click
from rich.table import Table

from graphtool import graph_io

from . import output
from .common import (common_options, console, emit_report, graph_output_options, info, load_graph, lower_if_needed,
                     prepare_graph_output, save_graph, settings, signature_option)
from .output import show, stage


def _device_table(report) -> Table:
    table = output.table("partitions", ["device", "nodes", "sends", "recvs", "loop skeletons"],
                         right=("nodes", "sends", "recvs"))
    for part in report.devices:
        table.add_row(part.label, str(part.nodes), str(part.sends), str(part.recvs), str(len(part.frames)))
    return table


def _summary(report) -> str:
    moved = report.bytes()
    line = (f"{report.sends} transfer(s) ({sum(t.is_control for t in report.transfers)} for "
            f"{report.control_edges} control edge(s)), {len(report.skeletons)} loop frame(s) across devices")
    if report.compress != "none":
        line += f", {report.compress}: {moved['sent']:,} of {moved['uncompressed']:,} bytes per step " \
                f"({moved['saved']:,} saved)"
    elif moved["sent"]:
        line += f", {moved['sent']:,} bytes per step"
    if moved["transfers_of_unknown_size"]:
        line += f" (+{moved['transfers_of_unknown_size']} transfer(s) of unknown size)"
    return line


def _write_split(graph, report, split_dir: str) -> list[str]:
    """One GraphDef per device, named after the device's short label (cpu_0.pb)."""
    from graphtool.partition import split_by_device

    graph_io.ensure_directory(split_dir, "--split-dir")
    labels = {part.device: part.label for part in report.devices}
    written = []
    for device, part in split_by_device(graph).items():
        path = os.path.join(split_dir, f"{labels[device]}.pb")
        save_graph(part, path)
        written.append(path)
    return written


@click.command("partition")
@click.argument("input_path", metavar="IN")
@click.argument("output_path", metavar="OUT")
@click.option("--split-dir", metavar="DIR", help="Also write one GraphDef per device into DIR (cpu_0.pb, ...).")
@click.option("--compress", type=click.Choice(["none", "bf16", "fp16"]), default="none", show_default=True,
              help="Send float32 tensors as bfloat16/float16 (cast before _Send, back after _Recv).")
@graph_output_options
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report on stdout (needs OUT other than '-').")
@click.option("--report", metavar="FILE.json", help="Write the JSON report to a file.")
@signature_option
@common_options
def command(input_path, output_path, split_dir, compress, text, binary, as_json, report, signature):
    """Replace every cross-device edge of a placed graph IN with a _Send/_Recv pair (one _Recv
    per tensor per destination device), control edges and loops spanning devices included, and
    write the result to OUT."""
    from graphtool import api

    text = prepare_graph_output(output_path, text=text, binary=binary, as_json=as_json)
    if report:
        graph_io.check_writable(report)
    graph = load_graph(input_path, signature=signature)
    lower_if_needed(graph)
    with stage("partitioning"):
        graph, result = api.partition(graph, compress=compress, inplace=True, report=True)
    written = _write_split(graph, result, split_dir) if split_dir else []
    save_graph(graph, output_path, text=text)

    if not settings.quiet:
        show(console, _device_table(result))
        info(_summary(result))
        if settings.verbose:
            for frame, devices in result.skeletons.items():
                info(f"frame '{frame}': control skeleton on {', '.join(devices)}")
            for transfer in result.transfers:
                info(f"{transfer.tensor_name}: {transfer.send.name} -> {transfer.recv.name}"
                     + (f" (frame '{transfer.frame}')" if transfer.frame else ""))
        for path in written:
            info(f"wrote {path}")
    if as_json or report:
        emit_report({"command": "partition", "graph": input_path, "output": output_path,
                     "split": written, **result.to_dict()}, as_json=as_json, report_path=report)
