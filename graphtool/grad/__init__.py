"""Symbolic gradients as graph rewriting: the backward computation becomes new nodes in the same
graph, so it can be optimized, placed, partitioned and run like anything else.

    from graphtool.grad import add_gradients
    report = add_gradients(graph, "loss", ["w", "b"])       # adds grad/w, grad/b

registry.py holds the per-op gradient functions' contract (one module per op family registers
them); driver.py is the public entry point; walk.py, while_loop.py and stacks.py build the
backward computation, through conds and while loops.
"""
from .driver import GradientEntry, GradReport, add_gradients, default_xs, gradient_name, gradients

__all__ = ["GradReport", "GradientEntry", "add_gradients", "default_xs", "gradient_name", "gradients"]
