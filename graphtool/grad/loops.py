"""The structure of a TensorFlow v1 while loop, recovered from its frame.

Per loop variable:  Enter -> Merge(Enter, NextIteration) -> Switch(Merge, LoopCond)
                    Switch:1 -> (Identity) -> body ... -> NextIteration     Switch:0 -> Exit
Loop invariants enter through Enter nodes with is_constant=True. The driver differentiates a
loop as one unit: its inputs are the Enters' inputs, its outputs the Exits.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidGraphError
from ..ir import Frame, Node, TensorRef
from ..ir.frames import EXIT_OPS, NEXT_ITERATION_OPS
from .conds import MERGE_OPS, is_loop_switch

WHILE_CONTEXT_SUFFIX = "/while_context"


@dataclass(eq=False)
class LoopVar:
    """One loop variable. `next_iteration` is None while the loop is still being built, `exit`
    when nothing reads the final value (frozen graphs drop unused Exits)."""

    enter: Node
    merge: Node
    switch: Node
    next_iteration: Node | None
    exit: Node | None

    @property
    def init(self) -> TensorRef:
        """The value the variable enters the loop with."""
        return self.enter.inputs[0]

    @property
    def value(self) -> TensorRef:
        """The variable's value at the start of an iteration (the Merge output)."""
        return self.merge.output(0)

    @property
    def body_value(self) -> TensorRef:
        """The variable's value as the body sees it (the Switch's true output)."""
        return self.switch.output(1)

    @property
    def result(self) -> TensorRef:
        """What the body computes for the next iteration."""
        assert self.next_iteration is not None, "the loop is still being built"
        return self.next_iteration.inputs[0]


@dataclass(eq=False)
class LoopInfo:
    frame: Frame
    vars: list[LoopVar]
    invariants: list[Node]        # Enter nodes with is_constant=True
    loop_cond: Node

    @property
    def label(self) -> str:
        """The loop's name scope ('rnn/while' for frame 'rnn/while/while_context')."""
        name = self.frame.name
        return name[:-len(WHILE_CONTEXT_SUFFIX)] if name.endswith(WHILE_CONTEXT_SUFFIX) else name

    @property
    def parallel_iterations(self) -> int:
        return self.frame.parallel_iterations


def describe_loop(frame: Frame) -> LoopInfo:
    """The LoopInfo of a (non-root) frame; InvalidGraphError for a structure that is not a
    TensorFlow v1 while loop."""
    loop_conds = [n for n in frame.nodes if n.op == "LoopCond"]
    if len(loop_conds) != 1:
        raise InvalidGraphError(f"while loop frame '{frame.name}' has {len(loop_conds)} LoopCond nodes "
                                f"(expected exactly one)")
    variables, invariants = [], []
    for enter in frame.enters:
        if enter.attr("is_constant"):
            invariants.append(enter)
        else:
            variables.append(_loop_var(frame, enter))
    return LoopInfo(frame, variables, invariants, loop_conds[0])


def _loop_var(frame: Frame, enter: Node) -> LoopVar:
    merge = _only_consumer(enter, lambda n: n.op in MERGE_OPS, frame, "a Merge")
    switch = _only_consumer(merge, is_loop_switch, frame, "a Switch on the LoopCond")
    next_iteration = next((ref.node for ref in merge.inputs if ref.node.op in NEXT_ITERATION_OPS), None)
    exits = [consumer for consumer, slot in switch.uses(0) if consumer.op in EXIT_OPS]
    return LoopVar(enter, merge, switch, next_iteration, exits[0] if exits else None)


def _only_consumer(node: Node, wanted, frame: Frame, what: str) -> Node:
    # A Merge still being built reads its Enter twice: count each consumer once.
    found = list(dict.fromkeys(consumer for consumer, _ in node.uses(0) if wanted(consumer)))
    if len(found) != 1:
        raise InvalidGraphError(f"while loop frame '{frame.name}': '{node.name}' ({node.op}) should feed "
                                f"exactly one {what}, feeds {len(found)}",
                                hint="only TensorFlow v1 while loops (Enter/Merge/Switch/Exit/NextIteration) "
                                     "can be differentiated")
    return found[0]
