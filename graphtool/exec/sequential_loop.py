"""Running a simple while loop one iteration after another, along a precomputed order.

The counting executor pays for every node of every iteration: a ready-queue entry, pending counts,
delivery into per-iteration slots, iteration bookkeeping, and a dead value for every node the
last iteration does not take. A loop whose body has no control flow of its own can instead run as
TensorFlow runs it with parallel_iterations=1, which is always a valid schedule: once every Enter
of a frame instance has its value, the scheduling thread runs the loop to its end,

    every iteration: the cond part (the Merges' values ... LoopCond), then, while the predicate is
    true, the body part (Switch:1 ... NextIteration), whose values are the next iteration's Merge
    values; when it is false, the Exits take the Switches' data and the loop is done.

Only kernels cost anything: Merge, Switch, LoopCond and NextIteration move no data (their
consumers read their producer's value slot), nor do Identity and Const where the counting loop
takes its shortcut. The frame's results leave through its Exits as the counting executor delivers
them, and the step's counts (nodes executed, iterations per frame) come out the same.

A loop qualifies (analyse) when its frame holds no nested loop, Send/Recv or fed node, one LoopCond
that every Switch tests, Merges fed by one Enter and one NextIteration, Exits fed by
Switch:0, and nothing else reading a Switch's false side; and when no path leads from its Exits
back to its own Enters (waiting for all Enters would then deadlock). At run time a dead Enter
value (a loop on an untaken cond branch) or a traced step (a recorder times every node) takes the
counting way.

Heavy kernels in the body (an RNN cell's products) run one at a time with every thread (as a lone
heavy kernel does in the counting executor); the loop gives up overlapping independent kernels of
one iteration, or of neighbouring iterations, which on the RNN fixtures costs less than the
bookkeeping it saves (measured interleaved: TF1 dynamic_rnn LSTM 3.5 -> 2.9 ms, its gradient
22.9 -> 19.7 ms, Keras LSTM and GRU the same within noise).
"""
from __future__ import annotations

import time
from operator import itemgetter

from ..errors import RuntimeFailure
from .plan import (ASYNC, CONTROL_TRIGGER, ENTER, EXIT, FED, FIXED, FORWARDS, LOOP_COND, MERGE, NEXT_ITERATION,
                   RECV, SEND, SWITCH, COLLECTIVE, FrameTemplate, Item, Plan, call_kernel)

# Which part of an iteration a node belongs to.
_COND, _BODY, _FALSE = 0, 1, 2
_NO_SLOT = -1


def prepare(plan: Plan) -> None:
    """Decide once per plan which of its loops run sequentially (FrameTemplate.sequential, and
    FrameTemplate.sequential_reason: why not, "" when it does)."""
    enters: dict[str, list[Item]] = {}
    for item in plan.items:
        if item.kind == ENTER:
            assert item.child_frame is not None   # the plan gives every Enter the frame it enters
            enters.setdefault(item.child_frame.name, []).append(item)
    for template in plan.frames.values():
        if template.parent is not None and template.sequential_reason is None:
            loop = analyse(plan, template, enters.get(template.name, []))
            if isinstance(loop, str):
                template.sequential, template.sequential_reason = None, loop
            else:
                template.sequential, template.sequential_reason = loop, ""


class SequentialLoop:
    """What a qualifying loop frame runs: its parts in order, and how values flow between them."""

    __slots__ = ("template", "merges", "enter_of", "next_of", "switches", "loop_cond", "exits",
                 "order", "side", "item_ids", "_programs")

    def __init__(self, template, merges, enter_of, next_of, switches, loop_cond, exits, order, side):
        self.template = template
        self.merges: list[Item] = merges
        self.enter_of: dict[Item, Item] = enter_of   # Merge -> the Enter feeding it
        self.next_of: dict[Item, Item] = next_of     # Merge -> the NextIteration feeding it
        self.switches: list[Item] = switches
        self.loop_cond: Item = loop_cond
        self.exits: list[Item] = exits
        self.order: list[Item] = order               # the frame's nodes, Merges first, topologically
        self.side: dict[Item, int] = side
        self.item_ids = [item.id for item in template.items]
        self._programs: dict[bool, _Program] = {}

    def program(self, shortcuts: bool, item_of: dict) -> "_Program":
        program = self._programs.get(shortcuts)
        if program is None:   # concurrent steps may both build it: the same, either is fine
            program = self._programs[shortcuts] = _Program(self, shortcuts, item_of)
        return program


