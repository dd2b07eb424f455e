"""lower: turn functional control flow and function calls into v1 control flow and inlined bodies
(TensorFlow's LowerFunctionalOps + function inlining; graphtool/functions/lowering.py does it).

    before: out = StatelessWhile(i, x) {cond: less_than_n, body: step}
    after:  Enter -> Merge -> [cond body] -> LoopCond -> Switch -> [step body] -> NextIteration
            Switch -> Exit;  out = IdentityN(exits)   (the While's name and ports survive)

It runs first, so every later pass sees the bodies; functions no longer called leave the library.
"""
from __future__ import annotations

from ..functions.lowering import LoweringReport, lower_functional_ops, needs_lowering
from .base import Pass, PassContext, PassResult, register_pass


@register_pass
class LowerFunctionalOps(Pass):
    name = "lower"
    description = "lower If/While/Case/function calls to v1 control flow and inline function bodies"

    def run(self, graph, ctx: PassContext) -> PassResult:
        report = lower_functional_ops(graph)
        counts = {f"lowered_{op}": n for op, n in report.counts.items()}
        return PassResult.from_counts(**counts, functions_dropped=len(report.dropped_functions))


__all__ = ["LowerFunctionalOps", "LoweringReport", "lower_functional_ops", "needs_lowering"]
