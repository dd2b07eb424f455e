"""Graph.verify(): structural checks that every command relies on.

Each check returns one-line messages naming the node at fault; find_problems runs them in an order
where later checks can assume earlier ones passed.
"""
from __future__ import annotations

from ..dtypes import DType
from ..errors import DftoolError


def find_problems(graph) -> list[str]:
    problems = _check_links(graph)
    if problems:
        return problems
    problems += _check_ops(graph)
    if problems:
        return problems  # frames and order read attrs that may be malformed
    try:
        graph.topological_order()
    except DftoolError as exc:
        problems.append(exc.one_line())
        return problems
    problems += graph.frames().problems
    return problems


def _check_links(graph) -> list[str]:
    """Names are unique and match their keys; every input resolves; both ends of each edge agree."""
    problems = []
    for name, node in graph._nodes.items():
        if node.name != name:
            problems.append(f"node '{node.name}' is indexed under another name '{name}'")
        for slot, ref in enumerate(node.inputs):
            if graph.get(ref.node.name) is not ref.node:
                problems.append(f"node '{name}' input {slot} reads '{ref.node.name}', which is not in the graph")
            elif (node, slot) not in ref.node._uses:
                problems.append(f"node '{name}' input {slot}: producer '{ref.node.name}' does not list it as a user")
        for control in node.control_inputs:
            if graph.get(control.name) is not control:
                problems.append(f"node '{name}' has control input '^{control.name}', which is not in the graph")
            elif node not in control._control_uses:
                problems.append(f"node '{name}': control producer '{control.name}' does not list it as a user")
        for consumer, slot in node._uses:
            if slot >= len(consumer._inputs) or consumer._inputs[slot].node is not node:  # no tuple copy per use
                problems.append(f"node '{name}' lists '{consumer.name}' input {slot} as a user, but it is not")
        for consumer in node._control_uses:
            if node not in consumer.control_inputs:
                problems.append(f"node '{name}' lists '{consumer.name}' as a control user, but it is not")
    return problems


def _check_ops(graph) -> list[str]:
    """Every known op's attrs are present and well-typed, its inputs match its signature, and
    every input reads an output port that exists. A node whose op the registry does not know is
    opaque (graphtool.ops.opaque): not a problem here; commands that must execute it refuse."""
    from ..ops import registry

    problems = []
    outputs = _OutputFacts(registry.lookup)
    for node in graph.nodes:
        spec = registry.lookup(node.op)
        if spec is None:
            problems += _check_opaque_uses(node)
            continue
        node_problems = spec.check_node(node)
        problems += [f"node '{node.name}' ({node.op}): {p}" for p in node_problems]
        if node_problems:
            continue
        for slot, ref in enumerate(node._inputs):
            available = outputs.count(ref.node)
            if available is not None and ref.index >= available:
                problems.append(f"node '{node.name}' input {slot} reads '{ref.name}', but "
                                f"'{ref.node.name}' ({ref.node.op}) has {available} output(s)")
        problems += _check_input_dtypes(node, spec, outputs)
    return problems


class _OutputFacts:
    """Each producer's output count and dtypes, worked out once: a Split with k outputs read by k
    consumers would otherwise decode its attrs k times per consumer (quadratic in k). None where
    the op is opaque or its attrs are malformed (reported on the producer itself)."""

    def __init__(self, lookup):
        self._lookup = lookup
        self._counts: dict = {}
        self._dtypes: dict = {}

    def count(self, node) -> int | None:
        return self._cached(self._counts, node, "num_outputs")

    def dtypes(self, node) -> list | None:
        return self._cached(self._dtypes, node, "output_dtypes")

    def _cached(self, cache: dict, node, question: str):
        """What the op's spec answers to `question` about `node` (None without a spec, or when the
        spec cannot tell: a missing attr), asked once per node."""
        try:
            return cache[node]
        except KeyError:
            pass
        spec = self._lookup(node.op)
        found = None
        if spec is not None:
            try:
                found = getattr(spec, question)(node)
            except Exception:
                pass
        cache[node] = found
        return found


def _check_opaque_uses(node) -> list[str]:
    """An opaque node's consumers read outputs its `_output_shapes` (TensorFlow writes one entry
    per output) lists; the count is all the graph says about its outputs, so it must agree."""
    from ..ops import opaque

    declared = opaque.declared_shapes(node)
    if declared is None:
        return []
    return [f"node '{consumer.name}' input {slot} reads '{consumer._inputs[slot].name}', but "
            f"'{node.name}' ({node.op}, an op dftool does not know) lists {len(declared)} output(s) "
            f"in _output_shapes" for consumer, slot in node.uses() if consumer._inputs[slot].index >= len(declared)]


def _check_input_dtypes(node, spec, outputs: _OutputFacts) -> list[str]:
    """Each edge carries the dtype the consumer's signature expects (a reference output may feed
    a value input, not the other way round), as TensorFlow checks when it builds a graph."""
    try:
        expected = spec.input_dtypes(node)
    except Exception:
        return []  # malformed attrs are reported by check_node
    problems = []
    for slot, (ref, want) in enumerate(zip(node._inputs, expected)):
        produced = outputs.dtypes(ref.node)
        if produced is None or ref.index >= len(produced):
            continue
        got = produced[ref.index]
        if not isinstance(got, DType) or not isinstance(want, DType):
            continue  # a producer with a malformed type attr is reported on the producer
        if got.base is not want.base or (want.is_ref and not got.is_ref):
            problems.append(f"node '{node.name}' ({node.op}) input {slot} expects {want} but "
                            f"'{ref.name}' ({ref.node.op}) produces {got}")
    return problems
