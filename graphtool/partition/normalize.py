"""Put loop plumbing next to its consumers before any edge is cut.

An Enter hands its value to iteration 0 of a child frame (every iteration, when it is a loop
constant) and a NextIteration hands its value to the next iteration. A `_Send` fed by either would
run in a different iteration, or a different number of times, than the `_Recv` that waits for it
on another device (a `_Recv` inside a loop runs once per iteration). So the cut must sit *before*
these nodes: each device that consumes an Enter or NextIteration gets the node itself, and the
value travels to it along the node's input instead. Both ops run no kernel, so moving or copying
them changes nothing about what is computed. (TensorFlow's partitioner moves them for the same
reason, in OptimizeControlFlowColocation.)

    before: x (cpu:0) -> Enter (cpu:0) -> Merge (cpu:1)
    after:  x (cpu:0) -> Enter (cpu:1) -> Merge (cpu:1)      the cut is now x -> Enter

    before: Enter (cpu:0) -> Add (cpu:0), Enter -> Mul (cpu:1)
    after:  Enter (cpu:0) -> Add, and a copy 'Enter/_on_cpu_1' (cpu:1) -> Mul
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Graph, Node, TensorRef

# Ref variants are left alone: their value is a reference that cannot travel between devices
# (placement keeps reference edges on one device).
RELOCATED_OPS = frozenset({"Enter", "NextIteration"})


@dataclass
class Relocation:
    moved: list[str] = field(default_factory=list)     # nodes whose device changed
    copied: list[str] = field(default_factory=list)    # copies made for other devices


def relocate_loop_plumbing(graph: Graph, labels: dict[str, str]) -> Relocation:
    """Move each Enter/NextIteration to the device of its consumers, copying it when they are on
    several devices (see the module docstring). Returns what was moved and copied."""
    done = Relocation()
    for node in graph.nodes:
        if node.op not in RELOCATED_OPS:
            continue
        by_device = _consumers_by_device(node)
        foreign = [d for d in by_device if d != node.device]
        if not foreign:
            continue
        if node.device not in by_device:
            # Nothing left here: the node itself goes to the first consuming device.
            node.device = foreign.pop(0)
            done.moved.append(node.name)
        for device in foreign:
            copy = _copy_for(graph, node, device, labels[device])
            _move_uses(node, copy, by_device[device])
            done.copied.append(copy.name)
    return done


def _consumers_by_device(node: Node) -> dict[str, list[Node]]:
    grouped: dict[str, list[Node]] = {}
    for consumer in node.consumers():
        grouped.setdefault(consumer.device, []).append(consumer)
    return grouped


def _copy_for(graph: Graph, node: Node, device: str, label: str) -> Node:
    copy = graph.add_node(node.op, graph.unique_name(f"{node.name}/_on_{label}"), inputs=node.inputs,
                          control_inputs=node.control_inputs, device=device)
    for key, value in node.attrs.items():
        copy.attrs[key] = value
    return copy


def _move_uses(node: Node, copy: Node, consumers: list[Node]) -> None:
    """Make `consumers` read `copy` wherever they read `node`, by data or control edge."""
    for consumer in consumers:
        for slot, ref in enumerate(consumer.inputs):
            if ref.node is node:
                consumer.set_input(slot, TensorRef(copy, ref.index))
        if node in consumer.control_inputs:
            consumer.remove_control_input(node)
            consumer.add_control_input(copy)
