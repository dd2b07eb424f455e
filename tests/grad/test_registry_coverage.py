"""Every op of the op registry has a gradient decision: a registered gradient, a
not-differentiable declaration, a documented reason for having none
(graphtool/grad/unsupported.py), or no data outputs at all. A newly registered op fails here
until someone decides."""
from __future__ import annotations

import pytest

from graphtool.grad import registry
from graphtool.grad.unsupported import NO_GRADIENT
from graphtool.ops import registry as op_registry

# Ops that tests register for themselves (family "test", e.g. test_executor.py's TestSleep) are
# not dftool's and need no decision.
ALL_OPS = {name: spec for name, spec in op_registry.all_ops().items() if spec.family != "test"}


def _decisions(op: str) -> list[str]:
    found = []
    if op in registry.registered():
        found.append("gradient")
    if op in registry.declared_not_differentiable():
        found.append("not differentiable")
    if op in NO_GRADIENT:
        found.append("documented without gradient")
    if registry.is_structural(op):
        found.append("differentiated by the driver (while loops)")
    return found


@pytest.mark.parametrize("op", sorted(ALL_OPS))
def test_every_op_has_one_gradient_decision(op):
    decisions = _decisions(op)
    if not ALL_OPS[op].outputs:
        assert decisions in ([], ["not differentiable"]), f"'{op}' has no outputs but {decisions}"
        return
    assert len(decisions) == 1, (
        f"op '{op}' ({ALL_OPS[op].family}) has gradient decisions {decisions or 'none'}: register a "
        f"gradient, declare it not_differentiable, or document it in graphtool/grad/unsupported.py")


def test_documented_ops_exist():
    unknown = sorted(op for op in NO_GRADIENT if op not in ALL_OPS)
    assert not unknown, f"graphtool/grad/unsupported.py documents unknown ops {unknown}"