class _Program:
    """The slot layout and kernel entries of one SequentialLoop (with or without the Identity/Const
    shortcut). An entry is (item, input count, its single input's slot, an itemgetter of its input
    slots, its single output's slot, (port, slot) pairs of a multi-output kernel)."""

    def __init__(self, loop: SequentialLoop, shortcuts: bool, item_of: dict):
        slot_of: dict[tuple[int, int], int] = {}
        self.num_slots = 0

        def new_slot() -> int:
            self.num_slots += 1
            return self.num_slots - 1

        self.fixed: list[tuple[int, object]] = []      # (slot, value) set once per run (Consts)
        self.invariants: list[tuple[int, Item]] = []   # (slot, constant Enter)
        self.merge_slots = []
        self.index_slots = []                          # (slot, index value at iteration 0, later)
        for merge in loop.merges:
            slot_of[merge.id, 0] = slot = new_slot()
            self.merge_slots.append(slot)
            if len(merge.out_edges) > 1 and merge.out_edges[1]:   # someone reads value_index
                slot_of[merge.id, 1] = index_slot = new_slot()
                self.index_slots.append((index_slot, merge.value_indices[_input_position(merge, loop.enter_of[merge])],
                                         merge.value_indices[_input_position(merge, loop.next_of[merge])]))
        self.merge_enters = [loop.enter_of[merge] for merge in loop.merges]
        self.cond: list[tuple] = []   # (item, count, single_in, getter, single_out, out_pairs, heavy)
        self.body: list[tuple] = []
        self.exits: list[tuple[Item, int]] = []
        for item in loop.order:
            kind = item.kind
            if kind == MERGE:
                continue
            inputs = [item_of[ref.node.name] for ref in item.node.inputs]
            ports = [ref.index for ref in item.node.inputs]
            for producer in inputs:
                if producer.kind == ENTER and (producer.id, 0) not in slot_of:   # a loop constant
                    slot_of[producer.id, 0] = slot = new_slot()
                    self.invariants.append((slot, producer))
            in_slots = [slot_of[producer.id, port] for producer, port in zip(inputs, ports)]
            if kind == LOOP_COND or kind == NEXT_ITERATION:
                slot_of[item.id, 0] = in_slots[0]
            elif kind == SWITCH:
                slot_of[item.id, 0] = slot_of[item.id, 1] = in_slots[0]
            elif kind == EXIT:
                self.exits.append((item, in_slots[0]))
            elif shortcuts and item.shortcut == FORWARDS:
                slot_of[item.id, 0] = in_slots[0]
            elif shortcuts and item.shortcut == FIXED:
                slot_of[item.id, 0] = slot = new_slot()
                self.fixed.append((slot, item.fixed_outputs[0]))
            else:   # a kernel
                out_pairs = []
                for port, edges in enumerate(item.out_edges):
                    if edges:
                        slot_of[item.id, port] = slot = new_slot()
                        out_pairs.append((port, slot))
                single_out = out_pairs[0][1] if item.num_outputs == 1 and out_pairs else _NO_SLOT
                count = len(in_slots)
                entry = (item, count, in_slots[0] if count == 1 else _NO_SLOT,
                         itemgetter(*in_slots) if count > 1 else None, single_out,
                         tuple(out_pairs) if single_out == _NO_SLOT else (), item.expensive)
                (self.body if loop.side[item] == _BODY else self.cond).append(entry)
        self.pred_slot = slot_of[loop.loop_cond.id, 0]
        self.next_slots = [slot_of[loop.next_of[merge].id, 0] for merge in loop.merges]
        self.body_ids = [item.id for item in loop.order if loop.side[item] == _BODY]
        self.always_ids = [item.id for item in loop.order if loop.side[item] != _BODY]


def _input_position(merge: Item, producer: Item) -> int:
    return next(k for k, ref in enumerate(merge.node.inputs) if ref.node is producer.node)


