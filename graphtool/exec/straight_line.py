"""Running a loop-free plan in a precomputed order, without dependency counting.

A plan whose only frame is the root and whose nodes are all ordinary kernels, fed values or
ControlTriggers (no Switch/Merge, no loops, no _Send/_Recv) can never produce a dead value, and
every node runs exactly once: the order can be fixed when the plan is compiled. The step then
walks a list: each node reads its inputs from a flat per-step value array at precomputed slot
numbers, runs, and writes its outputs to its own slots. No pending counts, no ready queue, no
per-edge delivery.

Values are released after their last consumer, as in the counting executor: a slot is free once
its last reader has taken it, and is reused by the next output that needs a slot (overwriting
the value drops it); a freed slot that is not reused at once is cleared explicitly. Fetched
values keep their slots to the end of the step, so a schedule is made per set of fetches (a
Session compiles one executor per fetch signature, so one is usually all it takes).

Inter-op parallelism survives: the order is a topological order that starts independent
expensive kernels before anything that needs their results (nodes are ordered by how many
expensive kernels lie before them on a path, then by the plan's order), and a node that is
worth a thread (the step's `_wants_pool`, as in the counting executor) goes to the pool when
another node could run beside it: one independent of it is ready in the static order, or a
kernel is already on the pool. Its output slots then hold a `_Pending` marker, and a consumer
waits for the value only when it comes to need it, processing completions in arrival order.
"""
from __future__ import annotations

import heapq
import queue
import time
from operator import itemgetter

from ..errors import RuntimeFailure
from .plan import BIG_INPUT, CONTROL_TRIGGER, FED, NORMAL, Plan, call_kernel

_NO_SLOT = -1


def applies(plan: Plan) -> bool:
    """Whether `plan` can run as a straight line: one frame, and no node that can make a value
    dead or wait on another device."""
    return len(plan.frames) == 1 and all(item.kind in (NORMAL, FED, CONTROL_TRIGGER) for item in plan.items)


class Schedule:
    """The static order of one plan for one set of fetches. `entries` holds one tuple per node:
    (item, kind, input count, its single input's slot, an itemgetter of its input slots, its
    single output's slot, (port, slot) pairs of a multi-output node, slots to clear, whether
    another node is ready beside it)."""

    __slots__ = ("entries", "num_slots", "fetch_slots", "outputs_of")

    def __init__(self, entries, num_slots, fetch_slots, outputs_of):
        self.entries = entries
        self.num_slots = num_slots
        self.fetch_slots = fetch_slots   # the value slot of each fetch, in fetch order
        self.outputs_of = outputs_of     # item id -> ((port, slot), ...) for kernels on the pool


