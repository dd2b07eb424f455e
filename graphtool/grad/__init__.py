"""Symbolic gradients as graph rewriting: the backward computation becomes new nodes in the same
graph (see registry.py for gradient functions and the driver for how they are combined)."""
