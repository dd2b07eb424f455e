"""graphtool: the library behind dftool (IR, op registry, passes, executor), and its Python API.

    import graphtool as gt

    g = gt.load("sample_graphs/mlp.pb")
    print(g)                                   # <Graph 14 nodes: ... inputs: x ... outputs: probs>
    probs = gt.run(g, {"x": x}, "probs")
    gt.optimize(g).save("mlp_opt.pb")

The functions (load, save, run, optimize, place, partition, grad, replicate, profile) live in graphtool.api
(docs/python-api.md); they and the IR types are imported on first use, so that `import graphtool`
costs nothing beyond this file.
"""
from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING

__version__ = "0.1.0"

_FUNCTIONS = ("load", "save", "run", "optimize", "place", "partition", "grad", "replicate", "profile")
_TYPES = ("Graph", "Node", "TensorRef")
__all__ = [*_FUNCTIONS, *_TYPES, "__version__"]

if TYPE_CHECKING:
    from .api import grad, load, optimize, partition, place, profile, replicate, run, save
    from .ir import Graph, Node, TensorRef


def __getattr__(name: str):
    if name in _FUNCTIONS:
        from . import api

        value = getattr(api, name)
    elif name in _TYPES:
        from . import ir

        value = getattr(ir, name)
    else:
        raise AttributeError(f"module 'graphtool' has no attribute '{name}'")
    globals()[name] = value   # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """graphtool's own module type. `grad`, `partition` and `place` name both an API function and
    a subpackage or module (graphtool/grad/, ...); importing the subpackage (which
    `from graphtool.grad.driver import ...` does) makes Python set it as an attribute of this
    package, which would hide the function. Here the function keeps the name; the subpackage is
    still imported by its dotted name as before."""

    def __setattr__(self, name: str, value) -> None:
        if name in _FUNCTIONS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
