"""`dftool draw IN OUT.{dot,svg,png}`: a picture of a graph (see docs/commands.md)."""
from __future__ import annotations

import click

from graphtool import graph_io

from .common import common_options, info, load_graph, signature_option
from .output import stage


@click.command("draw")
@click.argument("input_path", metavar="IN")
@click.argument("output_path", metavar="OUT")
@click.option("--expand", "expand", multiple=True, metavar="SCOPE",
              help="Draw this name scope (or while-loop frame) open, as a cluster (repeatable).")
@click.option("--expand-all", is_flag=True, help="Draw every scope and loop open: every node.")
@click.option("--depth", type=click.IntRange(min=0), default=None, metavar="N",
              help="Draw scopes of at most N levels open (a/b is level 2; default 0, or deeper while one "
                   "box holds most of the graph).")
@click.option("--max-nodes", "max_items", type=click.IntRange(min=1), default=None, metavar="N",
              help="Refuse a picture of more than N boxes and nodes (default 400).")
@click.option("--format", "fmt", type=click.Choice(["dot", "svg", "png"]), default=None,
              help="Picture format (default: by OUT's suffix: .dot/.gv, .svg, .png).")
@signature_option
@common_options
def command(input_path: str, output_path: str, expand: tuple[str, ...], expand_all: bool, depth: int | None,
            max_items: int | None, fmt: str | None, signature: str | None) -> None:
    """Draw IN as OUT: DOT text, or SVG/PNG through Graphviz's `dot` program.

    Name scopes and while loops are collapsed into boxes unless --expand (a scope or loop frame),
    --expand-all or --depth opens them; nodes and boxes are filled by device (legend), data edges
    are labelled with the tensor's shape where known, control edges are dashed. '-' as OUT writes
    to stdout."""
    from graphtool.draw import DEFAULT_MAX_ITEMS, check_renderable, layout, to_dot, write_drawing
    from graphtool.draw.render import output_format

    fmt = output_format(output_path, fmt) if not (output_path == "-" and fmt is None) else "dot"
    check_renderable(fmt)                    # before any work: no `dot`, one error line
    graph_io.check_writable(output_path)
    graph = load_graph(input_path, signature=signature)
    title = "<stdin>" if input_path == "-" else input_path
    with stage("laying out the picture"):
        picture = layout(graph, expand=expand, expand_all=expand_all, depth=depth,
                         max_items=max_items or DEFAULT_MAX_ITEMS, title=title)
        text = to_dot(picture)
    with stage(f"writing {output_path}"):
        write_drawing(text, output_path, fmt)
    kinds = [item.kind for item in picture.items.values()]
    boxes = kinds.count("scope") + kinds.count("loop")
    info(f"drew {len(graph)} nodes as {kinds.count('node')} node(s) and {boxes} collapsed box(es) in "
         f"{len(picture.clusters)} open scope(s), {len(picture.edges)} edge(s), {len(picture.devices)} device(s)"
         f" -> {output_path}")
