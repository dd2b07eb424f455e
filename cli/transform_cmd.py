"""`dftool transform IN OUT --apply T[,T...]`: Graph Transform Tool style rewrites (see docs/commands.md)."""
from __future__ import annotations

import click

from graphtool import graph_io
from graphtool.errors import UsageError

from .common import (common_options, emit_report, graph_output_options, info, load_graph, prepare_graph_output,
                     save_graph, settings, signature_option)
from .output import stage


def _names(values: tuple[str, ...]) -> list[str]:
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def describe_transforms() -> str:
    """The text of --list: each transform, what it does, its parameters."""
    from graphtool.transform import registered_transforms

    lines = []
    for name, cls in registered_transforms().items():
        lines.append(f"{name}")
        lines.append(f"    {cls.description}")
        lines.extend(f"    {param.describe()}" for param in cls.params)
    return "\n".join(lines)


def _check_names(graph, option: str, names: list[str]) -> None:
    for name in names:
        try:
            graph.node(name)
        except UsageError as exc:
            raise UsageError(f"{option} {name}: {exc}", hint=exc.hint) from None


def _summary(applied) -> str:
    counts = ", ".join(f"{k}={v}" for k, v in applied.result.counts.items()) or "nothing to change"
    timing = f", {applied.seconds * 1e3:.1f} ms" if settings.verbose else ""
    return f"{applied.spec}: {counts} (nodes {applied.nodes_before} -> {applied.nodes_after}{timing})"


@click.command("transform")
@click.argument("input_path", metavar="IN", required=False)
@click.argument("output_path", metavar="OUT", required=False)
@click.option("--apply", "applies", multiple=True, metavar="T[,T...]",
              help="Transforms to apply in order (repeatable): NAME or NAME(key=value, ...), comma separated, "
                   "e.g. 'fold_batch_norms,set_device(device=/gpu:0)'.")
@click.option("--list", "list_transforms", is_flag=True, help="Describe the transforms and their parameters, and exit.")
@click.option("--inputs", multiple=True, metavar="LIST",
              help="The graph's input nodes (comma separated; default: its Placeholders).")
@click.option("--outputs", multiple=True, metavar="LIST",
              help="The graph's output nodes, whose names and values are kept (default: nodes nobody uses).")
@graph_output_options
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report on stdout (needs OUT other than '-').")
@click.option("--report", metavar="FILE.json", help="Write the JSON report to a file.")
@signature_option
@common_options
def command(input_path, output_path, applies, list_transforms, inputs, outputs, text, binary, as_json, report,
            signature):
    """Apply Graph Transform Tool style transforms to IN and write OUT; each says what it changed."""
    from graphtool.costs import constant_bytes
    from graphtool.ir.queries import graph_outputs
    from graphtool.ops.core import FED_INPUT_OPS
    from graphtool.transform import TransformContext, lookup, parse_apply, run_transforms

    if list_transforms:
        click.echo(describe_transforms())
        return
    if not input_path or not output_path:
        raise UsageError("transform needs IN and OUT (or --list)")
    if not applies:
        raise UsageError("transform needs --apply T[,T...]", hint="dftool transform --list shows the transforms")
    specs = [spec for text in applies for spec in parse_apply(text)]
    for spec in specs:  # unknown names and parameters fail before the graph is read
        lookup(spec.name).bind(spec.params)
    text = prepare_graph_output(output_path, text=text, binary=binary, as_json=as_json)
    if report:
        graph_io.check_writable(report)
    graph = load_graph(input_path, signature=signature)
    input_names, output_names = _names(inputs), _names(outputs)
    _check_names(graph, "--inputs", input_names)
    _check_names(graph, "--outputs", output_names)
    ctx = TransformContext(inputs=input_names or [n.name for n in graph.nodes if n.op in FED_INPUT_OPS],
                           outputs=output_names or [n.name for n in graph_outputs(graph)])
    nodes_before, bytes_before = len(graph), constant_bytes(graph)
    with stage("transforming"):
        graph, applied = run_transforms(graph, specs, ctx)
    save_graph(graph, output_path, text=text)

    if not settings.quiet:
        for step in applied:
            info(_summary(step))
            for note in step.result.notes:
                info(f"    note: {note}")
        info(f"nodes {nodes_before} -> {len(graph)}, constants {bytes_before:,} -> {constant_bytes(graph):,} bytes")
    if as_json or report:
        emit_report({"command": "transform", "graph": input_path, "output": output_path,
                     "inputs": ctx.inputs, "outputs": ctx.outputs,
                     "nodes": {"before": nodes_before, "after": len(graph)},
                     "constant_bytes": {"before": bytes_before, "after": constant_bytes(graph)},
                     "transforms": [{"name": step.spec.name, "params": step.spec.params,
                                     "counts": step.result.counts, "notes": step.result.notes,
                                     "nodes_before": step.nodes_before, "nodes_after": step.nodes_after,
                                     "seconds": step.seconds} for step in applied]},
                    as_json=as_json, report_path=report)
