"""What a failed step says about itself: where it was when it ran out of time, and which nodes
were left waiting when it could not finish. Kept apart from the executor's hot loop."""
from __future__ import annotations

from ..errors import RuntimeFailure


class StepTimeout(RuntimeFailure):
    """A step ran past its timeout; the message says what was running."""


def describe_node(tagged) -> str:
    """'name' (Op), with its while-loop frame and iteration when it is inside one."""
    item, frame, it = tagged
    where = f" in while-loop frame '{frame.template.name}' iteration {it}" if frame.parent is not None else ""
    return f"'{item.name}' ({item.node.op}){where}"


def where(step) -> str:
    """What `step` (a step.Step) was doing when it ran out of time: the node its scheduling
    thread ran last and the kernels still running on the pool."""
    parts = []
    if step.last is not None and id(step.last) not in step.running:
        parts.append("last node run " + describe_node(step.last))
    running = [describe_node(tagged) for tagged in step.running.values()]
    if running:
        parts.append("still running " + ", ".join(running[:4])
                     + (f" and {len(running) - 4} more" if len(running) > 4 else ""))
    return "; ".join(parts) or "no node had started"


def stuck_error(step, unfinished_targets=()) -> RuntimeFailure:
    """The error of a step that ended with fetches or targets never computed."""
    missing_items = [item for item, entries in step.fetch_slots.items()
                     for position, _ in entries if not step.fetched[position]]
    missing = [f"{item.name}:{port}" for item, entries in step.fetch_slots.items()
               for position, port in entries if not step.fetched[position]]
    missing += [item.name for item in unfinished_targets]
    stuck = _waiting_nodes(step, missing_items + list(unfinished_targets))
    detail = ("; nodes waiting for inputs that never came: " + ", ".join(stuck[:8])
              + (f" and {len(stuck) - 8} more" if len(stuck) > 8 else "")) if stuck else ""
    return RuntimeFailure(f"the graph cannot finish: {', '.join(missing)} never computed{detail}",
                          hint="a Recv nobody sends, or an edge that can never arrive?")


def _waiting_nodes(step, missing: list) -> list[str]:
    """The frontier behind what was never computed: nodes that never ran although some of
    their inputs did (their other inputs never came)."""
    item_of, ran = step.plan.item_of, step.ran
    frontier, seen, stack = [], set(), list(missing)
    while stack:
        item = stack.pop()
        if item.id in seen or ran[item.id]:
            continue
        seen.add(item.id)
        producers = [item_of[n.name] for n in item.node.input_nodes() if n.name in item_of]
        if any(ran[p.id] for p in producers):
            frontier.append(item.name)
        stack.extend(p for p in producers if not ran[p.id])
    return sorted(frontier)
