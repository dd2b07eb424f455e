"""The multi-step side of `dftool run`: its options, and the step log and progress bar it shows
while graphtool.training.StepLoop runs the steps."""
from __future__ import annotations

import time
from typing import Any

import click
import numpy as np

from graphtool.errors import UsageError

from .common import info
from .output import err_console, progress_enabled


def step_options(func):
    """--init, --target, --steps and what a multi-step run adds (see docs/commands.md)."""
    options = [
        click.option("--init", "inits", multiple=True, metavar="NODE",
                     help="Run this node once before the first step (a variable initializer; repeatable)."),
        click.option("--target", "targets", multiple=True, metavar="NODE",
                     help="Run this node (a training op) in every step, with the fetches (repeatable)."),
        click.option("--steps", type=click.IntRange(min=1), default=1, show_default=True,
                     help="Steps to run: each runs the --target nodes and computes the fetches (the last "
                          "step's are shown; --output stacks every step's)."),
        click.option("--feeds-per-step", metavar="FILE.npz",
                     help="Feeds that change every step: arrays with a leading step axis (step k gets row k-1)."),
        click.option("--log-every", type=click.IntRange(min=1), metavar="K",
                     help="Log the fetched values every K steps (default: about 10 lines per run)."),
        click.option("--checkpoint-dir", metavar="DIR",
                     help="Save checkpoints (TensorFlow's format) to DIR/model.ckpt-STEP, with a `checkpoint` "
                          "state file; through the graph's Saver nodes, else a saver of every variable."),
        click.option("--save-every", type=click.IntRange(min=1), metavar="K",
                     help="With --checkpoint-dir: save every K steps (and after the last step)."),
        click.option("--keep", type=click.IntRange(min=1), default=5, show_default=True, metavar="N",
                     help="Checkpoints kept in --checkpoint-dir (older ones are deleted)."),
        click.option("--restore", metavar="latest|PATH",
                     help="Restore variables before the first step: `latest` in --checkpoint-dir, a directory, "
                          "or a checkpoint prefix; the run resumes at the checkpoint's step."),
        click.option("--max-restarts", type=click.IntRange(min=0), default=0, show_default=True, metavar="R",
                     help="With --cluster: replace a lost worker, restore the latest checkpoint on every task "
                          "and go on, at most R times."),
        click.option("--logdir", metavar="DIR",
                     help="Write TensorBoard event files: the graph and every step's summaries (extra `tensorboard`)."),
        click.option("--queue-runner", "queue_runners", multiple=True, metavar="OP[:THREADS]",
                     help="Run this enqueue op on THREADS threads (default 1) during the steps, as TensorFlow's "
                          "QueueRunner; the run ends cleanly when its queue is closed and drained."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def check_step_options(steps: int, checkpoint_dir, save_every, restore, max_restarts: int, cluster_spec) -> None:
    """Combinations that cannot work, refused before anything runs (exit 2)."""
    if save_every and not checkpoint_dir:
        raise UsageError("--save-every needs --checkpoint-dir", hint="name the directory checkpoints go to")
    if max_restarts and cluster_spec is None:
        raise UsageError("--max-restarts needs --cluster: only a cluster task can be lost and replaced")
    if restore == "latest" and not checkpoint_dir:
        raise UsageError("--restore latest: name the directory with --checkpoint-dir",
                         hint="or give --restore a checkpoint prefix or directory")


def default_log_every(steps: int) -> int:
    return max(1, steps // 10)


def describe_value(value) -> str:
    """A fetched value in a log line: the number for a scalar, dtype[shape] otherwise."""
    if value is None:
        return "dead"
    array = np.asarray(value) if not hasattr(value, "shape") else value
    if getattr(array, "ndim", 1) == 0 and getattr(array, "dtype", np.dtype(object)).kind in "biufc":
        return f"{array.item():.6g}" if array.dtype.kind in "fc" else str(array.item())
    return f"{getattr(array, 'dtype', type(value).__name__)}{list(getattr(array, 'shape', []))}"


class StepLog:
    """Log lines every `every` steps (and at the last), and a progress bar on a terminal."""

    def __init__(self, steps: int, every: int):
        self.steps, self.every = steps, every
        self._progress: Any = None     # a rich Progress on a terminal
        self._task: Any = None
        self._last_logged = time.perf_counter()

    def __enter__(self) -> "StepLog":
        if progress_enabled() and self.steps > 1:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._progress = Progress(TextColumn("step"), MofNCompleteColumn(), BarColumn(), TimeRemainingColumn(),
                                      console=err_console, transient=True)
            self._progress.start()
            self._task = self._progress.add_task("steps", total=self.steps)
        return self

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()

    def step(self, report) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=report.step)
        if self.steps == 1 or (report.step % self.every and report.step != report.steps):
            return
        shown = "  ".join(f"{name}={describe_value(value)}" for name, value in zip(report.fetches, report.values))
        info(f"step {report.step}/{report.steps}" + (f"  {shown}" if shown else "")
             + f"  ({report.seconds * 1e3:.1f} ms)")

    def event(self, text: str) -> None:
        info(text)


def stacked(outcome, count: int) -> list:
    """Each fetch's values over the steps this run ran, stacked along a new leading axis."""
    steps = sorted(step for step in outcome.values_by_step if step >= outcome.first_step)
    columns = []
    for k in range(count):
        values = [outcome.values_by_step[step][k] for step in steps]
        columns.append(None if any(v is None for v in values) else np.stack([np.asarray(v) for v in values]))
    return columns


def training_summary(outcome, event_log) -> dict:
    """The run report's `training` part (docs/schemas/run.schema.json)."""
    return {"first_step": outcome.first_step, "last_step": outcome.last_step, "steps_run": outcome.steps_run,
            "restored": outcome.restored, "checkpoints": list(outcome.saved),
            "restarts": [{"task": r.task, "failed_step": r.failed_step, "restored": r.restored,
                          "resumed_after": r.resumed_after, "steps_redone": r.steps_redone} for r in outcome.restarts],
            "input_exhausted": outcome.input_exhausted,
            **({"logdir": event_log.logdir} if event_log is not None else {})}


# --- TensorBoard, imported when a run asks for it (the `tensorboard` extra) ---------------------

def open_event_log(logdir: str, session):
    """(the summary tensors to fetch each step, an EventLog with the graph written)."""
    from graphtool.ir import to_graphdef
    from graphtool.summary.event_log import EventLog
    from graphtool.summary.find import find_summary_tensors

    log = EventLog(logdir)
    log.add_graph(to_graphdef(session.graph).SerializeToString())
    return find_summary_tensors(session.graph), log
