"""The `dftool` entry point: the command group, error formatting and exit codes (see docs/commands.md).

Exit codes: 0 ok, 1 runtime failure (also: stdout closed before the output was written, or out of
memory), 2 usage error, 3 invalid input, 4 device unavailable; a signal ends it with 128 + its
number: 130 Ctrl-C (SIGINT), 143 SIGTERM, 129 SIGHUP. Every error is printed as one line
`error: ...`; a traceback only with --debug.

Only the standard library is imported at the top: `run()` installs the signal handlers before
click, rich, numpy and the commands are imported (most of a second), so that Ctrl-C at any moment
prints one line, not a traceback from inside an import.
"""
from __future__ import annotations

import io
import os
import signal
import sys

# Subcommand modules; each defines `command`. Listed here so `dftool --help` shows them all.
COMMAND_MODULES = (
    "inspect_cmd",
    "draw_cmd",
    "run_cmd",
    "optimize_cmd",
    "transform_cmd",
    "grad_cmd",
    "replicate_cmd",
    "prune_cmd",
    "place_cmd",
    "partition_cmd",
    "profile_cmd",
    "compare_cmd",
    "samples_cmd",
    "cluster_cmd",
)

# signal name -> (exit code, what the error line says). 128 + the signal number, as shells report it.
SIGNAL_EXITS = {"SIGINT": (130, "interrupted"), "SIGTERM": (143, "terminated (SIGTERM)"),
                "SIGHUP": (129, "hangup (SIGHUP)")}
BROKEN_PIPE = "stdout closed before the output was written (broken pipe)"


def _on_signal(signum, frame) -> None:
    """Remove temp files of writes in progress, print one line, exit 128 + signum.

    os._exit, not an exception: an exception would unwind through whatever was running (an import,
    click's own Ctrl-C handling that prints a blank line, a worker pool) and could print more."""
    code, what = next((v for k, v in SIGNAL_EXITS.items() if getattr(signal, k, None) == signum),
                      (128 + signum, f"killed by signal {signum}"))
    try:
        for name in SIGNAL_EXITS:  # a second Ctrl-C while this runs must not print a second line
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_IGN)
        # Only once graph_io is fully imported can a write have begun (it may be half-imported now).
        discard = getattr(sys.modules.get("graphtool.graph_io"), "discard_temp_files", None)
        if discard is not None:
            discard()
        # A private Ray instance and the worker processes of a cluster must not outlive us.
        shutdown_clusters = getattr(sys.modules.get("graphtool.cluster.ray_engine"), "shutdown_all", None)
        if shutdown_clusters is not None:
            shutdown_clusters()
        # On a terminal: start the line afresh (after "^C" or a progress bar), show the cursor again.
        prefix = "\r\x1b[2K\x1b[?25h" if os.isatty(2) else ""
        os.write(2, f"{prefix}error: {what}\n".encode())
    except BaseException:  # nothing may stop the exit
        pass
    finally:
        os._exit(code)


def install_signal_handlers() -> None:
    for name in SIGNAL_EXITS:
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _on_signal)


class _WholeWrites(io.RawIOBase):
    """stdout's file descriptor, written with os.write until every byte is out. Python's own
    buffered stdout can report a large write to a pipe as done when the reader has gone away
    after part of it; here the rest raises BrokenPipeError, which main() reports."""

    def __init__(self, fd: int):
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        written = 0
        while written < len(view):
            written += os.write(self._fd, view[written:])
        return written


def _guard_stdout() -> None:
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    sys.stdout.flush()
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(_WholeWrites(fd)), encoding=sys.stdout.encoding,
                                  errors=sys.stdout.errors, line_buffering=bool(sys.stdout.line_buffering))


def _silence_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so that the flush at interpreter exit does
    not print "Exception ignored ... BrokenPipeError" (as the Python docs on SIGPIPE advise)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        pass


class _StdoutClosed(Exception):
    """A BrokenPipeError raised inside a command, carried past click's own EPIPE handling."""


_group_cache = None


