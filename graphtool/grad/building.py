"""The few GraphBuilder internals the gradient driver needs, in one place.

GraphBuilder knows which cond/while context every node it built belongs to and brings outside
values into the current one (Switch for a cond branch, constant Enter for a loop). The driver
builds backward loops with `GraphBuilder.while_loop`, so gradient functions' nodes land in the
right frame through that same machinery. What the public builder API does not offer, and the
driver needs, is collected here:

- `current_context` / `entered`: read and temporarily switch the builder's control-flow context
  (a stack pop for an outer backward loop is built in that loop, not the inner one);
- `forward_node`: a node added to the *forward* computation exactly as given (no inputs brought
  in, no pivot edges), e.g. the loop counter and the stack pushes; the driver places those in
  their frames itself.
"""
from __future__ import annotations

from contextlib import contextmanager

from ..ir import Node, TensorRef


def current_context(builder):
    """The cond branch or while loop the builder is building in (None: the root)."""
    return builder._context


@contextmanager
def entered(builder, context):
    """Build in `context` (a builder loop/branch context, or None for the root) for a while."""
    with builder._entered(context):
        yield context


def forward_node(builder, op: str, inputs: list[TensorRef], name: str, context=None,
                 controls: tuple[Node, ...] = (), **attrs) -> Node:
    """Add `op` named `name` (made unique) reading exactly `inputs`, with control inputs
    `controls`. `context` is the builder context that owns the node's outputs: the one standing
    for the node's frame when the builder tracks it (the frame the gradients are taken in), else
    None. Shapes are inferred as for any built node."""
    node = builder._internal(op, inputs, name, context, **attrs)
    for control in controls:
        node.add_control_input(control)
    return node

