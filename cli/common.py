"""What every command shares: common options, graph loading/saving, reports (output: cli/output.py)."""
from __future__ import annotations

import os
import stat
import sys

import click

from graphtool import graph_io, limits
from graphtool.errors import DftoolError, InvalidGraphError, UsageError
from graphtool.ir import Graph, to_graphdef

from .output import detail, err_console, notice, settings, stage, take_stdout
from .report import emit_report  # the JSON reports live in report.py; commands import it from here

# Notices, warnings and progress: stderr.
console = err_console


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
                        help="Silence notices and warnings; results asked for and errors still print.")(func)
    func = click.option("-v", "--verbose", count=True, expose_value=False, callback=_set_verbose,
                        help="Print more detail: stage timings and per-node notes (repeatable).")(func)
    return func


def info(message: str) -> None:
    """A status line on stderr, unless --quiet."""
    notice(message)


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

    with stage(f"loading {'<stdin>' if path == '-' else path}"):
        graph, saved_model = load_graph_and_origin(path, signature=signature, verify=verify, problems=problems)
    detail(f"{'<stdin>' if path == '-' else path}: {len(graph)} node(s)")
    if saved_model is not None:
        info(saved_model.notice())
    return graph


def lower_if_needed(graph: Graph) -> None:
    """Lower functional ops (If/While/calls) in place before a command that needs v1 control flow
    (place, partition, grad), with a one-line notice."""
    from graphtool.functions.lowering import lower_functional_ops, needs_lowering

    if needs_lowering(graph):
        info(lower_functional_ops(graph).notice())


# OUT names whose format dftool knows: binary GraphDef, or text format (graph_io.TEXT_SUFFIXES).
BINARY_SUFFIXES = (".pb", ".graphdef")


def graph_output_options(func):
    """--text / --binary on a command that writes a graph to OUT."""
    func = click.option("--binary", is_flag=True,
                        help="Write a binary GraphDef whatever OUT is called (e.g. to a name ending "
                             "in neither .pb nor .pbtxt).")(func)
    return click.option("--text", is_flag=True,
                        help="Write GraphDef text format (on stdout, or whatever OUT is called).")(func)


def prepare_graph_output(path: str, *, text: bool, binary: bool, as_json: bool = False) -> bool | None:
    """Check OUT before any work and return `text` for save_graph: UsageError (exit 2) for
    --text with --binary, --json with OUT '-', a binary graph for a terminal, a name whose
    extension dftool does not write (.onnx, .json: a format dftool would not produce) unless
    --text/--binary says which, or a place it cannot write."""
    if text and binary:
        raise UsageError("--text and --binary cannot be combined")
    if as_json:
        if path == graph_io.STDIO:
            raise UsageError("--json writes to stdout, which OUT '-' already uses; use --report FILE")
        take_stdout()
    if path == graph_io.STDIO or graph_io.is_stream(path):
        if path == graph_io.STDIO:
            take_stdout()
        if not text and not binary and _is_terminal(path):
            raise UsageError("refusing to write a binary GraphDef to the terminal",
                             hint="add --text for the readable form, or redirect stdout to a file or pipe "
                                  "(> out.pb)")
        return True if text else (False if binary else None)
    suffix = os.path.splitext(path)[1].lower()
    if suffix and not text and not binary and suffix not in BINARY_SUFFIXES + graph_io.TEXT_SUFFIXES:
        raise UsageError(f"OUT {path}: dftool writes GraphDefs (.pb binary, .pbtxt text), not '{suffix}' files",
                         hint=f"name it {os.path.splitext(path)[0]}.pb, or say which form with --binary or --text")
    graph_io.check_writable(path)
    return True if text else (False if binary else None)


def _is_terminal(path: str) -> bool:
    """Whether OUT ('-': stdout, or a device such as /dev/tty) is a terminal. Only a character
    device is opened to ask: opening a FIFO and closing it would end its reader's stream."""
    try:
        if path == graph_io.STDIO:
            return os.isatty(sys.stdout.fileno())
        if not stat.S_ISCHR(os.stat(path).st_mode):
            return False
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
        try:
            return os.isatty(fd)
        finally:
            os.close(fd)
    except (AttributeError, OSError, ValueError):
        return False


def save_graph(graph: Graph, path: str, *, text: bool | None = None) -> None:
    """Write the graph atomically: text format when `text` is True, binary when False, else by
    file name (.pbtxt text, anything else binary; stdout binary). `text` comes from
    prepare_graph_output."""
    with stage(f"writing {'<stdout>' if path == graph_io.STDIO else path}"):
        graph_io.save_graphdef(to_graphdef(graph), path, text=text)


__all__ = ["DftoolError", "InvalidGraphError", "common_options", "console", "emit_report", "graph_output_options",
           "info", "load_graph", "lower_if_needed", "prepare_graph_output", "save_graph", "settings",
           "signature_option"]
