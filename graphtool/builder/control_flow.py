"""TensorFlow v1 control flow built from primitives, node for node as TensorFlow builds it.

cond(pred, true_fn, false_fn), under scope `cond/`:
    Switch(pred, pred) -> switch_t = Identity(:1), switch_f = Identity(:0)   (the branch pivots)
    pred_id = Identity(pred)
    each outside value a branch reads: Switch(value, pred_id), output 1 (true) or 0 (false)
    nodes without data inputs in a branch: a control input from the branch pivot
    each result: Merge(false_result, true_result)

while_loop(cond_fn, body_fn, loop_vars), under scope `while/`, frame `while/while_context`:
    per loop var: Enter -> Merge(Enter, NextIteration) -> Switch(Merge, LoopCond)
    cond_fn(Merge outputs) -> LoopCond
    body_fn(Identity(Switch:1) per var) -> NextIteration, which closes the Merge's second input
    Exit(Switch:0) per var: the loop's results
    outside values the loop reads: Enter with is_constant=True
    nodes without data inputs (and nodes reading only loop constants): a control input from the
    pivot (the first Merge while building the condition, the first body Identity in the body), so
    they run in every iteration of the frame.
"""
from __future__ import annotations

from contextlib import contextmanager

from ..ir import Node, TensorRef
from ..shape_inference import TensorInfo
from ..shapes import Shape, has_rank
from .binding import GraphBuildError, is_tensor
from .core import BuilderCore
from .tensor_array import TensorArray

_ENTER_OPS = ("Enter", "RefEnter")


class _Context:
    """A cond branch or while loop being built. `outer` is the enclosing one (None: the root)."""

    is_loop = False

    def __init__(self, builder, outer, name: str):
        self.builder = builder
        self.outer = outer
        self.name = name
        # Outside value -> the value as seen inside (built once per context).
        self._captured: dict[TensorRef, TensorRef] = {}
        # Outside node -> the Identity inside that stands for a control dependency on it.
        self.control_gates: dict[Node, Node] = {}

    def capture(self, ref: TensorRef, consumer_name: str) -> TensorRef:
        found = self._captured.get(ref)
        if found is None:
            found = self._captured[ref] = self._bring_in(ref, consumer_name)
        return found

    def _bring_in(self, ref: TensorRef, consumer_name: str) -> TensorRef:
        raise NotImplementedError

    def adopt(self, node: Node) -> None:
        """Called for each node built in this context (after its inputs were brought in)."""

    def _add_pivot_if_sourceless(self, node: Node, pivot: Node | None) -> None:
        owned = any(self.builder._node_context.get(c) is self for c in node.control_inputs)
        if not node.inputs and not owned:
            assert pivot is not None, "a context's pivot is built before any sourceless node in it"
            node.add_control_input(pivot)


class CondBranch(_Context):
    """One branch of a cond: outside values enter through Switch(value, pred_id)."""

    def __init__(self, builder, outer, name: str, branch: int):
        super().__init__(builder, outer, name)
        self.branch = branch
        self.pivot: Node | None = None          # Identity(Switch(pred, pred):branch)
        self.pred_id: TensorRef | None = None   # Identity(pred), read by every capturing Switch

    def describe(self) -> str:
        return f"the {'true' if self.branch else 'false'} branch of cond '{self.name}'"

    def _bring_in(self, ref: TensorRef, consumer_name: str) -> TensorRef:
        switch = self.builder._internal("Switch", [ref, self.pred_id], f"{consumer_name}/Switch", self.outer,
                                        _class=[f"loc:@{ref.node.name}"])
        inside = switch.output(self.branch)
        self.builder._port_context[inside] = self
        return inside

    def adopt(self, node: Node) -> None:
        self._add_pivot_if_sourceless(node, self.pivot)


