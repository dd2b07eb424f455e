"""`dftool place IN OUT`: give every node a full device name (see docs/commands.md).

Errors: a bad --devices list or a device type other than CPU/GPU is a usage error (exit 2); a bad
--cost-model file, a bad device name inside the graph, a constraint that cannot hold with
--no-soft-placement, a colocation conflict or an op without kernels on any device is an invalid
input (exit 3), each naming the node(s) and device(s) at fault.
"""
from __future__ import annotations

import click
from rich.table import Table

from graphtool import graph_io
from graphtool.errors import UsageError

from . import output
from .common import (common_options, console, emit_report, graph_output_options, info, load_graph, lower_if_needed,
                     prepare_graph_output, save_graph, settings, signature_option)
from .cluster_cmd import cluster_option, start_cluster
from .output import result_console, show, stage


def _seconds(value: float) -> str:
    """A duration in the unit that keeps it readable."""
    if value == 0:
        return "0"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value * 1e9:.3g} ns"


def _device_table(report) -> Table:
    from graphtool.placement.device_names import short_device_name

    table = output.table("placement", ["device", "nodes", "compute"], right=("nodes", "compute"))
    counts = report.nodes_per_device()
    for device in report.devices:
        table.add_row(short_device_name(device), str(counts[device]), _seconds(report.device_load.get(device, 0.0)))
    return table


def _softened_table(report) -> Table:
    table = output.table("softened constraints (soft placement)", ["node", "requested", "placed on", "why"])
    for entry in report.softened:
        table.add_row(entry.node, entry.requested, entry.chosen, entry.why)
    return table


def _explain_table(report) -> Table:
    from graphtool.placement.device_names import short_device_name

    table = output.table("why each node went where it did",
                         ["node", "op", "device", "reason", "candidates (total = compute + transfer - parallel credit)"])
    for node in report.nodes:
        candidates = "; ".join(f"{c.device} {_seconds(c.total)} = {_seconds(c.compute)} + {_seconds(c.transfer)}"
                               + (f" - {_seconds(c.parallel_credit)}" if c.parallel_credit else "")
                               for c in node.candidates)
        table.add_row(node.name, node.op, short_device_name(node.device), f"{node.reason}: {node.detail}",
                      candidates)
    return table


@click.command("place")
@click.argument("input_path", metavar="IN")
@click.argument("output_path", metavar="OUT")
@click.option("--devices", metavar="LIST",
              help="Comma-separated devices, short forms allowed (cpu:0,cpu:1,gpu:0), of any job and "
                   "task (worker:0/cpu:0,worker:1/cpu:0,ps:0/cpu:0). "
                   "Default: the devices the graph names, plus cpu:0.")
@click.option("--cost-model", "cost_model_path", metavar="FILE",
              help="Measured per-node/per-op costs (JSON, as written by profile --cost-model-out).")
@click.option("--no-soft-placement", is_flag=True,
              help="Fail instead of moving a node whose requested device cannot be used.")
@click.option("--explain", is_flag=True,
              help="Show, per node, the candidate devices and why one won (on stdout; on stderr when "
                   "stdout carries the graph or --json).")
@graph_output_options
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report on stdout (needs OUT other than '-').")
@click.option("--report", metavar="FILE.json", help="Write the JSON report to a file.")
@cluster_option
@signature_option
@common_options
def command(input_path, output_path, devices, cost_model_path, no_soft_placement, explain, text, binary, as_json,
            report, signature, cluster_spec):
    """Place every node of IN on a device and write OUT."""
    from graphtool import api
    from graphtool.placement.cost_model import CostModel
    from graphtool.placement.device_names import parse_device_list

    text = prepare_graph_output(output_path, text=text, binary=binary, as_json=as_json)
    if report:
        graph_io.check_writable(report)
    device_list = None
    if devices is not None:
        try:
            parse_device_list(devices)   # the syntax; place() checks the devices themselves
        except UsageError as exc:
            raise UsageError(f"--devices: {exc}", hint=exc.hint) from None
        device_list = [item.strip() for item in devices.split(",")]
    cost_model = CostModel.load(cost_model_path) if cost_model_path else None
    graph = load_graph(input_path, signature=signature)
    lower_if_needed(graph)
    if cluster_spec is not None:
        # The cluster's devices (or those --devices names among them), and its network as measured.
        cluster = start_cluster(cluster_spec, cost_model=cost_model)
        assert cluster is not None
        cost_model = cluster.placement_cost_model()
        if device_list is None:
            device_list = cluster.device_names
        else:
            from graphtool.placement.device_names import canonical_device_name

            unknown = [d for d in device_list if canonical_device_name(d) not in cluster.device_names]
            if unknown:
                raise UsageError(f"--devices: '{unknown[0]}' is not a device of the cluster {cluster_spec}",
                                 hint=f"its devices: {', '.join(cluster.device_names)}")
    with stage("placing"):
        graph, result = api.place(graph, device_list, soft_placement=not no_soft_placement, cost_model=cost_model,
                                  explain=explain, inplace=True, report=True)
    save_graph(graph, output_path, text=text)

    if explain and output.results_shown():   # asked for: stdout when free, and not silenced by -q
        show(result_console(), _explain_table(result))
    if not settings.quiet:
        show(console, _device_table(result))
        if result.softened:
            show(console, _softened_table(result))
        if result.opaque:
            from graphtool.ops import opaque

            info(f"note: {len(result.opaque)} node(s) of ops dftool does not know were placed without a "
                 f"kernel check (on their requested device, or with their neighbours): "
                 f"{opaque.describe(opaque.unknown_ops(graph.node(n) for n in result.opaque))}")
        info(f"placed {len(result.nodes)} node(s) on {len(result.devices)} device(s); estimated cost "
             f"{_seconds(result.total_cost)} (busiest device {_seconds(max(result.device_load.values(), default=0))}"
             f" + transfers {_seconds(result.transfer_seconds)})"
             + (f"; {len(result.softened)} constraint(s) softened" if result.softened else ""))
    if as_json or report:
        emit_report({"command": "place", "graph": input_path, "output": output_path, **result.to_json()},
                    as_json=as_json, report_path=report)