# --- which loops qualify ---------------------------------------------------------------------------
def analyse(plan: Plan, template: FrameTemplate, enters: list[Item]) -> "SequentialLoop | str":
    """The SequentialLoop of `template` (whose Enters are `enters`), or why it does not qualify."""
    item_of = plan.item_of
    members = set(template.items)
    loop_conds = [item for item in template.items if item.kind == LOOP_COND]
    if len(loop_conds) != 1:
        return f"{len(loop_conds)} LoopCond nodes"
    loop_cond = loop_conds[0]
    for item in template.items:
        if item.kind in (ENTER, SEND, RECV, ASYNC, COLLECTIVE, FED, CONTROL_TRIGGER):
            return f"node '{item.name}' ({item.node.op}) in the loop"
    enter_of, next_of = {}, {}
    for item in template.items:
        if item.kind != MERGE:
            continue
        producers = [item_of[ref.node.name] for ref in item.node.inputs]
        kinds = sorted(p.kind for p in producers)
        if len(producers) != 2 or kinds != sorted((ENTER, NEXT_ITERATION)) or item.num_control_inputs:
            return f"Merge '{item.name}' is not fed by one Enter and one NextIteration (a cond inside the loop)"
        for producer in producers:
            if producer.kind == ENTER:
                if producer.child_frame is not template or producer.is_constant:
                    return f"Merge '{item.name}' takes a loop constant"
                enter_of[item] = producer
            else:
                if producer not in members:
                    return f"Merge '{item.name}' takes another frame's NextIteration"
                next_of[item] = producer
    for enter in enters:
        if not enter.is_constant and (enter.control_out or any(
                dst.kind != MERGE or dst.frame is not template for edges in enter.out_edges for dst, _ in edges)):
            return f"Enter '{enter.name}' feeds something other than the loop's Merges"

    # The frame's nodes in topological order (Merges first: their NextIteration input is the back
    # edge), and the part of an iteration each belongs to.
    waiting: dict[Item, int] = {}
    consumers: dict[Item, list[Item]] = {item: [] for item in template.items}
    for item in template.items:
        if item.kind == MERGE:
            waiting[item] = 0
            continue
        count = 0
        for producer in [item_of[ref.node.name] for ref in item.node.inputs] + \
                [item_of[c.name] for c in item.node.control_inputs]:
            if producer in members:
                consumers[producer].append(item)
                count += 1
            elif not (producer.kind == ENTER and producer.child_frame is template and producer.is_constant):
                return f"node '{item.name}' reads '{producer.name}' from outside the loop"
        waiting[item] = count
    order = [item for item in template.items if waiting[item] == 0]
    for item in order:   # (grows while walked)
        for consumer in consumers[item]:
            waiting[consumer] -= 1
            if waiting[consumer] == 0:
                order.append(consumer)
    if len(order) != len(template.items):
        return "a cycle inside the loop body"
    side: dict[Item, int] = {}
    switches, exits = [], []
    for item in order:
        if item.kind == MERGE:
            side[item] = _COND
            continue
        sides = set()
        for ref in item.node.inputs:
            producer = item_of[ref.node.name]
            if producer.kind == SWITCH:
                sides.add(_FALSE if ref.index == 0 else _BODY)
            elif producer in members:
                sides.add(side[producer])
        for name in item.node.control_inputs:
            producer = item_of[name.name]
            if producer.kind == SWITCH:
                return f"a control edge from Switch '{producer.name}'"
            if producer in members:
                sides.add(side[producer])
        if item.kind == SWITCH:
            data, pred = [item_of[ref.node.name] for ref in item.node.inputs]
            if pred is not loop_cond or item.node.inputs[1].index != 0:
                return f"Switch '{item.name}' does not test the loop's LoopCond (a cond inside the loop)"
            if sides - {_COND}:
                return f"Switch '{item.name}' takes a value from inside the body (a cond inside the loop)"
            switches.append(item)
            side[item] = _COND
        elif item.kind == EXIT:
            source = item_of[item.node.inputs[0].node.name]
            if source.kind != SWITCH or item.node.inputs[0].index != 0 or item.num_control_inputs:
                return f"Exit '{item.name}' is not fed by a Switch's false side"
            side[item] = _FALSE
            exits.append(item)
        elif _FALSE in sides:
            return f"node '{item.name}' reads the false side of a Switch but is not an Exit"
        else:
            side[item] = _BODY if _BODY in sides else _COND
        if item.kind == NEXT_ITERATION and side[item] != _BODY:
            return f"NextIteration '{item.name}' does not depend on the loop body"
        if item.kind == LOOP_COND and side[item] != _COND:
            return "the LoopCond depends on the loop body"
    for item in template.items:
        if item.kind == NEXT_ITERATION and (item.control_out or any(
                dst.kind != MERGE or dst not in members for edges in item.out_edges for dst, _ in edges)):
            return f"NextIteration '{item.name}' feeds something other than the loop's Merges"
    if set(exits) != set(template.exits):
        return "an Exit outside the loop's frame layout"
    if _exits_reach_enters(template, enters):
        return "the loop's Enters depend on its own Exits"
    merges = [item for item in order if item.kind == MERGE]
    return SequentialLoop(template, merges, enter_of, next_of, switches, loop_cond, exits, order, side)


