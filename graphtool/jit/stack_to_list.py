"""The stacks of v1 loop gradients -> TensorLists the loops carry (what TensorFlow 2's while_v2
does with its accumulators), so the forward and the backward loop both become stateless Whiles.

A v1 gradient saves each forward iteration's value on a stack (StackPushV2 in the forward loop)
and the backward loop pops them in reverse (StackPopV2). As values:

    s = StackV2()                      l0 = EmptyTensorList()
    forward loop:  StackPushV2(s, v)   forward loop carries l:  l = TensorListPushBack(l, v)
    backward loop: StackPopV2(s)       backward loop carries l: l, v = TensorListPopBack(l)
                                       (entering with what the forward loop left)

A push or pop in a nested loop is threaded through every loop between it and the stack (each
carries the list). Converted only when that means the same: the handle reaches one push and one
pop (and Close), each in a loop below the stack's frame, neither in the other's loop, neither
under a cond the stack is not under, and the pop's loop does not feed the push's (the new edge
from the forward loop's result to the backward loop would close a cycle). The push and pop keep
their names (their control users still wait for them).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..ir import Graph, Node, TensorRef
from .subgraph import ShapeBook, Unconvertible, replace_keeping_names

_HANDLE_CARRIERS = frozenset({"Enter", "Identity"})


def stacks_to_lists(graph: Graph, report, shapes: ShapeBook) -> None:
    for stack in [n for n in graph.nodes if n.op == "StackV2"]:
        try:
            with report.transaction(graph):
                plan = _plan(graph, stack)
        except Unconvertible as exc:
            report.refuse("stack", stack.name, str(exc))
            continue
        _rewrite(graph, stack, *plan, shapes)
        report.converted["Stack"] += 1


def _path(frame, top) -> list:
    """The frames from just below `top` down to `frame` (empty when `frame` is not below `top`)."""
    path = []
    while frame is not None and frame is not top:
        path.append(frame)
        frame = frame.parent
    return list(reversed(path)) if frame is top else []


def _loop_cond(frame) -> Node:
    conds = [n for n in frame.nodes if n.op == "LoopCond"]
    if len(conds) != 1:
        raise Unconvertible(f"loop '{frame.name}' has {len(conds)} LoopCond nodes")
    return conds[0]


def _plan(graph: Graph, stack: Node) -> tuple[list[Node], Node, Node, list[Node], list, list, dict]:
    """(carriers, push, pop, closes, push path, pop path, loop conds): the arguments of _rewrite."""
    if stack.control_uses:
        raise Unconvertible("something waits for the stack's creation")
    carriers, users = [], []
    pending = [stack.output(0)]
    while pending:
        ref = pending.pop()
        if ref.node is not stack and ref.node.control_uses:
            raise Unconvertible(f"'{ref.node.name}' carrying its handle has control users")
        for user, slot in ref.node.uses(ref.index):
            if user.op in _HANDLE_CARRIERS:
                carriers.append(user)
                pending.append(user.output(0))
            elif user.op in ("StackPushV2", "StackPopV2", "StackCloseV2") and slot == 0:
                users.append(user)
            else:
                raise Unconvertible(f"its handle reaches '{user.name}' ({user.op})")
    pushes = [u for u in users if u.op == "StackPushV2"]
    pops = [u for u in users if u.op == "StackPopV2"]
    closes = [u for u in users if u.op == "StackCloseV2"]
    if len(pushes) != 1 or len(pops) != 1:
        raise Unconvertible(f"it has {len(pushes)} pushes and {len(pops)} pops, not one of each")
    push, pop = pushes[0], pops[0]
    dtype = stack.attr("elem_type")
    if push.attr("T") != dtype or pop.attr("elem_type") != dtype or dtype.is_ref:
        raise Unconvertible("its pushes and pops disagree on the element type")
    if not (dtype.is_numeric or dtype.is_bool):
        raise Unconvertible(f"it holds {dtype.name} values (a list of them would not be an array)")
    info = graph.frames()
    top = info.frame_of[stack]
    push_path, pop_path = _path(info.frame_of[push], top), _path(info.frame_of[pop], top)
    if not push_path or not pop_path:
        raise Unconvertible("its push and pop are not both in loops below the stack's frame")
    if push_path[0] is pop_path[0]:
        raise Unconvertible("its push and pop are in one loop")
    loop_conds = {frame: _loop_cond(frame) for frame in push_path + pop_path}
    from .functionalize_conds import BranchStates   # (it imports this module's siblings only)

    states = BranchStates(graph)
    if not (states.of[push] <= states.of[stack] and states.of[pop] <= states.of[stack]):
        raise Unconvertible("its push or pop is under a cond")
    # The backward loop will wait for the forward loop's list: the forward loop must not wait
    # for the backward one.
    downstream: set[Node] = set()
    waiting: list[Node] = list(pop_path[0].enters)
    while waiting:
        node = waiting.pop()
        if node not in downstream:
            downstream.add(node)
            waiting.extend(node.consumers())
    if any(n in downstream for n in push_path[0].enters + push_path[0].nodes):
        raise Unconvertible("the loop that pops it feeds the loop that pushes it")
    return carriers, push, pop, closes, push_path, pop_path, loop_conds


class _LoopVar:
    """A variant loop variable added to a v1 frame: Enter/Merge/Switch/Identity/Exit, closed by
    a NextIteration of what the body makes of `body`."""

    def __init__(self, graph: Graph, frame, loop_cond: Node, value: TensorRef, label: str):
        scope = loop_cond.name.rpartition("/")[0] or frame.name
        device = loop_cond.device

        def add(op, name, inputs, **attrs):
            return graph.add_node(op, graph.unique_name(f"{scope}/{label}/{name}"), inputs=inputs,
                                  attrs={"T": dtypes.variant, **attrs}, device=device)

        enter = add("Enter", "enter", [value], frame_name=frame.name, is_constant=False,
                    parallel_iterations=frame.parallel_iterations)
        self.merge = add("Merge", "merge", [enter.output(0), enter.output(0)], N=2)
        switch = add("Switch", "switch", [self.merge.output(0), loop_cond.output(0)])
        self.body = add("Identity", "body", [switch.output(1)]).output(0)
        self.exit = add("Exit", "exit", [switch.output(0)]).output(0)
        self._add = add

    def close(self, ref: TensorRef) -> None:
        self.merge.set_input(1, self._add("NextIteration", "next_iteration", [ref]).output(0))


def _thread(graph: Graph, value: TensorRef, path: list, loop_conds, label: str, innermost) -> TensorRef:
    """Carry `value` through the loops of `path` (outermost first); `innermost(list)` gives what
    the innermost body makes of it. Returns the value after the outermost loop."""
    var = _LoopVar(graph, path[0], loop_conds[path[0]], value, label)
    inner = innermost(var.body) if len(path) == 1 else _thread(graph, var.body, path[1:], loop_conds, label, innermost)
    var.close(inner)
    return var.exit


def _shape_const(graph: Graph, dims, anchor: Node, name: str) -> TensorRef:
    return graph.add_node("Const", graph.unique_name(name), control_inputs=[anchor], device=anchor.device,
                          attrs={"dtype": dtypes.int32, "value": np.asarray(dims, np.int32)}).output(0)


def _rewrite(graph: Graph, stack: Node, carriers, push: Node, pop: Node, closes, push_path, pop_path,
             loop_conds, shapes: ShapeBook) -> None:
    dtype = stack.attr("elem_type")
    shape = shapes.shape(push.inputs[1])
    dims = -1 if shape.dims is None else [-1 if d is None else d for d in shape.dims]
    anchor = stack.inputs[0].node
    empty = graph.add_node("EmptyTensorList", graph.unique_name(f"{stack.name}/as_list"),
                           inputs=[_shape_const(graph, dims, anchor, f"{stack.name}/element_shape"),
                                   _shape_const(graph, -1, anchor, f"{stack.name}/max_num_elements")],
                           attrs={"element_dtype": dtype, "shape_type": dtypes.int32}, device=stack.device)
    label = stack.name.rsplit("/", 1)[-1] if "/" in stack.name else stack.name
    renames = []

    def push_back(items: TensorRef) -> TensorRef:
        value = push.inputs[1]
        graph.replace_all_uses_with(push.output(0), value)   # a push passes its value through
        new = graph.add_node("TensorListPushBack", graph.unique_name(f"{push.name}/as_list"), inputs=[items, value],
                             control_inputs=push.control_inputs, attrs={"element_dtype": dtype}, device=push.device)
        graph.move_control_uses(push, new)
        renames.append((new, push))
        return new.output(0)

    def pop_back(items: TensorRef) -> TensorRef:
        element = _shape_const(graph, dims, items.node, f"{pop.name}/element_shape")
        new = graph.add_node("TensorListPopBack", graph.unique_name(f"{pop.name}/as_list"), inputs=[items, element],
                             control_inputs=pop.control_inputs, attrs={"element_dtype": dtype}, device=pop.device)
        graph.replace_all_uses_with(pop.output(0), new.output(1))
        graph.move_control_uses(pop, new)
        renames.append((new, pop))
        return new.output(0)

    pushed = _thread(graph, empty.output(0), push_path, loop_conds, f"{label}_pushed", push_back)
    _thread(graph, pushed, pop_path, loop_conds, f"{label}_popped", pop_back)
    for close in closes:
        no_op = graph.add_node("NoOp", graph.unique_name(f"{close.name}/as_list"), control_inputs=close.control_inputs,
                               device=close.device)
        graph.move_control_uses(close, no_op)
        renames.append((no_op, close))
    for _, old in renames:
        old.clear_inputs()
    replace_keeping_names(graph, renames, carriers)
    graph.remove_node(stack)
