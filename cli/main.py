"""The `dftool` entry point: the command group, error formatting and exit codes (see CLI.md).

Exit codes: 0 ok, 1 runtime failure, 2 usage error, 3 invalid input, 4 device unavailable.
Every error is printed as one line `error: ...`; a traceback only with --debug.
"""
from __future__ import annotations

import sys
from importlib import import_module

import click

from graphtool import __version__
from graphtool.errors import DftoolError

from .common import common_options, settings

# Subcommand modules; each defines `command`. Listed here so `dftool --help` shows them all.
COMMAND_MODULES = (
    "inspect_cmd",
    "run_cmd",
    "optimize_cmd",
    "grad_cmd",
    "prune_cmd",
    "place_cmd",
    "partition_cmd",
    "profile_cmd",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="dftool")
@common_options
def cli():
    """dftool: inspect, prune, optimize, place, partition, run, differentiate and profile
    TensorFlow-compatible dataflow graphs (GraphDef .pb / .pbtxt; '-' for stdin/stdout)."""


for _module in COMMAND_MODULES:
    cli.add_command(import_module(f"{__package__}.{_module}").command)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--debug" in argv:
        settings.debug = True
    try:
        cli.main(args=argv, prog_name="dftool", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.Abort as exc:
        # click turns Ctrl-C (KeyboardInterrupt) into Abort.
        if isinstance(exc.__cause__, KeyboardInterrupt):
            click.echo("error: interrupted", err=True)
            return 130
        click.echo("error: aborted", err=True)
        return 1
    except click.UsageError as exc:
        hint = f" (see 'dftool {exc.ctx.command_path.split(' ', 1)[1]} --help')" \
            if exc.ctx is not None and " " in exc.ctx.command_path else " (see 'dftool --help')"
        click.echo(f"error: {_one_line(exc.format_message())}{hint}", err=True)
        return 2
    except click.ClickException as exc:
        click.echo(f"error: {_one_line(exc.format_message())}", err=True)
        return exc.exit_code
    except DftoolError as exc:
        if settings.debug:
            import traceback

            traceback.print_exc()
        click.echo(f"error: {exc.one_line()}", err=True)
        return exc.exit_code
    except BrokenPipeError:
        return 1
    except KeyboardInterrupt:
        click.echo("error: interrupted", err=True)
        return 130
    except Exception as exc:  # a bug: say so plainly, traceback only on request
        if settings.debug:
            raise
        click.echo(f"error: internal error: {type(exc).__name__}: {_one_line(exc)} "
                   f"(rerun with --debug for a traceback)", err=True)
        return 1
    return 0


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