def _exits_reach_enters(template: FrameTemplate, enters: list[Item]) -> bool:
    """Whether some Enter of `template` is downstream of one of its Exits within one instance:
    paths through a NextIteration lead to another iteration (another instance), not this one."""
    targets = set(enters)
    seen = set(template.exits)
    stack = list(template.exits)
    while stack:
        item = stack.pop()
        for dst in [dst for edges in item.out_edges for dst, _ in edges] + item.control_out:
            if dst in targets:
                return True
            if dst not in seen and dst.kind != NEXT_ITERATION:
                seen.add(dst)
                stack.append(dst)
    return False


# --- running ---------------------------------------------------------------------------------------
def run(step, loop: SequentialLoop, frame, entered: list) -> tuple[list, int, _Program] | None:
    """Run one instance of `loop` (its FrameState `frame`) for `step`, from the values `entered`
    [(Enter item, outputs, dead)]: (the Exits' values, the iterations that ran the body, the
    program run), or None when a kernel or the deadline failed the step (step.error is set)."""
    shortcuts = step.streams is None and not step.check_numerics
    program = loop.program(shortcuts, step.plan.item_of)
    values: list = [None] * program.num_slots
    for slot, value in program.fixed:
        values[slot] = value
    entered_value = {item: outputs[0] for item, outputs, _ in entered}
    for slot, enter in program.invariants:
        values[slot] = entered_value[enter]
    current = [entered_value[enter] for enter in program.merge_enters]
    merge_slots, next_slots, pred_slot = program.merge_slots, program.next_slots, program.pred_slot
    index_slots, cond, body = program.index_slots, program.cond, program.body
    # Without streams or a numerics check kernels are called directly, as _compute would call them.
    compute = None if shortcuts else step._compute
    deadline, clock = step.deadline, time.monotonic
    rendezvous = step.rendezvous   # (another device's failure stops the loop, as in step.py)
    iteration, failed = 0, None
    while True:
        for slot, value in zip(merge_slots, current):
            values[slot] = value
        for slot, first, later in index_slots:
            values[slot] = first if iteration == 0 else later
        failed = _run_part(step, cond, values, compute)
        if failed is not None:
            break
        pred = values[pred_slot]
        if getattr(pred, "ndim", 0) != 0:   # as TensorFlow's SwitchOp checks
            failed = loop.switches[0]
            step.error = RuntimeFailure(f"node '{failed.name}' (Switch): the predicate (input 1) must be a "
                                        f"scalar, but it has shape {list(pred.shape)}")
            break
        if not pred:
            break
        failed = _run_part(step, body, values, compute)
        if failed is not None:
            break
        current = [values[slot] for slot in next_slots]
        iteration += 1
        if deadline is not None and clock() > deadline:
            failed = loop.loop_cond
            step._check_deadline()
            break
        if rendezvous is not None and rendezvous.error is not None:
            failed = loop.loop_cond
            step.error = rendezvous.error
            break
    step.last = (failed, frame, iteration) if failed is not None else step.last
    step.nodes_executed += (iteration + 1) * len(loop.item_ids)   # as the counting executor counts:
    if failed is not None:                                      # every node, live or dead, each iteration
        return None
    return [values[slot] for _, slot in program.exits], iteration, program


def _run_part(step, entries: list, values: list, compute) -> Item | None:
    """Run one part of an iteration; the node that failed (step.error set), or None."""
    for item, count, single_in, getter, single_out, out_pairs, heavy in entries:
        inputs: tuple
        if count == 1:
            inputs = (values[single_in],)
        elif count:
            inputs = getter(values)
        else:
            inputs = ()
        try:
            if heavy:   # it may use every thread: nothing else runs meanwhile
                outputs = step._compute_alone(item, inputs)
            elif compute is None:
                outputs = call_kernel(item, inputs)
            else:
                outputs = compute(item, inputs)
        except BaseException as exc:
            step.error = step._kernel_error(item, inputs, exc)
            return item
        if single_out != _NO_SLOT:
            values[single_out] = outputs[0]
        else:
            for port, slot in out_pairs:
                values[slot] = outputs[port]
    return None
