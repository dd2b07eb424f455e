"""Where a command's words go, and how they look on a terminal and off it (docs/commands.md, "Standard input and output").

- What the user asked to see (inspect and profile tables, run results, place --explain) goes to
  stdout, unless stdout already carries a graph (OUT '-') or JSON (--json): then to stderr. A
  command that writes either calls `take_stdout()` first.
- Notices, warnings, progress and errors always go to stderr; -q silences notices, never the result.
- Off a terminal nothing is wrapped or folded: the consoles get a width no line reaches, and tables
  lose their box characters (plain columns aligned with spaces), so `grep`, `awk` and `tail` see
  whole rows and whole names.
- Long work shows a transient spinner (rich) on a terminal only; with -v each stage reports its time.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Iterator

from dataclasses import dataclass

from rich.console import Console
from rich.status import Status
from rich.table import Table


@dataclass
class Settings:
    """The command line's global switches, set by the common options (cli/common.py)."""
    debug: bool = False
    quiet: bool = False
    verbose: int = 0
    stdout_taken: bool = False   # a graph or JSON is written to stdout


settings = Settings()

# Off a terminal: wider than any line dftool prints, so rich never wraps or folds.
NO_WRAP_WIDTH = 1 << 20
# A stage that ends sooner shows no spinner at all (no flicker on quick commands).
SPINNER_DELAY_S = 0.2


def _console(stderr: bool) -> Console:
    # Markup and emoji codes off: a name or message such as 'shape [batch]' or 'a:smile:b'
    # (table cells included) prints as it is.
    console = Console(stderr=stderr, highlight=False, soft_wrap=False, emoji=False, markup=False)
    if not console.is_terminal:
        console.width = NO_WRAP_WIDTH
    return console


# rich writes to whatever sys.stdout / sys.stderr are at the time of each print.
err_console = _console(stderr=True)
out_console = _console(stderr=False)


def take_stdout() -> None:
    """Stdout carries a graph or JSON from now on: results go to stderr instead."""
    settings.stdout_taken = True


def result_console() -> Console:
    """The console for what the user asked to see."""
    return err_console if settings.stdout_taken else out_console


def results_shown() -> bool:
    """Whether results are printed: always on stdout; on stderr (stdout taken) unless -q."""
    return not (settings.stdout_taken and settings.quiet)


def table(title: str | None, columns: list[str], right: tuple[str, ...] = (), **options) -> Table:
    """A table with left-aligned text columns and right-aligned `right` columns (by name)."""
    result = Table(title=title, title_justify="left", **options)
    for column in columns:
        result.add_column(column, justify="right" if column in right else "left")
    return result


def show(console: Console, *renderables) -> None:
    """Print text lines and tables. Off a terminal a table is plain (no box lines) and text is
    never wrapped: one row or message per line, names whole."""
    for item in renderables:
        if isinstance(item, Table) and not console.is_terminal:
            item.box, item.pad_edge = None, False
            for column in item.columns:
                column.no_wrap = True
            with console.capture() as captured:
                console.print(item)
            console.file.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))
        elif isinstance(item, Table):
            console.print(item)
        else:
            console.print(item, markup=False, soft_wrap=True)


def result(*renderables) -> None:
    """What the user asked to see (see results_shown)."""
    if results_shown():
        show(result_console(), *renderables)


def notice(message: str) -> None:
    """A status line on stderr, unless --quiet."""
    if not settings.quiet:
        show(err_console, message)


def detail(message: str) -> None:
    """A line of -v detail on stderr."""
    if settings.verbose and not settings.quiet:
        show(err_console, message)


def warning(message: str) -> None:
    """A `warning: ...` line on stderr; -q silences it as a notice."""
    notice(f"warning: {message}")


class _Spinner:
    """rich's status spinner on stderr, started SPINNER_DELAY_S after construction (by a timer
    thread) unless stopped first."""

    def __init__(self, text: str):
        self._lock = threading.Lock()
        self._status: Status | None = None
        self._stopped = False
        self._text = text
        self._timer = threading.Timer(SPINNER_DELAY_S, self._start)
        self._timer.daemon = True
        self._timer.start()

    def _start(self) -> None:
        with self._lock:
            if not self._stopped:
                status = self._status = err_console.status(self._text)
                status.start()

    def update(self, text: str) -> None:
        with self._lock:
            self._text = text
            if self._status is not None:
                self._status.update(text)

    def stop(self) -> None:
        self._timer.cancel()
        with self._lock:
            self._stopped = True
            if self._status is not None:
                self._status.stop()


_active: list[_Spinner] = []


def progress_enabled() -> bool:
    """Progress is for people at a terminal: never on a pipe or file, never with -q."""
    return err_console.is_terminal and not settings.quiet


@contextmanager
def stage(what: str) -> Iterator[None]:
    """Long work: a spinner saying `what` on a terminal (a stage inside another one only changes
    its text); with -v, the time it took."""
    started = time.perf_counter()
    spinner = None
    if progress_enabled():
        if _active:
            _active[-1].update(what + " ...")
        else:
            spinner = _Spinner(what + " ...")
            _active.append(spinner)
    try:
        yield
    finally:
        if spinner is not None:
            _active.remove(spinner)
            spinner.stop()
    detail(f"{what}: {time.perf_counter() - started:.3f} s")