class WhileLoop(_Context):
    """A while loop's frame: outside values enter through constant Enter nodes."""

    is_loop = True

    def __init__(self, builder, outer, name: str, frame_name: str, parallel_iterations: int):
        super().__init__(builder, outer, name)
        self.frame_name = frame_name
        self.parallel_iterations = parallel_iterations
        self.pivot: Node | None = None

    def describe(self) -> str:
        return f"while loop '{self.name}'"

    def enter(self, ref: TensorRef, base_name: str, is_constant: bool) -> TensorRef:
        node = self.builder._internal("Enter", [ref], base_name, self, frame_name=self.frame_name,
                                      is_constant=is_constant, parallel_iterations=self.parallel_iterations)
        return node.output(0)

    def _bring_in(self, ref: TensorRef, consumer_name: str) -> TensorRef:
        return self.enter(ref, f"{consumer_name}/Enter", is_constant=True)

    def adopt(self, node: Node) -> None:
        self._add_pivot_if_sourceless(node, self.pivot)
        if node.inputs and not node.control_inputs and all(self._is_loop_constant(r) for r in node.inputs):
            # Reading only loop constants, the node would run once; tie it to the iterations.
            assert self.pivot is not None, "the loop's pivot is built before its body"
            node.add_control_input(self.pivot)

    def _is_loop_constant(self, ref: TensorRef) -> bool:
        node = ref.node
        return (node.op in _ENTER_OPS and node.attr("is_constant")
                and node.attr("frame_name") == self.frame_name)


