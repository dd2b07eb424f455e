"""The executor: runs a compiled Plan, one step per call, with TensorFlow v1 dynamic control flow.

Two ways to run a step, with the same results:
- a plan without loops, conds or transfers runs as a straight line (straight_line.py): nodes in
  an order fixed when the plan is compiled, values in a flat array at precomputed slots;
- any other plan (or a traced step, whose recorder hooks the per-node methods below) runs by
  dependency counting: every node waits on a count of inputs not yet arrived; at zero it is
  ready. Finishing a node delivers its outputs to its consumers' input slots and decrements
  their counts (frames.py: delivery, frames and iterations).

Either way, ready nodes run inline in the scheduling thread when cheap, or on a thread pool when
expensive (numpy releases the GIL in BLAS and big ufuncs, so independent heavy branches overlap):
`Step._wants_pool` decides, and every kernel call goes through `Step._compute`
(step.py holds the step itself).
"""
from __future__ import annotations

import sys

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import sequential_loop, straight_line, transfer
from .dead import DEAD
from .host_memory import keep_freed_memory
from .plan import TALKING_KINDS, Item, Plan
from .step import NumericsError, Step, StepStats
from .step_errors import StepTimeout
from .step_recorder import TracedStep
from .thread_budget import ThreadBudget, usable_cores

__all__ = ["DEAD", "Executor", "NumericsError", "StepStats", "StepTimeout"]

# Straight-line schedules kept per executor (one per set of fetches; a Session uses one).
_SCHEDULES_KEPT = 8


class Executor:
    """Runs a Plan once per call to run(); reusable across steps."""

    def __init__(self, plan: Plan, threads: int | None = None, check_numerics: bool = False,
                 targets: Sequence[Item] = ()):
        self.plan = plan
        self.targets = list(targets)
        self.threads = max(1, threads if threads is not None else usable_cores())
        # Heavy kernels share the threads with the BLAS library's own (thread_budget.py).
        self.budget = ThreadBudget(self.threads)
        keep_freed_memory()   # outputs reuse the last step's memory instead of fresh pages
        self.check_numerics = check_numerics
        self.last_stats = StepStats()   # the latest step's (concurrent steps: use run_step)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._has_transfers = any(item.kind in TALKING_KINDS for item in plan.items)
        # Loop-free plans run as a straight line: its order, and a slot layout per set of fetches.
        self._straight_order = straight_line.static_order(plan) if straight_line.applies(plan) else None
        self._schedules: dict[tuple, straight_line.Schedule] = {}
        # Simple while loops run iteration after iteration without dependency counting.
        sequential_loop.prepare(plan)
        # Devices with streams (GPUs) launch kernels through a stream runtime (streams.py).
        self.streams = plan.device.stream_runtime(plan)

    @property
    def device_names(self) -> list[str]:
        """The devices this executor runs on: one (a MultiDeviceExecutor has several)."""
        return [self.plan.device.name]

    def pool(self) -> ThreadPoolExecutor | None:
        """The worker threads, started on first use and kept for later steps."""
        if self.threads > 1 and self._pool is None:
            with self._pool_lock:   # concurrent first steps share one pool
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="dftool",
                                                    initializer=_quiet_numpy_warnings)
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __del__(self):
        pool = getattr(self, "_pool", None)
        # At interpreter exit the pool's module may already be torn down (its globals None), and
        # its threads are being joined anyway.
        if pool is not None and not sys.is_finalizing():
            pool.shutdown(wait=False, cancel_futures=True)

    def run(self, feeds: dict[Item, tuple], fetches: list[tuple[Item, int]], **options) -> list:
        """The fetched values of one step (run_step without its statistics)."""
        return self.run_step(feeds, fetches, **options)[0]

    def run_step(self, feeds: dict[Item, tuple], fetches: list[tuple[Item, int]], *,
                 timeout: float | None = None, resources=None, allow_dead: bool = False,
                 rendezvous=None, participant=None, stats=None) -> tuple[list, StepStats]:
        """Execute the plan; returns (fetched values, this step's StepStats). Several steps may
        run at once (from several threads): everything a step changes is its own. `feeds` maps
        FED items to their output tuples; the fetched values come in order (None for a dead
        fetch when `allow_dead`, else a dead fetch is an error). Raises RuntimeFailure naming the
        node on kernel errors, a timeout (StepTimeout), or a graph that cannot finish.
        `_Send`/`_Recv` nodes meet in `rendezvous` (shared with the other devices' executors of a
        multi-device step; `participant` names this one there); without one, a graph that sends
        to itself gets a private rendezvous. `stats` (a step_stats.StepStats) records every node
        execution and the memory in use; without it the step pays nothing for statistics."""
        step = Step(self, feeds, fetches, timeout, resources) if stats is None else \
            _traced_step(self, stats, feeds, fetches, timeout, resources)
        step.allow_dead = allow_dead
        if rendezvous is None and self._has_transfers:
            rendezvous = transfer.local_rendezvous(participant)
        step.rendezvous, step.participant = rendezvous, participant
        step.pool = self.pool()
        if stats is None and self._straight_order is not None:
            step.schedule = self._schedule(fetches)
        try:
            return step.run(), step.stats
        finally:
            if self.streams is not None:   # the step's device work is done before results leave
                self.streams.finish_step()
            step.stats.nodes_executed = step.nodes_executed
            self.last_stats = step.stats


    def _schedule(self, fetches: list[tuple[Item, int]]) -> "straight_line.Schedule":
        key = tuple((item.id, port) for item, port in fetches)
        schedule = self._schedules.get(key)
        if schedule is None:   # concurrent steps may both build it: the same, either is fine
            assert self._straight_order is not None   # run_step asks only for straight-line plans
            if len(self._schedules) >= _SCHEDULES_KEPT:
                self._schedules.clear()
            schedule = self._schedules[key] = straight_line.compile_schedule(self.plan, self._straight_order, fetches)
        return schedule


def _traced_step(executor: Executor, stats, *args) -> Step:
    """A step that records into `stats` (step_recorder.py)."""
    step = TracedStep(executor, *args)
    step.start_recording(stats)
    return step


def _quiet_numpy_warnings() -> None:
    np.seterr(all="ignore")


