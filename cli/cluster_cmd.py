"""`dftool cluster SPEC`: start or join a cluster and list its tasks, nodes and devices (see
docs/commands.md); `start_cluster` is how run, profile and place get theirs."""
from __future__ import annotations

import click

from graphtool.errors import UsageError

from . import output
from .common import common_options, info
from .report import emit_report
from .output import detail, result_console, show, stage, take_stdout

CLUSTER_HELP = ("Run the partitions on Ray worker processes (extra `cluster`): local:N (a private Ray "
                "instance on this machine, loopback only, with N worker tasks), auto (the Ray cluster "
                "RAY_ADDRESS names), ray://HOST:PORT, or a cluster spec FILE.json.")


def cluster_option(func):
    return click.option("--cluster", "cluster_spec", metavar="SPEC", help=CLUSTER_HELP)(func)


def start_cluster(spec: str | None, *, threads: int | None = None, compress: str = "none", cost_model=None):
    """The running Cluster `--cluster SPEC` names (None without one). It is closed when the command
    ends, however it ends (the CLI's signal handler closes it on Ctrl-C and SIGTERM)."""
    if spec is None:
        if compress != "none":
            raise UsageError("--compress applies to transfers between the tasks of a cluster",
                             hint="add --cluster local:N, or use `dftool partition --compress`")
        return None
    from graphtool.cluster import open_cluster

    with stage(f"starting the cluster {spec}"):
        cluster = open_cluster(spec, threads=threads, compress=compress, cost_model=cost_model)
    click.get_current_context().call_on_close(cluster.close)
    network = cluster.network
    info(f"cluster {spec}: {len(cluster.tasks)} task(s) on {len({t.node_id for t in cluster.tasks})} Ray node(s); "
         f"network {network.latency_seconds * 1e3:.2f} ms, {network.bytes_per_second / 1e9:.2f} GB/s")
    for task in cluster.tasks:
        detail(f"  task {task.task.short_name}: Ray node {task.short_node} ({task.node_ip}), pid {task.pid}, "
               f"devices {', '.join(d.rsplit('/device:', 1)[-1] for d in task.task.devices)}")
    return cluster


@click.command("cluster")
@click.argument("spec")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report on stdout.")
@click.option("--report", metavar="FILE.json", help="Write the JSON report to a file.")
@common_options
def command(spec, as_json, report):
    """Start (local:N) or join (auto, ray://HOST:PORT, FILE.json) the cluster SPEC and list its
    tasks: Ray node, process and devices, and the network measured at start-up."""
    if as_json:
        take_stdout()
    cluster = start_cluster(spec)
    assert cluster is not None
    rows = cluster.describe()
    table = output.table(f"cluster {spec}", ["task", "Ray node", "address", "pid", "devices"], right=("pid",))
    for row in rows:
        table.add_row(row["task"], row["node_id"][:12], row["node_ip"], str(row["pid"]),
                      ", ".join(d.rsplit("/device:", 1)[-1] for d in row["devices"]))
    network = cluster.network
    if as_json or report:
        emit_report({"command": "cluster", "cluster": spec, "tasks": rows,
                     "network": {"latency_seconds": network.latency_seconds,
                                 "bytes_per_second": network.bytes_per_second}},
                    as_json=as_json, report_path=report)
    show(result_console(), table)