class ControlFlowOps(BuilderCore):
    """cond / while_loop / tensor_array for GraphBuilder."""

    def cond(self, pred: TensorRef, true_fn, false_fn, name: str = "cond"):
        """Run `true_fn()` or `false_fn()` depending on the scalar bool `pred`; both return a tensor
        or a list/tuple of tensors of the same dtypes, and the result has that structure.

            y = b.cond(p, lambda: b.mul(x, 2.0), lambda: b.add(x, 1.0))
        """
        user_stack = list(self._control_stack)
        with self.name_scope(name) as scope, self._without_control_dependencies():
            label = scope[:-1]
            pred = self._as_tensor(pred, "cond predicate")
            self._check_scalar_bool(pred, f"cond '{label}' predicate")
            true_branch, false_branch = self._cond_branches(pred, scope)
            true_out, structure = self._run_branch(true_branch, true_fn, user_stack)
            false_out, false_structure = self._run_branch(false_branch, false_fn, user_stack)
            if structure != false_structure:
                raise GraphBuildError(f"cond '{label}': true_fn returns {_describe(structure)}, "
                                      f"false_fn returns {_describe(false_structure)}")
            merged = [self._merge_results(label, scope, i, f, t)
                      for i, (f, t) in enumerate(zip(false_out, true_out))]
            return _pack(structure, merged)

    def _cond_branches(self, pred: TensorRef, scope: str) -> list[CondBranch]:
        """The true and false branches of a cond: Switch(pred, pred), the pivots switch_t and
        switch_f reading its two outputs, and pred_id, which every capturing Switch reads."""
        outer = self._context
        switch = self._internal("Switch", [pred, pred], scope + "Switch", outer, adopted=True)
        branches = [CondBranch(self, outer, scope[:-1], branch) for branch in (1, 0)]
        for context, pivot_name in zip(branches, ("switch_t", "switch_f")):
            context.pivot = self._internal("Identity", [switch.output(context.branch)], scope + pivot_name,
                                           context)
        pred_id = self._internal("Identity", [pred], scope + "pred_id", outer, adopted=True).output(0)
        for context in branches:
            context.pred_id = pred_id
        return branches

    def _run_branch(self, context: CondBranch, fn, user_stack: list):
        """fn's results inside `context` (outside values returned as they are enter through a
        Switch too), and their structure."""
        with self._entered(context), _user_control_dependencies(self, user_stack):
            flat, structure = _flatten(fn())
            refs = [self._import(self._as_tensor(v, "cond result"), context, context.name) for v in flat]
        return refs, structure

    def _merge_results(self, label: str, scope: str, index: int, false_ref: TensorRef,
                       true_ref: TensorRef) -> TensorRef:
        if self.dtype(false_ref) != self.dtype(true_ref):
            raise GraphBuildError(f"cond '{label}' result {index}: true_fn gives {self.dtype(true_ref)}, "
                                  f"false_fn gives {self.dtype(false_ref)}")
        return self._internal("Merge", [[false_ref, true_ref]], scope + "Merge", self._context).output(0)

    def while_loop(self, cond_fn, body_fn, loop_vars, shape_invariants=None, parallel_iterations: int = 10,
                   swap_memory: bool = False, name: str = "while"):
        """Repeat `loop_vars = body_fn(*loop_vars)` while `cond_fn(*loop_vars)` is true; returns the
        final values in the structure of `loop_vars` (a tensor, list or tuple). Loop vars may be
        TensorArrays or python values. A var's shape must stay the same across iterations unless
        `shape_invariants` (a shape per var; None dims may change) relaxes it. `swap_memory` is
        accepted for TensorFlow compatibility; it only matters to gradients.

            i = b.while_loop(lambda i: b.less(i, 16), lambda i: b.mul(i, 2), b.const(4))
        """
        del swap_memory
        with self.name_scope(name) as scope:
            label = scope[:-1]
            flat, structure = _flatten(loop_vars)
            arrays = [v if isinstance(v, TensorArray) else None for v in flat]
            entries = [self._import(self._as_tensor(v, "loop var"), self._context, label) for v in flat]
            invariants = self._shape_invariants(shape_invariants, entries, structure, label)
            loop = WhileLoop(self, self._context, label, scope + "while_context", parallel_iterations)
            user_stack = list(self._control_stack)
            with self._without_control_dependencies():
                merges = self._loop_heads(loop, entries, invariants, scope)
                exits = self._loop_body(loop, merges, arrays, cond_fn, body_fn, structure, scope, user_stack)
            return _pack(structure, _as_arrays(arrays, exits))

    def _loop_heads(self, loop: WhileLoop, entries, invariants, scope: str) -> list[Node]:
        """Enter and Merge per loop var. The Merge reads (Enter, Enter) until the NextIteration it
        waits for exists; its shape is the var's shape invariant."""
        enters = [loop.enter(ref, scope + "Enter", is_constant=False) for ref in entries]
        merges = [self._internal("Merge", [[e, e]], scope + "Merge", loop) for e in enters]
        for merge, invariant in zip(merges, invariants):
            info = self._shapes.info[merge.output(0)]
            self._shapes.info[merge.output(0)] = TensorInfo(info.dtype, invariant, None, info.handle)
        return merges

    def _loop_body(self, loop, merges, arrays, cond_fn, body_fn, structure, scope,
                   user_stack) -> list[TensorRef]:
        """Condition, LoopCond, Switch, body, NextIteration (closing each Merge); returns the Exits."""
        with self._entered(loop), _user_control_dependencies(self, user_stack):
            loop.pivot = merges[0]
            pred = cond_fn(*_as_arrays(arrays, [m.output(0) for m in merges]))
            pred = self._import(self._as_tensor(pred, "loop condition"), loop, loop.name)
            self._check_scalar_bool(pred, f"while loop '{loop.name}' condition")
            with self._without_control_dependencies():
                loop_cond = self._internal("LoopCond", [pred], scope + "LoopCond", loop).output(0)
                switches = [self._internal("Switch", [m.output(0), loop_cond], scope + "Switch", loop,
                                           _class=[f"loc:@{m.name}"]) for m in merges]
                identities = [self._internal("Identity", [s.output(1)], scope + "Identity", loop)
                              for s in switches]
            loop.pivot = identities[0]
            results = _flatten_like(body_fn(*_as_arrays(arrays, [i.output(0) for i in identities])),
                                    structure, f"while loop '{loop.name}' body")
            results = [self._import(self._as_tensor(v, "loop body result"), loop, loop.name)
                       for v in results]
            with self._without_control_dependencies():
                for index, (merge, ref) in enumerate(zip(merges, results)):
                    self._check_loop_result(loop, merge, ref, index)
                    next_iteration = self._internal("NextIteration", [ref], scope + "NextIteration", loop)
                    merge.set_input(1, next_iteration.output(0))
        return [self._internal("Exit", [s.output(0)], scope + "Exit", loop.outer).output(0) for s in switches]

    def _check_loop_result(self, loop, merge: Node, ref: TensorRef, index: int) -> None:
        entry, invariant = merge.inputs[0], self.shape(merge.output(0))
        if self.dtype(ref) != self.dtype(entry):
            raise GraphBuildError(f"while loop '{loop.name}' var {index}: enters as {self.dtype(entry)}, "
                                  f"body returns {self.dtype(ref)}")
        if not _at_least_as_specific(self.shape(ref), invariant):
            raise GraphBuildError(
                f"while loop '{loop.name}' var {index} enters the loop with shape {invariant}, but has "
                f"shape {self.shape(ref)} after one iteration; pass shape_invariants to let it vary")

    def _shape_invariants(self, given, entries, structure, label: str) -> list[Shape]:
        if given is None:
            return [self.shape(ref) for ref in entries]
        flat = [given] if structure == "tensor" else list(given)
        if len(flat) != len(entries):
            raise GraphBuildError(f"while loop '{label}': {len(flat)} shape invariants for "
                                  f"{len(entries)} loop vars")
        invariants = [Shape.of(s) for s in flat]
        for ref, invariant in zip(entries, invariants):
            if not _at_least_as_specific(self.shape(ref), invariant):
                raise GraphBuildError(f"while loop '{label}': loop var '{ref.name}' has shape "
                                      f"{self.shape(ref)}, which does not fit its invariant {invariant}")
        return invariants

    def tensor_array(self, dtype, size, element_shape=None, dynamic_size: bool = False,
                     clear_after_read: bool = True, name: str = "TensorArray") -> TensorArray:
        """A TensorArrayV3 of `size` elements (an int or an int32 scalar tensor); see TensorArray.

            ta = b.tensor_array("float32", 5, element_shape=[3]).unstack(x)
            row = ta.read(2)
        """
        return TensorArray.create(self, dtype, size, element_shape, dynamic_size, clear_after_read, name)

    # --- helpers --------------------------------------------------------------------------------
    def _as_tensor(self, value, what: str) -> TensorRef:
        """A tensor for `value`: a TensorArray stands for its flow, python values become Consts."""
        if isinstance(value, TensorArray):
            return value.flow
        if is_tensor(value):
            return value
        if isinstance(value, Node):
            raise GraphBuildError(f"{what}: got the node '{value.name}' ({value.op}); pass one of its outputs")
        return self.const(value)

    def _check_scalar_bool(self, ref: TensorRef, what: str) -> None:
        if self.dtype(ref).base.name != "bool" or not self.shape(ref).is_compatible_with(Shape.scalar()):
            raise GraphBuildError(f"{what} must be a bool scalar, got {self.dtype(ref)} {self.shape(ref)}")


