"""Adding the replicate rewrite's own nodes to the output graph: fresh names under a scope, an
explicit device, attrs typed by the op registry."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..dtypes import DType
from ..ir import Graph, Node, TensorRef
from ..proto.attr_value_pb2 import AttrValue
from ..tensor import from_ndarray


class Emitter:
    def __init__(self, graph: Graph):
        self.graph = graph

    def node(self, op: str, name: str, inputs: Sequence[TensorRef] = (), *, device: str,
             attrs: dict | None = None, control: Sequence[Node] = (), exact_name: bool = False) -> Node:
        """A new node called `name` (made unique unless `exact_name`)."""
        chosen = name if exact_name else self.graph.unique_name(name)
        return self.graph.add_node(op, chosen, inputs=list(inputs), control_inputs=list(control),
                                   attrs=attrs or {}, device=device)

    def const(self, name: str, value, dtype: DType, *, device: str) -> TensorRef:
        array = np.asarray(value, dtype=dtype.numpy_dtype)
        node = self.node("Const", name, device=device,
                         attrs={"value": AttrValue(tensor=from_ndarray(array, dtype)), "dtype": dtype})
        return node.output(0)
