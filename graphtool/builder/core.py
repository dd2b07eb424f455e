"""GraphBuilder's core: creating one node, with the registry doing the work.

`op()` binds the inputs to the op's signature (filling T, N, ... from the input dtypes), writes
every attr TensorFlow would write, brings inputs made outside the current cond/while into it,
adds control dependencies, and infers the node's output shapes at once, so a shape error raises
while the graph is being built, naming the node.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterable

import numpy as np

from .. import dtypes
from ..dtypes import DType
from ..errors import InvalidGraphError
from ..ir import Graph, Node, TensorRef, to_graphdef
from ..ops import registry
from ..shape_inference import ShapeResult, TensorInfo, infer_node, infer_shapes
from ..shapes import Shape, ShapeError
from .binding import GraphBuildError, bind_inputs, complete_attrs, to_array
from .scopes import NameTable, merge_device

# GraphDef producer version written into new graphs: TensorFlow 2.21's, whose op signatures the
# registry follows (TensorFlow reads it to decide which op semantics a graph was written for).
GRAPH_DEF_VERSION = 2474


class BuilderCore:
    """Node creation, scopes and static shapes; GraphBuilder adds op wrappers and control flow.

    Given an existing graph, the builder infers its shapes once and adds to it; its nodes count
    as built at the root (outside any cond or while_loop of this builder).
    """

    def __init__(self, graph: Graph | None = None):
        if graph is None:
            graph = Graph()
            graph.versions.producer = GRAPH_DEF_VERSION
            self._shapes = ShapeResult()
        else:
            self._shapes = infer_shapes(graph)
        self.graph = graph
        self._names = NameTable(graph)
        self._scope = ""
        self._device = ""
        # One entry per open control_dependencies(); None marks control_dependencies(None).
        self._control_stack: list[list[Node] | None] = []
        # The innermost cond branch or while loop being built (None: the root).
        self._context = None
        # The context whose values a node's outputs are (absent: the root); per-port overrides
        # for a Switch whose two outputs go to different cond branches.
        self._node_context: dict[Node, object] = {}
        self._port_context: dict[TensorRef, object] = {}

    # --- static information ---------------------------------------------------------------------
    def shape(self, tensor: TensorRef) -> Shape:
        """The statically known shape of `tensor` (inferred when it was built)."""
        return self._shapes.shape(tensor)

    def dtype(self, tensor: TensorRef) -> DType:
        return self._shapes.dtype(tensor)

    def value(self, tensor: TensorRef) -> np.ndarray | None:
        """The statically known value of `tensor` (constants and small shape computations), or None."""
        return self._shapes.value(tensor)

    @property
    def shapes(self) -> ShapeResult:
        """Everything inferred so far (a ShapeResult keyed by TensorRef)."""
        return self._shapes

    def to_graphdef(self, verify: bool = True):
        """The GraphDef of the graph built so far (after Graph.verify() unless `verify` is False)."""
        if verify:
            self.graph.verify()
        return to_graphdef(self.graph)

    # --- creating nodes -------------------------------------------------------------------------
    def op(self, op_type: str, inputs: Iterable = (), name: str | None = None, **attrs):
        """Create an `op_type` node; returns its output (a TensorRef), a list of TensorRefs for an
        op with several or list-typed outputs, or the Node for an op without outputs.

        `inputs` has one entry per input arg of the signature (a list for list args such as
        ConcatV2's `values`); python and numpy values become Consts named `<node>/<arg>`. Type
        and length attrs are inferred from the inputs; attrs with registry defaults are written
        as TensorFlow writes them; other attrs are keyword arguments.

            b = GraphBuilder()
            x = b.placeholder("float32", [None, 3], name="x")
            y = b.op("MatMul", [x, np.ones((3, 2), np.float32)], transpose_a=False)
            b.shape(y)   # Shape([?,2])
        """
        node = self._create(op_type, inputs, self._names.unique(self._scope + (name or op_type)), attrs)
        return self._outputs_of(node)

    def const(self, value, dtype=None, shape=None, name: str = "Const") -> TensorRef:
        """A Const node holding `value` (numpy array or python value). Python floats become float32
        and ints int32 unless `dtype` says otherwise; with `shape`, a single value fills it.

            two = b.const(2.0)                      # float32 scalar
            w = b.const(0.1, shape=[3, 4])          # float32 [3,4] filled with 0.1
        """
        return self._const_node(value, dtype, shape, self._names.unique(self._scope + name)).output(0)

    def _const_node(self, value, dtype, shape, node_name: str) -> Node:
        array = to_array(value, dtype, shape, where=f"constant '{node_name}'")
        dtype = dtypes.as_dtype(dtype).base if dtype is not None else dtypes.from_numpy(array.dtype)
        return self._create("Const", [], node_name, {"value": array, "dtype": dtype})

    def _auto_const(self, node_name: str):
        """The factory bind_inputs uses to turn python input `arg_name` of node `node_name` into a
        Const named `node_name/arg_name` (TensorFlow's naming)."""
        def make(value, dtype, arg_name):
            return self._const_node(value, dtype, None, self._names.unique(f"{node_name}/{arg_name}")).output(0)
        return make

    def _create(self, op_type: str, inputs, node_name: str, attrs: dict, *, raw: bool = False) -> Node:
        """Build node `node_name` (already unique) in the current context. Unless `raw` (the
        control-flow machinery's own nodes), inputs from outer contexts are brought in, the
        control_dependencies() scopes apply, and the context adds its pivot edges."""
        spec = registry.lookup(op_type)
        if spec is None:
            raise GraphBuildError(f"node '{node_name}': unknown op '{op_type}'")
        bound = bind_inputs(spec, inputs, attrs, node_name, self.dtype, self._auto_const(node_name))
        context = self._context
        refs = bound.refs
        controls: list[Node] = []
        if not raw:
            refs = [self._import(ref, context, node_name) for ref in refs]
            controls = self._control_inputs_for(refs, context, node_name)
        all_attrs = complete_attrs(spec, attrs, bound.inferred, node_name)
        node = self.graph.add_node(op_type, node_name, inputs=refs, control_inputs=controls,
                                   attrs=all_attrs, device=self._device)
        problems = spec.check_node(node)
        if problems:
            self._discard(node)
            raise TypeError(f"node '{node_name}' ({op_type}): {problems[0]}")
        if context is not None:
            self._node_context[node] = context
            if not raw:
                context.adopt(node)
        self._infer(node)
        return node

    def _internal(self, op_type: str, inputs, base_name: str, context, *, adopted: bool = False,
                  **attrs) -> Node:
        """A control-flow node whose outputs belong to `context`: made exactly as asked, or, when
        `adopted`, like any node built in `context` (inputs brought in, pivot edges added)."""
        with self._entered(context):
            return self._create(op_type, inputs, self._names.unique(base_name), attrs, raw=not adopted)

    def _infer(self, node: Node) -> None:
        try:
            infos = infer_node(node, self._shapes, strict=True)
        except InvalidGraphError as exc:
            self._discard(node)
            raise GraphBuildError(str(exc)) from None
        for index, info in enumerate(infos):
            self._shapes.info[TensorRef(node, index)] = info

    def _discard(self, node: Node) -> None:
        self._node_context.pop(node, None)
        self.graph.remove_node(node)

    def set_shape(self, tensor: TensorRef, shape) -> None:
        """Tell the builder more about `tensor`'s shape than inference found (merged with it;
        GraphBuildError when incompatible), as TensorFlow's Tensor.set_shape does."""
        info = self._shapes.info[tensor]
        try:
            merged = info.shape.merge(Shape.of(shape))
        except ShapeError as exc:
            raise GraphBuildError(f"tensor '{tensor.name}': {exc}") from None
        self._shapes.info[tensor] = TensorInfo(info.dtype, merged, info.value, info.handle)

    @staticmethod
    def _outputs_of(node: Node):
        spec = node.spec
        outputs = node.outputs
        if not outputs:
            return node
        if len(spec.outputs) == 1 and not spec.outputs[0].is_list:
            return outputs[0]
        return outputs

    # --- control flow membership ----------------------------------------------------------------
    def _context_of(self, ref: TensorRef):
        return self._port_context.get(ref, self._node_context.get(ref.node))

    def _import(self, ref: TensorRef, context, consumer_name: str) -> TensorRef:
        """`ref` as seen inside `context`: a value from an enclosing context enters each context
        on the way in (a cond branch through Switch, a while loop through a constant Enter)."""
        owner = self._context_of(ref)
        chain = []
        current = context
        while current is not owner:
            if current is None:
                raise GraphBuildError(
                    f"node '{consumer_name}': input '{ref.name}' was made inside {owner.describe()} "
                    f"and cannot be used outside it (return it from the loop or branch instead)")
            chain.append(current)
            current = current.outer
        for inner in reversed(chain):
            ref = inner.capture(ref, consumer_name)
        return ref

    def _control_inputs_for(self, refs: list[TensorRef], context, consumer_name: str) -> list[Node]:
        """The nodes control_dependencies() asks for, minus those already feeding data in."""
        wanted: list[Node] = []
        for entry in self._control_stack:
            if entry is None:
                wanted = []
            else:
                wanted.extend(entry)
        producers = {ref.node for ref in refs}
        result: list[Node] = []
        for node in dict.fromkeys(wanted):
            if node in producers:
                continue
            result.append(self._import_control(node, context, consumer_name))
        return result

    def _import_control(self, node: Node, context, consumer_name: str) -> Node:
        """A control input on `node` made from inside `context`. Edges into a while loop from
        outside it would mix frames; as TensorFlow does, the loop reads the node's first output
        through a constant Enter and depends on an Identity of that instead."""
        owner = self._node_context.get(node)
        if _frame_of(owner) is _frame_of(context):
            return node
        if not node.outputs:
            raise GraphBuildError(
                f"node '{consumer_name}': control dependency on '{node.name}' ({node.op}) from inside "
                f"{context.describe()}: a node without outputs cannot enter a loop")
        gate = context.control_gates.get(node)
        if gate is None:
            with self._without_control_dependencies():
                entered = self._import(node.output(0), context, consumer_name)
                gate_name = self._names.unique(f"{consumer_name}/control_dependency")
                gate = self._create("Identity", [entered], gate_name, {})
            context.control_gates[node] = gate
        return gate

    # --- scopes ---------------------------------------------------------------------------------
    @contextmanager
    def name_scope(self, name: str | None):
        """Nodes made inside are named `name/...`; a name used before becomes `name_1`, ...
        None returns to the root scope, and a name ending in '/' re-enters that exact scope.
        Yields the scope prefix ('dense/').

            with b.name_scope("dense"):
                y = b.matmul(x, w)        # named 'dense/MatMul'
        """
        saved = self._scope
        self._scope = self._names.open_scope(saved, name)
        try:
            yield self._scope
        finally:
            self._scope = saved

    @contextmanager
    def device(self, spec: str | None):
        """Nodes made inside get device `spec`, merged into an enclosing device() field by field
        (None clears it).

            with b.device("/job:localhost/replica:0/task:0/device:CPU:1"):
                y = b.relu(x)
        """
        saved = self._device
        self._device = merge_device(saved, spec)
        try:
            yield self._device
        finally:
            self._device = saved

    @contextmanager
    def control_dependencies(self, nodes):
        """Nodes made inside run only after `nodes` (Nodes or TensorRefs); nested scopes add up,
        and None starts afresh.

            with b.control_dependencies([init]):
                y = b.identity(x)         # has input '^init'
        """
        entry = None if nodes is None else [n.node if isinstance(n, TensorRef) else n for n in nodes]
        self._control_stack.append(entry)
        try:
            yield
        finally:
            self._control_stack.pop()

    @contextmanager
    def _without_control_dependencies(self):
        self._control_stack.append(None)
        try:
            yield
        finally:
            self._control_stack.pop()

    @contextmanager
    def _entered(self, context):
        saved, self._context = self._context, context
        try:
            yield context
        finally:
            self._context = saved


def _frame_of(context):
    """The innermost while loop around `context` (None: the root frame)."""
    while context is not None and not context.is_loop:
        context = context.outer
    return context
