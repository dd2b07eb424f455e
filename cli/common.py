"""What every command shares: common options, graph loading/saving, reports and the stderr console."""
from __future__ import annotations

from dataclasses import dataclass

import click
from rich.console import Console

from graphtool import graph_io, limits
from graphtool.errors import DftoolError, InvalidGraphError
from graphtool.ir import Graph, to_graphdef

from .report import emit_report  # the JSON reports live in report.py; commands import it from here


@dataclass
class Settings:
    debug: bool = False
    quiet: bool = False
    verbose: int = 0


settings = Settings()
# Human-readable output (tables, progress) goes to stderr; stdout stays free for graphs and JSON.
console = Console(stderr=True, highlight=False, soft_wrap=False)


def _set_debug(ctx, param, value):
    if value:
        settings.debug = True
    return value


def _set_quiet(ctx, param, value):
    if value:
        settings.quiet = True
    return value


def _set_verbose(ctx, param, value):
    settings.verbose = max(settings.verbose, value or 0)
    return value


def _set_limit(field_name: str):
    def callback(ctx, param, value):
        if value is not None:
            limits.configure(**{field_name: limits.parse_size(value, f"--{param.name.replace('_', '-')}")})
        return value
    return callback


def common_options(func):
    """--debug, -q/--quiet, -v/--verbose and the resource bounds (graphtool.limits) on a command
    (they are accepted on the group too)."""
    func = click.option("--max-input-bytes", metavar="SIZE", expose_value=False, is_eager=True,
                        callback=_set_limit("max_input_bytes"),
                        help=f"Refuse input files larger than SIZE (K/M/G suffixes; default "
                             f"{limits.describe_bytes(limits.Limits().max_input_bytes)}, or "
                             f"${limits.ENV_VARS['max_input_bytes']}).")(func)
    func = click.option("--max-tensor-bytes", metavar="SIZE", expose_value=False, is_eager=True,
                        callback=_set_limit("max_tensor_bytes"),
                        help=f"Refuse any one tensor (a constant, a fed array, an inferred value) "
                             f"larger than SIZE (default {limits.describe_bytes(limits.Limits().max_tensor_bytes)}"
                             f", or ${limits.ENV_VARS['max_tensor_bytes']}).")(func)
    func = click.option("--debug", is_flag=True, expose_value=False, is_eager=True, callback=_set_debug,
                        help="Show tracebacks for errors.")(func)
    func = click.option("-q", "--quiet", is_flag=True, expose_value=False, callback=_set_quiet,
                        help="Print only errors.")(func)
    func = click.option("-v", "--verbose", count=True, expose_value=False, callback=_set_verbose,
                        help="Print more detail (repeatable).")(func)
    return func


def info(message: str) -> None:
    """A progress/status line on stderr, unless --quiet."""
    if not settings.quiet:
        console.print(message, markup=False)


def signature_option(func):
    """--signature NAME on a command that reads a graph (which may be a SavedModel)."""
    return click.option("--signature", metavar="NAME",
                        help="For a SavedModel input (its directory or saved_model.pb): the signature to "
                             "load, frozen (default: serving_default).")(func)


def load_graph(path: str, *, verify: bool = True, problems: list[str] | None = None,
               signature: str | None = None) -> Graph:
    """Read GRAPH (file, '-', or a SavedModel with `signature`) into the IR; InvalidGraphError
    (exit 3) names the file on failure. With a `problems` list, a graph that fails to build or
    verify is still returned and what is wrong with it is appended to the list (see from_graphdef)."""
    from graphtool.loader import load_graph_and_origin

    graph, saved_model = load_graph_and_origin(path, signature=signature, verify=verify, problems=problems)
    if saved_model is not None:
        info(saved_model.notice())
    return graph


def lower_if_needed(graph: Graph) -> None:
    """Lower functional ops (If/While/calls) in place before a command that needs v1 control flow
    (place, partition, grad), with a one-line notice."""
    from graphtool.functions.lowering import lower_functional_ops, needs_lowering

    if needs_lowering(graph):
        info(lower_functional_ops(graph).notice())


def save_graph(graph: Graph, path: str, *, text: bool = False) -> None:
    """Write the graph atomically; binary on stdout unless `text`, else by file name."""
    graph_io.save_graphdef(to_graphdef(graph), path, text=True if text else None)


__all__ = ["DftoolError", "InvalidGraphError", "common_options", "console", "emit_report", "info",
           "load_graph", "lower_if_needed", "save_graph", "settings", "signature_option"]