def _at_least_as_specific(shape: Shape, invariant: Shape) -> bool:
    """True when every dim the invariant fixes is the same in `shape`."""
    if not has_rank(invariant):
        return True
    if not has_rank(shape) or shape.rank != invariant.rank:
        return False
    return all(want is None or have == want for have, want in zip(shape, invariant))


def _is_sequence(value) -> bool:
    """A list or tuple of values (a TensorRef is a named tuple, but one tensor)."""
    return isinstance(value, (list, tuple)) and not is_tensor(value)


def _flatten(value):
    """(flat list, structure) for a tensor or a list/tuple of them (one level deep)."""
    if _is_sequence(value):
        return list(value), (type(value).__name__, len(value))
    return [value], "tensor"


def _flatten_like(value, structure, what: str) -> list:
    """The body's results as a flat list, checked against the loop vars' structure."""
    if structure == "tensor":
        if _is_sequence(value) and len(value) == 1:
            return list(value)
        if not _is_sequence(value):
            return [value]
    elif _is_sequence(value) and len(value) == structure[1]:
        return list(value)
    found = _flatten(value)[1]
    raise GraphBuildError(f"{what} returns {_describe(found)}, the loop vars are {_describe(structure)}")


def _describe(structure) -> str:
    return "one tensor" if structure == "tensor" else f"a {structure[0]} of {structure[1]}"


def _pack(structure, values: list):
    if structure == "tensor":
        return values[0]
    return tuple(values) if structure[0] == "tuple" else list(values)


def _as_arrays(arrays, refs: list[TensorRef]) -> list:
    """Loop vars as the functions see them: TensorArrays rebuilt around their flow."""
    return [a.with_flow(r) if a is not None else r for a, r in zip(arrays, refs)]


@contextmanager
def _user_control_dependencies(builder, stack: list):
    """Inside user functions (branches, loop bodies) the control_dependencies() open where cond
    or while_loop was called apply again; the scaffolding around them is built without them."""
    saved, builder._control_stack = builder._control_stack, list(stack)
    try:
        yield
    finally:
        builder._control_stack = saved
