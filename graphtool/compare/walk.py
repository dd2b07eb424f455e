"""`compare --all-tensors`: every intermediate tensor A and B have in common, compared in A's
topological order, to find where the two first diverge.

Which tensors: the outputs of the nodes the compared fetches depend on in A (data and control
inputs, transitively), that B has too, under the same node name and output index, with the same
dtype. Left out, each counted under its reason: a tensor inside a while loop (only a loop's final
values, its Exits, are observable from outside), a resource/variant handle (no value to compare),
a node or output B lacks, a dtype that differs.

Memory: the tensors are fetched in chunks whose estimated size (from shape inference; a tensor of
unknown size counts as UNKNOWN_TENSOR_BYTES) stays under a byte budget; each chunk is one run of
A and one of B, compared tensor by tensor and dropped before the next chunk. At most one chunk's
values per side is held, at the cost of running both graphs once per chunk. A graph whose random
ops are not seeded gives different values on every run, so its chunks do not agree with each other
(nor A with B).

The first divergence: the first tensor in A's topological order that fails the tolerance and whose
node has data inputs; a node without data inputs that differs (a Const, a variable read of a
different value) is reported as a *source* of the divergence, not as the first diverging node. So
for a graph with one perturbed Const, the Const is the source and its first consumer (in
topological order) is the first diverging node.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..ir.frames import discover_frames
from ..ir.graph import Graph
from ..ir.node import Node, TensorRef
from ..shape_inference import infer_shapes
from .stats import Comparison, compare_values

DEFAULT_CHUNK_BYTES = 256 * 1024 * 1024
UNKNOWN_TENSOR_BYTES = 1024 * 1024

# Reasons a tensor of A is not compared (the keys of TensorPlan.skipped).
IN_LOOP = "inside a while loop (only its final values are observable)"
HANDLE = "a resource or variant handle (no value)"
NOT_IN_B = "not in B (no node of that name, or fewer outputs)"
DTYPE_DIFFERS = "dtype differs between A and B"


@dataclass
class TensorPlan:
    """The tensors to compare (names, A's topological order), their estimated bytes, and the
    ones left out by reason."""

    tensors: list[str]
    estimated_bytes: dict[str, int]
    sourceless: set[str]                       # tensors of nodes without data inputs
    op_of: dict[str, str]
    skipped: Counter = field(default_factory=Counter)


@dataclass
class WalkResult:
    compared: int
    diverging: list[Comparison]               # A's topological order
    first: Comparison | None                  # the first diverging tensor of a node with data inputs
    sources: list[Comparison]                 # diverging tensors of nodes without data inputs
    chunks: int
    skipped: Counter


def plan_tensors(graph_a: Graph, graph_b: Graph, fetches: Sequence[TensorRef]) -> TensorPlan:
    """What `--all-tensors` compares: see the module docstring."""
    needed = _ancestors(fetches)
    frames_a, frames_b = discover_frames(graph_a), discover_frames(graph_b)
    info_a, info_b = infer_shapes(graph_a).info, infer_shapes(graph_b).info
    plan = TensorPlan([], {}, set(), {})
    for node in graph_a.topological_order():
        if node not in needed:
            continue
        other = graph_b.get(node.name)
        in_loop = _in_loop(frames_a, node) or (other is not None and _in_loop(frames_b, other))
        for ref in node.outputs:
            a_info = info_a.get(ref)
            dtype = a_info.dtype if a_info is not None else None
            if in_loop:
                plan.skipped[IN_LOOP] += 1
            elif dtype is not None and (dtype.base.name in ("resource", "variant")):
                plan.skipped[HANDLE] += 1
            elif other is None or ref.index >= other.num_outputs:
                plan.skipped[NOT_IN_B] += 1
            elif (b_info := info_b.get(TensorRef(other, ref.index))) is not None and dtype is not None \
                    and b_info.dtype.base != dtype.base:
                plan.skipped[DTYPE_DIFFERS] += 1
            else:
                name = ref.name
                plan.tensors.append(name)
                plan.op_of[name] = node.op
                plan.estimated_bytes[name] = _estimate_bytes(a_info)
                if not node.inputs:
                    plan.sourceless.add(name)
    return plan


def walk(plan: TensorPlan, run_a: Callable[[list[str]], list], run_b: Callable[[list[str]], list],
         rtol: float, atol: float, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> WalkResult:
    """Fetch the plan's tensors chunk by chunk from both sides (`run_x(names)` -> values, None
    for dead) and keep the comparisons that fail."""
    diverging: list[Comparison] = []
    compared = chunks = 0
    for names in chunked(plan.tensors, plan.estimated_bytes, chunk_bytes):
        chunks += 1
        values_a = run_a(names)
        values_b = run_b(names)
        for index, name in enumerate(names):
            comparison = compare_values(name, values_a[index], values_b[index], rtol, atol)
            values_a[index] = values_b[index] = None     # drop each pair once compared
            compared += 1
            if not comparison.passed:
                diverging.append(comparison)
    sources = [c for c in diverging if c.name in plan.sourceless]
    first = next((c for c in diverging if c.name not in plan.sourceless), None)
    return WalkResult(compared, diverging, first, sources, chunks, plan.skipped)


def chunked(names: list[str], sizes: dict[str, int], budget: int) -> list[list[str]]:
    """Consecutive groups of `names` whose sizes sum to at most `budget` (a tensor larger than
    the budget is a chunk of its own)."""
    chunks: list[list[str]] = []
    current: list[str] = []
    total = 0
    for name in names:
        size = sizes.get(name, UNKNOWN_TENSOR_BYTES)
        if current and total + size > budget:
            chunks.append(current)
            current, total = [], 0
        current.append(name)
        total += size
    if current:
        chunks.append(current)
    return chunks


def _in_loop(frames, node: Node) -> bool:
    """Whether the node's outputs live inside a while loop's frame."""
    return node in frames.frame_of and not frames.output_frame(node).is_root


def _ancestors(fetches: Sequence[TensorRef]) -> set[Node]:
    seen: set[Node] = set()
    stack = [ref.node for ref in fetches]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        stack.extend(node.input_nodes())
    return seen


def _estimate_bytes(info) -> int:
    if info is None or info.dtype is None:
        return UNKNOWN_TENSOR_BYTES
    elements = info.shape.num_elements()
    itemsize = info.dtype.base.numpy.itemsize if info.dtype.base.numpy is not None else 8
    if elements is None:
        return UNKNOWN_TENSOR_BYTES
    return int(elements) * int(itemsize) if np.dtype(info.dtype.base.numpy).kind not in "OSU" else int(elements) * 64
