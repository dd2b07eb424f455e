"""The pass contract: every optimization pass is a small class with one job.

    @register_pass
    class RemoveNoOps(Pass):
        name = "dependency"
        description = "remove NoOps, Identity chains and redundant control edges"

        def run(self, graph, ctx) -> PassResult:
            ...
            return PassResult(changed=True, stats={"noops_removed": 3})

`ctx` says what must survive: fetched tensors and `--keep` nodes keep their names and values
(ctx.is_protected), and stateful or control-flow ops are never removed, merged or folded
(ctx.is_side_effecting). Passes with many rules split them into Rule objects with
applies(node) / rewrite(node) that leave the graph untouched when they decline.
Rewritten nodes get names under the original node's scope saying which pass made them
(ctx.new_name).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from .. import tensor
from ..ir import Graph, Node, TensorRef

# Kernel-less ops and ops whose effect is not (only) their output.
_SIDE_EFFECT_OPS = frozenset({"Placeholder", "PlaceholderV2", "PlaceholderWithDefault", "_Arg", "_Retval",
                              "_Send", "_Recv", "_HostSend", "_HostRecv", "NoOp", "ControlTrigger"})


def const_value_within(node: Node, budget: int):
    """A Const's decoded value, or None when decoding would create more than `budget` bytes
    beyond what the graph stores (a filled constant claiming gigabytes in a few bytes): passes
    leave such a constant alone rather than expand it. Malformed tensors raise as attr() does."""
    proto = node.attrs["value"].tensor
    if tensor.expanded_nbytes(proto, f"node '{node.name}' attr 'value'") > budget:
        return None
    return node.attr("value")


@dataclass
class PassContext:
    """What the passes must preserve, and the knobs the command line sets."""

    fetches: list[TensorRef] = field(default_factory=list)
    keep: set[str] = field(default_factory=set)
    strict_fp: bool = False
    fold_max_bytes: int = 10 * 1024 * 1024

    def __post_init__(self):
        self._fetched_nodes = {ref.node.name for ref in self.fetches}

    def refresh(self, graph: Graph) -> None:
        """Re-resolve the fetched tensors (passes may replace nodes; names are what is kept)."""
        self.fetches = [TensorRef(graph.node(ref.node.name), ref.index) for ref in self.fetches]
        self._fetched_nodes = {ref.node.name for ref in self.fetches}

    def is_protected(self, node: Node) -> bool:
        """Fetched or kept: its name and outputs must stay as they are."""
        return node.name in self._fetched_nodes or node.name in self.keep

    @staticmethod
    def is_side_effecting(node: Node) -> bool:
        """Stateful, control-flow or call-frame ops: never removed as dead, merged or folded."""
        spec = node.spec
        if spec is None:
            return True
        if spec.stateful or spec.control_flow or node.op in _SIDE_EFFECT_OPS:
            return True
        return any(arg.is_ref for arg in spec.inputs)  # Assign & co. mutate through a reference

    def can_rewrite(self, node: Node) -> bool:
        """Neither protected nor side-effecting."""
        return not self.is_protected(node) and not self.is_side_effecting(node)

    @staticmethod
    def new_name(graph: Graph, node: Node, pass_name: str, suffix: str = "") -> str:
        """A fresh name under `node`'s scope that says which pass made it: 'scope/x/constfold'."""
        base = f"{node.name}/{pass_name}" + (f"_{suffix}" if suffix else "")
        return graph.unique_name(base)


@dataclass
class PassResult:
    changed: bool
    stats: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_counts(cls, **counts: int) -> "PassResult":
        """changed iff any count is non-zero; zero counts are left out of the stats."""
        stats = {k: v for k, v in counts.items() if v}
        return cls(bool(stats), stats)


class Pass:
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:  # pragma: no cover - interface
        raise NotImplementedError


class Rule:
    """One rewrite of a multi-rule pass. `rewrite` is called only when `applies` said yes, and
    returns True when it changed the graph."""

    name: ClassVar[str] = ""

    def applies(self, node: Node, ctx: PassContext) -> bool:  # pragma: no cover - interface
        raise NotImplementedError

    def rewrite(self, node: Node, graph: Graph, ctx: PassContext) -> bool:  # pragma: no cover
        raise NotImplementedError


def apply_rules(graph: Graph, ctx: PassContext, rules: list[Rule]) -> PassResult:
    """Run every rule over the nodes in topological order (one sweep); count rewrites per rule."""
    counts = {rule.name: 0 for rule in rules}
    for node in graph.topological_order():
        if graph.get(node.name) is not node:
            continue  # removed by an earlier rewrite in this sweep
        for rule in rules:
            if rule.applies(node, ctx) and rule.rewrite(node, graph, ctx):
                counts[rule.name] += 1
                break
    return PassResult.from_counts(**counts)


def redirect_outputs(graph: Graph, old: Node, new_outputs: list[TensorRef]) -> None:
    """Make every user of `old`'s output k read new_outputs[k], and move `^old` control users to
    the first new producer (so ordering constraints survive)."""
    for index, new in enumerate(new_outputs):
        graph.replace_all_uses_with(TensorRef(old, index), new)
    if new_outputs and old.control_uses:
        graph.move_control_uses(old, new_outputs[0].node)


_PASSES: dict[str, type[Pass]] = {}


def register_pass(cls: type[Pass]) -> type[Pass]:
    if not cls.name or cls.name in _PASSES:
        raise ValueError(f"pass {cls.__name__} needs a unique name (got {cls.name!r})")
    _PASSES[cls.name] = cls
    return cls


def registered_passes() -> dict[str, type[Pass]]:
    from . import PASS_ORDER  # noqa: F401  (importing the package registers every pass)

    return dict(_PASSES)
