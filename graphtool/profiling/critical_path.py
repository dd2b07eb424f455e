"""The critical path of a step: the longest chain of dependent node executions.

Computed from step statistics alone (step_stats.py), so it works on any recorded step, on every
device, and on statistics a test writes by hand. Each execution depends on one execution per
input (data and control edges):

- the producer's execution in the same frame instance and iteration, when there is one that
  ended before this execution started (the ordinary case inside a loop body and in the root);
- otherwise the producer's latest execution that ended before this one started: what reaches a
  Merge from the previous iteration's NextIteration, an Exit's value in the parent frame, a loop
  constant from its Enter;
- for a _Recv, also the _Send whose value it received (through the rendezvous, on another device,
  possibly in another task's process: a cluster's workers' times are on the master's clock).

A node's contribution to a chain is the time from when its predecessor ended (or it started, if
later) to its own end: a _Recv that waited for its value counts only after the value was sent
(and never from before its _Send began, even where it starts a chain), so the chain never counts
one moment twice and its length is at most the step's wall time. The
critical path is the chain with the largest total, ending wherever it ends; where two inputs give
the same total, the one whose producer finished last wins. It bounds the step from below: with
unlimited threads, the step could not finish faster.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from ..exec.step_stats import NodeExecution, StepStats, transfer_pairs


@dataclass
class PathStep:
    """One execution on the critical path and the time it adds to the chain."""

    execution: NodeExecution
    contribution_ns: int


@dataclass
class CriticalPath:
    steps: list[PathStep]
    wall_ns: int

    @property
    def length_ns(self) -> int:
        """The chain's summed contributions."""
        return sum(step.contribution_ns for step in self.steps)

    @property
    def names(self) -> list[str]:
        return [step.execution.name for step in self.steps]

    @property
    def fraction_of_step(self) -> float:
        """length / wall time: near 1, the step is as fast as its dependencies allow."""
        return self.length_ns / self.wall_ns if self.wall_ns else 0.0


def critical_path(stats: StepStats) -> CriticalPath:
    """The critical path of the step recorded in `stats` (empty for a step that ran nothing)."""
    order = _topological(stats)
    feeders = _Feeders(stats)
    best: dict[int, tuple[int, NodeExecution | None]] = {}   # id(execution) -> (chain length, predecessor)
    for execution in order:
        chosen: tuple[int, int, NodeExecution | None] = (_own_time(execution, feeders.sender(execution)), -1, None)
        for producer in feeders.of(execution):
            if id(producer) not in best:
                continue
            added = execution.end_ns - max(execution.start_ns, producer.end_ns)
            candidate = (best[id(producer)][0] + max(0, added), producer.end_ns, producer)
            if candidate[:2] > chosen[:2]:
                chosen = candidate
        best[id(execution)] = (chosen[0], chosen[2])
    if not order:
        return CriticalPath([], stats.wall_ns)
    last = max(order, key=lambda e: (best[id(e)][0], e.end_ns))
    return CriticalPath(_walk_back(last, best), stats.wall_ns)


def _own_time(execution: NodeExecution, sender: NodeExecution | None) -> int:
    """What an execution counts when it starts a chain: its duration, except that a _Recv's
    wait before its value was even being sent is not its own (on a cluster, a task can start
    waiting before the sending task has begun the step): through its _Send, the chain that
    produced the value counts that time."""
    if sender is None:
        return execution.duration_ns
    return max(0, execution.end_ns - max(execution.start_ns, sender.start_ns))


def _topological(stats: StepStats) -> list[NodeExecution]:
    """Executions in an order where every producer comes before its consumers: a producer ends
    before its consumer ends; ties (zero-length nodes) keep each device's recording order, which
    is the order the executor finished them."""
    keyed = [((execution.end_ns, execution.start_ns, position), execution)
             for device in stats.devices.values() for position, execution in enumerate(device.nodes)]
    keyed.sort(key=lambda pair: pair[0])
    return [execution for _, execution in keyed]


def _walk_back(last: NodeExecution, best: dict) -> list[PathStep]:
    chain = []
    execution: NodeExecution | None = last
    while execution is not None:
        predecessor = best[id(execution)][1]
        start = execution.start_ns if predecessor is None else max(execution.start_ns, predecessor.end_ns)
        chain.append(PathStep(execution, max(0, execution.end_ns - start)))
        execution = predecessor
    chain.reverse()
    return chain


class _Feeders:
    """Which executions fed which: per input, the producer's matching execution."""

    def __init__(self, stats: StepStats):
        self._in_context: dict[tuple, NodeExecution] = {}
        self._by_node: dict[tuple, tuple[list[int], list[NodeExecution]]] = {}
        runs: dict[tuple, list[NodeExecution]] = {}
        for device in stats.devices.values():
            for execution in device.nodes:
                key = (execution.device, execution.name)
                self._in_context[key + (execution.frame_id, execution.iteration)] = execution
                runs.setdefault(key, []).append(execution)
        for key, executions in runs.items():
            executions.sort(key=lambda e: e.end_ns)
            self._by_node[key] = ([e.end_ns for e in executions], executions)
        self._sender = {id(recv): send for send, recv in transfer_pairs(stats)}

    def of(self, execution: NodeExecution) -> list[NodeExecution]:
        found = []
        for name in execution.input_node_names():
            producer = self._producer(execution, name)
            if producer is not None:
                found.append(producer)
        sender = self._sender.get(id(execution))
        if sender is not None:
            found.append(sender)
        return found

    def sender(self, execution: NodeExecution) -> NodeExecution | None:
        """The _Send whose value a _Recv execution received (None for any other execution)."""
        return self._sender.get(id(execution))

    def _producer(self, execution: NodeExecution, name: str) -> NodeExecution | None:
        same = self._in_context.get((execution.device, name, execution.frame_id, execution.iteration))
        if same is not None and same.end_ns <= execution.start_ns:
            return same
        ends, executions = self._by_node.get((execution.device, name), ((), ()))
        index = bisect_right(ends, execution.start_ns)
        return executions[index - 1] if index else None
