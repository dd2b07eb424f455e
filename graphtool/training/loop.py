"""StepLoop: N steps of one session, as a TensorFlow 1.x training script runs them.

    plan = StepPlan(steps=50, inits=["init"], targets=["train"], fetches=["loss:0"], feeds=feeds)
    outcome = StepLoop(session, plan).run()
    outcome.values_by_step[50]      # the fetches of step 50 (a list, in plan.fetches' order)

Each step is one `session.run(fetches, feeds, targets=targets)`: the fetches are computed in the
same run as the targets, as `sess.run([train_op, loss])` computes the loss the update used.
Around the steps:
- initializers run once before the first step (not when a checkpoint is restored instead);
- `checkpoints` saves every `save_every` steps and after the last one, and restores before the
  first step (`restore`): the run then resumes at the step the checkpoint was saved at and goes on
  to `steps`;
- `summary_tensors` (the graph's unmerged summaries) are fetched with every step and written to
  `event_log` with the step number, and so are the real-valued scalar fetches (tag: the fetch
  name without ':0'), so the loss a run logs is a curve in TensorBoard whatever the graph holds;
- queue runners (enqueue ops on their own threads) start after the initializers and stop at the
  end, also on failure; a step failing with OutOfRangeError (a dequeue from a closed, drained
  queue) ends the run cleanly: the input is exhausted, as tf.train.MonitoredSession ends;
- on a cluster, a step failing with TaskLost is retried up to `max_restarts` times: the lost
  worker is replaced (the cluster does it before the next step), every task restores the latest
  checkpoint (or runs the initializers again when none was saved yet), and the steps since that
  checkpoint are run again.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import OutOfRangeError, RuntimeFailure, TaskLost
from .checkpoints import Checkpointing, step_of
from .step_feeds import feeds_for_step


@dataclass
class StepPlan:
    steps: int
    fetches: Sequence[str] = ()
    targets: Sequence[str] = ()
    inits: Sequence[str] = ()
    feeds: Mapping[str, np.ndarray] = field(default_factory=dict)
    feeds_per_step: Mapping[str, np.ndarray] = field(default_factory=dict)
    timeout: float | None = None
    allow_dead: bool = False
    restore: str | None = None          # a checkpoint prefix (Checkpointing.resolve made it one)
    max_restarts: int = 0
    trace_last: bool = False            # trace the last step (its step stats come back)


@dataclass
class Restart:
    """One recovery from a lost task."""

    task: str
    why: str
    failed_step: int
    restored: str | None        # the checkpoint restored, None: initializers again
    resumed_after: int          # the step the restored state belongs to

    @property
    def steps_redone(self) -> int:
        return self.failed_step - 1 - self.resumed_after


@dataclass
class LoopOutcome:
    values_by_step: dict[int, list] = field(default_factory=dict)
    first_step: int = 1
    last_step: int = 0
    input_exhausted: str | None = None     # the OutOfRange message that ended the run early
    restored: str | None = None
    restarts: list[Restart] = field(default_factory=list)
    saved: list[str] = field(default_factory=list)
    last_result: object = None              # the RunResult of the last step
    seconds: float = 0.0

    @property
    def steps_run(self) -> int:
        return self.last_step - self.first_step + 1


@dataclass
class StepReport:
    """What the loop tells its caller after every step (for logs and progress)."""

    step: int
    steps: int
    fetches: Sequence[str]
    values: list
    seconds: float


class StepLoop:
    def __init__(self, session, plan: StepPlan, *, checkpoints: Checkpointing | None = None,
                 summary_tensors: Sequence[str] = (), event_log=None, queue_runners: Sequence = (),
                 on_step: Callable[[StepReport], None] | None = None,
                 on_event: Callable[[str], None] | None = None):
        if plan.restore is not None and checkpoints is None:
            raise ValueError("restoring needs the Saver nodes (a Checkpointing)")
        self.session, self.plan = session, plan
        self.checkpoints = checkpoints
        self.summary_tensors, self.event_log = list(summary_tensors), event_log
        self.queue_runners = list(queue_runners)
        self.on_step = on_step or (lambda report: None)
        self.on_event = on_event or (lambda text: None)
        self._fetches = list(plan.fetches) + self.summary_tensors

    # --- the run --------------------------------------------------------------------------------
    def run(self) -> LoopOutcome:
        outcome = LoopOutcome()
        started = time.perf_counter()
        try:
            done = self._begin(outcome)
            outcome.first_step = done + 1
            restarts_left = self.plan.max_restarts
            step = done
            while step < self.plan.steps:
                try:
                    self._step(step + 1, outcome)
                except OutOfRangeError as exc:
                    outcome.input_exhausted = str(exc)
                    self.on_event(f"input exhausted after step {step}: {exc}")
                    break
                except TaskLost as exc:
                    if restarts_left <= 0:
                        if self.plan.max_restarts:
                            raise TaskLost(f"{exc} (after {len(outcome.restarts)} restart(s), the most "
                                           f"--max-restarts allows)", task=exc.task) from None
                        raise
                    restarts_left -= 1
                    step = self._recover(exc, step + 1, outcome)
                    continue
                step += 1
            outcome.last_step = step
            if self.checkpoints is not None and self.checkpoints.directory and step > 0 \
                    and not (outcome.saved and step_of(outcome.saved[-1]) == step):
                outcome.saved.append(self._save(step))
        finally:
            self._stop_queue_runners()
            if self.event_log is not None:
                self.event_log.close()
        outcome.seconds = time.perf_counter() - started
        return outcome

    def _begin(self, outcome: LoopOutcome) -> int:
        """Initializers or a restore, then the queue runners; returns the steps already done."""
        done = 0
        if self.plan.restore is not None:
            assert self.checkpoints is not None
            self.checkpoints.restore(self.plan.restore)
            outcome.restored = self.plan.restore
            done = min(step_of(self.plan.restore) or 0, self.plan.steps)
            self.on_event(f"restored {self.plan.restore}" + (f" (step {done})" if done else ""))
        elif self.plan.inits:
            self.session.run([], dict(self.plan.feeds), timeout=self.plan.timeout, targets=list(self.plan.inits))
        for runner in self.queue_runners:
            runner.start()
        return done

    def _step(self, step: int, outcome: LoopOutcome) -> None:
        feeds = feeds_for_step(self.plan.feeds, self.plan.feeds_per_step, step)
        began = time.perf_counter()
        result = self.session.run(self._fetches, feeds, timeout=self.plan.timeout, targets=list(self.plan.targets),
                                  allow_dead=self.plan.allow_dead,
                                  trace=self.plan.trace_last and step == self.plan.steps)
        seconds = time.perf_counter() - began
        values = list(result.values)
        summaries = values[len(self.plan.fetches):]
        del values[len(self.plan.fetches):]
        if self.event_log is not None:
            for name, summary in zip(self.summary_tensors, summaries):
                if summary is not None:
                    self.event_log.add_summary(_summary_bytes(summary), step, source=name)
            scalars = scalar_summary(self.plan.fetches, values)
            if scalars is not None:
                self.event_log.add_summary(scalars, step)
        if self.event_log is not None and self.plan.trace_last and step == self.plan.steps:
            self._add_run_metadata(result, step)
        outcome.values_by_step[step] = values
        outcome.last_result = result
        self._check_queue_runners()
        self.on_step(StepReport(step, self.plan.steps, self.plan.fetches, values, seconds))
        if self.checkpoints is not None and self.checkpoints.due(step):
            outcome.saved.append(self._save(step))

    def _add_run_metadata(self, result, step: int) -> None:
        """The traced step's node statistics, for TensorBoard's per-step graph view."""
        from ..profiling.run_metadata import run_metadata_bytes

        if result.step_stats is not None:
            self.event_log.add_run_metadata(run_metadata_bytes(result.step_stats), f"step_{step}", step)

    def _save(self, step: int) -> str:
        assert self.checkpoints is not None
        prefix = self.checkpoints.save(step)
        self.on_event(f"saved {prefix}")
        return prefix

    # --- recovery -------------------------------------------------------------------------------
    def _recover(self, lost: TaskLost, failed_step: int, outcome: LoopOutcome) -> int:
        """Restore every task's state after `lost`; returns the step that state belongs to."""
        self._stop_queue_runners()
        latest = outcome.saved[-1] if outcome.saved else outcome.restored
        if latest is not None:
            assert self.checkpoints is not None
            self.checkpoints.restore(latest)
            resumed = step_of(latest) or 0
        else:
            if self.plan.inits:
                self.session.run([], dict(self.plan.feeds), timeout=self.plan.timeout, targets=list(self.plan.inits))
            resumed = 0
        restart = Restart(lost.task, " ".join(str(lost).split()), failed_step, latest, resumed)
        outcome.restarts.append(restart)
        for runner in self.queue_runners:
            runner.start()
        self.on_event(f"task {lost.task} was lost at step {failed_step}: {restart.why}")
        self.on_event(f"restarted task {lost.task}{self._process_of(lost.task)}; "
                      + (f"every task restored {latest} (step {resumed})" if latest else "ran the initializers again")
                      + f"; redoing {restart.steps_redone} step(s)")
        return resumed

    def _process_of(self, task: str) -> str:
        """' (now pid N)' for a cluster task whose replacement is running, else ''."""
        cluster = getattr(self.session, "cluster", None)
        for info in getattr(cluster, "tasks", None) or ():
            if info.task.short_name == task:
                return f" (now pid {info.pid})"
        return ""

    # --- queue runners --------------------------------------------------------------------------
    def _check_queue_runners(self) -> None:
        for runner in self.queue_runners:
            error = runner.error()
            if error is not None:
                raise RuntimeFailure(f"queue runner for '{runner.name}' failed: {error}") from None

    def _stop_queue_runners(self) -> None:
        for runner in self.queue_runners:
            runner.stop()


def scalar_summary(names: Sequence[str], values: Sequence) -> bytes | None:
    """A serialized Summary of the real-valued scalars among `values` (tag: the fetch name
    without ':0'), None when there are none."""
    from ..proto.summary_pb2 import Summary

    summary = Summary()
    for name, value in zip(names, values):
        if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "biuf":
            summary.value.add(tag=name[:-2] if name.endswith(":0") else name, simple_value=float(value))
    return summary.SerializeToString() if summary.value else None


def _summary_bytes(value) -> bytes:
    """A fetched summary (a string scalar) as the serialized Summary proto."""
    item = value.item() if isinstance(value, np.ndarray) else value
    return item if isinstance(item, bytes) else bytes(item)