def _group():
    """The click group with every command (imported on first use: the heavy part of startup)."""
    global _group_cache
    if _group_cache is not None:
        return _group_cache
    from importlib import import_module

    import click

    from graphtool import __version__

    from .common import common_options

    class Group(click.Group):
        def invoke(self, ctx):
            try:
                return super().invoke(ctx)
            except BrokenPipeError:
                # click itself would answer it with a silent exit 1; main() says what happened.
                raise _StdoutClosed() from None

    @click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(__version__, "--version", prog_name="dftool")
    @common_options
    def cli():
        """dftool: inspect, prune, optimize, place, partition, run, differentiate and profile
        TensorFlow-compatible dataflow graphs (GraphDef .pb / .pbtxt; '-' for stdin/stdout)."""

    for module in COMMAND_MODULES:
        cli.add_command(import_module(f"{__package__}.{module}").command)
    _group_cache = cli
    return cli


def __getattr__(name: str):
    if name == "cli":  # `from cli.main import cli` still works
        return _group()
    raise AttributeError(name)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    import click

    from graphtool import limits
    from graphtool.errors import DftoolError

    from .common import settings

    limits.reset()  # bounds come from this command line and the environment, not an earlier call
    settings.__dict__.update(type(settings)().__dict__)   # so do -q/-v/--debug and who has stdout
    if "--debug" in argv:
        settings.debug = True

    def say(line: str) -> None:
        try:
            click.echo(line, err=True)
        except OSError:  # stderr closed too: nothing left to tell
            pass

    try:
        _group().main(args=argv, prog_name="dftool", standalone_mode=False)
        sys.stdout.flush()  # a closed pipe shows here, not as a message at interpreter exit
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.NoArgsIsHelpError as exc:
        # A bare `dftool`: the whole usage, as `dftool --help` prints it (a usage error: exit 2).
        say(exc.ctx.get_help() if exc.ctx is not None else _group().get_help(click.Context(_group())))
        return 2
    except click.exceptions.Abort as exc:
        # click turns Ctrl-C (KeyboardInterrupt) into Abort (run() exits from the signal handler
        # first; this is for main() called in-process).
        if isinstance(exc.__cause__, KeyboardInterrupt):
            say("error: interrupted")
            return 130
        say("error: aborted")
        return 1
    except click.UsageError as exc:
        hint = f" (see 'dftool {exc.ctx.command_path.split(' ', 1)[1]} --help')" \
            if exc.ctx is not None and " " in exc.ctx.command_path else " (see 'dftool --help')"
        say(f"error: {_one_line(exc.format_message())}{hint}")
        return 2
    except click.ClickException as exc:
        say(f"error: {_one_line(exc.format_message())}")
        return exc.exit_code
    except DftoolError as exc:
        if settings.debug:
            import traceback

            traceback.print_exc()
        say(f"error: {exc.one_line()}")
        return exc.exit_code
    except (BrokenPipeError, _StdoutClosed):
        _silence_stdout()
        say(f"error: {BROKEN_PIPE}")
        return 1
    except KeyboardInterrupt:
        say("error: interrupted")
        return 130
    except MemoryError:
        if settings.debug:
            raise
        say("error: out of memory (the graph or a tensor needs more than this machine has; "
            "--max-tensor-bytes bounds what one tensor may take)")
        return 1
    except OSError as exc:
        import errno

        if exc.errno not in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)) or settings.debug:
            return _internal_error(exc, settings, say)
        say(f"error: {exc.filename or 'output'}: {exc.strerror or 'no space left on device'}")
        return 1
    except Exception as exc:  # a bug: say so plainly, traceback only on request
        return _internal_error(exc, settings, say)
    return 0


def _internal_error(exc: Exception, settings, say) -> int:
    if settings.debug:
        raise exc
    say(f"error: internal error: {type(exc).__name__}: {_one_line(str(exc))} "
        f"(rerun with --debug for a traceback)")
    return 1


def _collect_cycles_rarely() -> None:
    """A command builds one large web of objects (a 100,000-node graph: nodes, edge dicts, attr
    protos) that lives until it exits. CPython's cycle collector, at its default thresholds, walks
    the whole heap again and again while that web grows: with 100,000 nodes it cost as much as
    the command's own work and grew faster than the graph. Young collections every 50,000
    allocations (not 700) make those walks rare; cyclic garbage is still freed."""
    import gc

    gc.set_threshold(50_000, 20, 20)


def run() -> None:
    """The console script: signal handlers first, then everything else."""
    install_signal_handlers()
    _guard_stdout()
    _collect_cycles_rarely()
    sys.exit(main())


if __name__ == "__main__":
    run()