def static_order(plan: Plan) -> list[tuple[object, bool]]:
    """(item, another node is ready beside it) in a topological order that runs nodes after as
    few expensive kernels as their dependencies allow: independent expensive kernels all start
    before the first node that needs one of their results."""
    items = plan.root.items
    waiting = [item.num_inputs + item.num_control_inputs for item in items]
    stage = [0] * len(items)
    heap = [(0, item.local) for item in items if waiting[item.local] == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        _, local = heapq.heappop(heap)
        item = items[local]
        order.append((item, bool(heap)))
        after = stage[local] + (1 if item.expensive else 0)
        consumers = [dst for edges in item.out_edges for dst, _ in edges] + item.control_out
        for dst in consumers:
            if stage[dst.local] < after:
                stage[dst.local] = after
            waiting[dst.local] -= 1
            if waiting[dst.local] == 0:
                heapq.heappush(heap, (stage[dst.local], dst.local))
    if len(order) != len(items):
        raise RuntimeFailure("the graph has a cycle outside any while loop; it cannot be scheduled")
    return order


def compile_schedule(plan: Plan, order: list, fetches: list[tuple[object, int]]) -> Schedule:
    """The slot layout of `order` when `fetches` ((item, port) pairs) must survive the step."""
    fetched = {(item.id, port) for item, port in fetches}
    uses = {}
    for item, _ in order:
        for port, edges in enumerate(item.out_edges):
            if edges or (item.id, port) in fetched:
                uses[item.id, port] = len(edges)
    slot_of: dict[tuple[int, int], int] = {}
    free: list[int] = []
    num_slots = 0
    entries = []
    outputs_of = {}
    for item, overlaps in order:
        keys = _input_keys(item, plan.item_of)
        in_slots = tuple(slot_of[key] for key in keys)
        freed = []
        for key in keys:
            uses[key] -= 1
            if uses[key] == 0 and key not in fetched:
                freed.append(slot_of[key])
        out_pairs = []
        for port in range(item.num_outputs):
            if (item.id, port) not in uses:
                continue   # nobody reads it: not stored
            if freed:
                slot = freed.pop()   # overwriting a dead value releases it
            elif free:
                slot = free.pop()
            else:
                slot, num_slots = num_slots, num_slots + 1
            slot_of[item.id, port] = slot
            out_pairs.append((port, slot))
        free.extend(freed)
        out_pairs = tuple(out_pairs)
        single_out = out_pairs[0][1] if item.num_outputs == 1 and out_pairs else _NO_SLOT
        count = len(in_slots)
        entries.append((item, item.kind, count, in_slots[0] if count == 1 else _NO_SLOT,
                        itemgetter(*in_slots) if count > 1 else None, single_out,
                        out_pairs if single_out == _NO_SLOT and out_pairs else (), tuple(freed), overlaps))
        outputs_of[item.id] = out_pairs
    fetch_slots = [slot_of[item.id, port] for item, port in fetches]
    return Schedule(entries, num_slots, fetch_slots, outputs_of)


def _input_keys(item, item_of) -> list[tuple[int, int]]:
    """(producer item id, port) of each data input, in input order."""
    if item.kind == FED:
        return []
    return [(item_of[ref.node.name].id, ref.index) for ref in item.node.inputs]


class _Pending:
    """What a value slot holds while the kernel making the value runs on the pool."""

    __slots__ = ("tagged",)

    def __init__(self, tagged):
        self.tagged = tagged


def run(step, schedule: Schedule) -> list | None:
    """Run `step` (an executor _Step) along `schedule`; the fetched values, or None when the step
    failed (step.error is set, kernels may still be on the pool: the caller drains them)."""
    values = [None] * schedule.num_slots
    compute = step._compute
    direct = step.streams is None and not step.check_numerics
    feeds, pool, root = step.feeds, step.pool, step.root_frame()
    deadline, clock = step.deadline, time.monotonic
    executed = 0
    item = None
    for entry in schedule.entries:
        if deadline is not None and clock() > deadline:   # `item` is still the one run last
            step.last = None if item is None else (item, root, 0)
            step.nodes_executed += executed
            step._check_deadline()
            return None
        item, kind, count, single_in, getter, single_out, out_pairs, freed, overlaps = entry
        if kind == NORMAL:
            if count == 1:
                inputs = (values[single_in],)
            elif count:
                inputs = getter(values)
            else:
                inputs = ()
            if step.in_flight and any(type(value) is _Pending for value in inputs):
                # A value is still being computed on the pool: wait for it (a timeout meanwhile
                # names the kernels still running).
                step.nodes_executed += executed
                executed, step.last = 0, None
                while any(type(value) is _Pending for value in inputs):
                    if not _complete_one(step, values, schedule.outputs_of):
                        return None
                    inputs = (values[single_in],) if count == 1 else getter(values)
            for slot in freed:
                values[slot] = None
            # (_wants_pool's test, inline: a method call is a good share of a tiny node's time)
            if pool is not None and (overlaps or step.in_flight) and (
                    item.expensive or (count and getattr(inputs[0], "size", 0) >= BIG_INPUT)):
                tagged = (item, root, 0)
                marker = _Pending(tagged)
                for _, slot in schedule.outputs_of[item.id]:
                    values[slot] = marker
                step._submit(pool, tagged, inputs, step.in_flight + 1 + overlaps)
                continue
            try:
                if item.expensive:
                    outputs = step._compute_alone(item, inputs)
                elif direct:   # what _compute does without streams or a numerics check
                    outputs = call_kernel(item, inputs)
                else:
                    outputs = compute(item, inputs)
            except BaseException as exc:
                step.last = (item, root, 0)
                step.nodes_executed += executed
                step.error = step._kernel_error(item, inputs, exc)
                return None
        elif kind == FED:
            outputs = feeds[item]
        else:   # ControlTrigger
            outputs = ()
        executed += 1
        if single_out != _NO_SLOT:
            values[single_out] = outputs[0]
        else:
            for port, slot in out_pairs:
                values[slot] = outputs[port]
    step.nodes_executed += executed
    while step.in_flight:   # kernels still on the pool (fetched values among them)
        if not _complete_one(step, values, schedule.outputs_of):
            return None
    return [values[slot] for slot in schedule.fetch_slots]


def _complete_one(step, values: list, outputs_of: dict) -> bool:
    """Take the next kernel that finished on the pool and store its outputs; False when it (or
    the deadline) failed the step."""
    while True:
        try:
            tagged, outputs, error = step.completions.get(timeout=0.05)
            break
        except queue.Empty:
            step._check_deadline()
            if step.error is not None:
                return False
    step.in_flight -= 1
    step.running.pop(id(tagged), None)
    if error is not None:
        if step.error is None:
            step.error = error
        return False
    step.nodes_executed += 1
    for port, slot in outputs_of[tagged[0].id]:
        values[slot] = outputs[port]
    return True
