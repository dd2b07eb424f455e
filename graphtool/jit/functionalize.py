"""Functionalize v1 control flow (TensorFlow's functionalize-control-flow): while frames become
While / StatelessWhile nodes and Switch/Merge conds become If / StatelessIf nodes whose bodies are
FunctionDefs in the graph's library. First, TensorArrays and the stacks of loop gradients become
TensorLists (values the loops carry), so a dynamic RNN and its gradient are stateless loops a JIT
compiles as `lax.while_loop`s over arrays.

    report = functionalize(graph, keep=fetches)   # in place
    report.converted        # Counter({'StatelessWhile': 2, 'StatelessIf': 1, 'TensorArray': 2, 'Stack': 4})
    report.nodes            # the While / If nodes made (those inside function bodies too)
    report.not_converted    # [Refusal('cond', 'cond/Merge', 'its inputs are not ...')]

The graph stays valid and computes the same for the same fetches: a structure the pass cannot
convert stays as it is (the report says why), and the tensors a user can fetch keep their names
(an Exit or a cond's Merge becomes an Identity of the new node's output, named like it). Nodes
inside a loop or branch that no result needs are dropped with it, as a fetch prunes them from
the v1 graph; `keep` names what the caller will fetch or target, and a structure holding one of
those stays v1. The interpreter runs the result as any TF2 graph (graphtool/functions/lowering.py
turns it back into v1 frames).

Order: TensorArrays and stacks first (their flows become the lists the loops carry), then loops
innermost first (conds inside a loop's body or cond are functionalized inside those functions),
then the conds left in the graph (a loop already converted sits inside a branch as one node).
"""
from __future__ import annotations

import contextlib
import copy
from collections import Counter
from dataclasses import dataclass, field

from ..ir import Graph
from .subgraph import ShapeBook, Unconvertible


@dataclass(frozen=True)
class Refusal:
    kind: str      # 'while loop', 'cond', 'TensorArray', 'graph'
    name: str      # the frame name / Merge / TensorArray node
    reason: str

    def __str__(self) -> str:
        return f"{self.kind} '{self.name}': {self.reason}" if self.name else f"{self.kind}: {self.reason}"


@dataclass
class FunctionalizeReport:
    converted: Counter = field(default_factory=Counter)   # new op (or 'TensorArray') -> how many
    not_converted: list[Refusal] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)     # library functions added
    nodes: list[str] = field(default_factory=list)         # the While / If nodes made, outermost last
    keep: frozenset = frozenset()                          # node names that must survive

    @property
    def changed(self) -> bool:
        return bool(self.converted)

    def refuse(self, kind: str, name: str, reason: str) -> None:
        self.not_converted.append(Refusal(kind, name, reason))

    def summary(self) -> str:
        """'2 StatelessWhile, 1 StatelessIf; 1 left as v1 control flow' (or 'nothing to convert')."""
        done = ", ".join(f"{n} {op}" for op, n in self.converted.most_common())
        left = f"{len(self.not_converted)} left as v1 control flow" if self.not_converted else ""
        return "; ".join(p for p in (done, left) if p) or "nothing to convert"

    def to_json(self) -> dict:
        return {"converted": dict(self.converted), "functions": list(self.functions), "nodes": list(self.nodes),
                "not_converted": [{"kind": r.kind, "name": r.name, "reason": r.reason} for r in self.not_converted]}

    @contextlib.contextmanager
    def transaction(self, graph: Graph):
        """Undo what a failed conversion added to the report and the library (the graph itself is
        only changed once a conversion cannot fail any more). A structure the analysis trips over
        in an unforeseen way is left as it is too (a JIT must never refuse a graph), as long as the
        graph is still valid."""
        functions = len(graph.library.function)
        saved = (copy.copy(self.converted), list(self.functions), list(self.nodes), list(self.not_converted))
        try:
            yield
        except Exception as exc:
            del graph.library.function[functions:]
            self.converted, self.functions, self.nodes, self.not_converted = saved
            if isinstance(exc, Unconvertible):
                raise
            if graph.problems():
                raise
            raise Unconvertible(f"not understood ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})") from exc


def has_v1_control_flow(graph: Graph) -> bool:
    return any(n.op in ("Switch", "Merge", "Enter", "TensorArrayV3", "StackV2") for n in graph.nodes)


def functionalize(graph: Graph, keep=()) -> FunctionalizeReport:
    """Functionalize `graph` in place (see the module docstring). `keep`: tensor or node names
    the caller will fetch; a loop or branch computing one of them (other than an Exit or a cond's
    Merge, which keep their names anyway) stays as it is."""
    from .functionalize_conds import functionalize_conds
    from .functionalize_loops import functionalize_loops
    from .stack_to_list import stacks_to_lists
    from .tensor_array_to_list import tensor_arrays_to_lists

    report = FunctionalizeReport(keep=frozenset(k.lstrip("^").split(":")[0] for k in keep))
    if not has_v1_control_flow(graph):
        return report
    shapes = ShapeBook(graph)
    tensor_arrays_to_lists(graph, report, shapes)
    stacks_to_lists(graph, report, shapes)
    functionalize_loops(graph, shapes, report)
    functionalize_conds(graph, shapes, report)
    return report


__all__ = ["FunctionalizeReport", "Refusal", "functionalize", "has_v1_control_flow"]
