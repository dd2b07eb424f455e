"""Generated inputs: a value for every placeholder the caller did not feed, and `--shape` overrides.

`run`/`profile --random-feeds`, `compare` and `optimize --verify` share this one generator. A
placeholder gets its declared shape, with a `--shape NAME=DIMS` override first (written into the
Placeholder's `shape` attr, so shape inference and the feed checks see it); an unknown dim that a
consumer fixes (a Reshape to a constant, a MatMul, a broadcasting partner) takes that size; an
unknown dim 0 (the batch) follows the first override's dim 0; the others are `unknown_dim` (1 for
a run: a batch of one; `optimize --verify` uses 2, so broadcasting mistakes show); an unknown
rank is a vector of `unknown_dim`. Values, from numpy's PCG64 seeded
with `seed`:

- floats: uniform in [0.5, 1.5) (positive and away from 0: safe for log, sqrt, division);
- complex: real part as floats, imaginary part uniform in [-1, 1);
- bool: fair coin; strings: 16 random lowercase letters;
- integers: per `integers` (see INTEGER_STYLES): small non-negative indices by default;

then fitted to what the consumers do with them (constraints.py: indices within the gathered
dim, divisors non-zero, shape arguments consistent, text a parser accepts...).

A placeholder too large for the tensor bound (limits.max_tensor_bytes) is a RuntimeFailure naming
it. PlaceholderWithDefault keeps its default unless `shapes` names it.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from .. import limits
from ..dtypes import DType
from ..errors import RuntimeFailure, UsageError
from .constraints import constraints, derived_dims, values_for
from ..ir import Graph, Node
from ..ops.core import FED_INPUT_OPS
from ..prune import SIGNATURE_INPUT_ATTR, needed_nodes
from ..shape_inference import infer_shapes
from ..shapes import MAX_RANK, Shape, has_rank
from ..suggest import did_you_mean

# What an unknown dim becomes without a --shape: a batch of one.
DEFAULT_UNKNOWN_DIM = 1

# Generated strings: this many random lowercase letters (long enough for Substr and the like).
_TEXT_LENGTH = 16

# Integer inputs in turn: small indices (may be 0), non-zero values (divisors), permutations
# (InvertPermutation, Transpose perms). --verify uses the first kind the original graph accepts.
INTEGER_STYLES = ("indices", "nonzero", "permutation")

# Inputs a user may name in --shape: the fed ones, and PlaceholderWithDefault (then fed too).
SHAPEABLE_OPS = FED_INPUT_OPS | {"PlaceholderWithDefault"}


def parse_shape_overrides(specs: Iterable[str]) -> dict[str, tuple[int, ...]]:
    """--shape NAME=DIMS (repeatable; DIMS like 1,224,224,3, or [] / empty for a scalar) ->
    name -> dims. Every dim must be a concrete non-negative integer (`?` or -1 would leave the
    shape unknown); UsageError naming the option otherwise, or when a name is given twice."""
    shapes: dict[str, tuple[int, ...]] = {}
    for spec in specs:
        name, sep, text = spec.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"--shape '{spec}': expected NAME=DIMS, e.g. input=1,224,224,3")
        body = text.strip()
        if body.startswith("[") and body.endswith("]"):
            body = body[1:-1].strip()
        dims: list[int] = []
        for part in (body.split(",") if body else []):
            part = part.strip()
            if part in ("?", "-1", "None"):
                raise UsageError(f"--shape '{spec}': dim '{part}' is unknown; an override must make the "
                                 f"shape concrete (give every dim a size)")
            try:
                dim = int(part)
            except ValueError:
                raise UsageError(f"--shape '{spec}': '{part}' is not a dim size (expected non-negative "
                                 f"integers separated by commas)") from None
            if dim < 0:
                raise UsageError(f"--shape '{spec}': dim {dim} is negative")
            if dim >= 2**63:
                raise UsageError(f"--shape '{spec}': dim {dim} is above the largest size a shape holds (2**63 - 1)")
            dims.append(dim)
        if len(dims) > MAX_RANK:
            raise UsageError(f"--shape '{spec}': rank {len(dims)} is above TensorFlow's maximum rank {MAX_RANK}")
        if name in shapes:
            raise UsageError(f"--shape {name}: given twice")
        shapes[name] = tuple(dims)
    return shapes


def find_input(graph: Graph, name: str, what: str = "--shape") -> Node:
    """The input node `name` denotes: a node name, 'node:0', or a SavedModel signature input key.
    UsageError naming it (with the graph's inputs as a hint) for anything else."""
    node_name = name[:-2] if name.endswith(":0") else name
    node = graph.get(node_name)
    if node is None:
        node = next((n for n in graph.nodes if n.has_attr(SIGNATURE_INPUT_ATTR)
                     and n.attr(SIGNATURE_INPUT_ATTR) == node_name), None)
    inputs = [n.name for n in graph.nodes if n.op in SHAPEABLE_OPS]
    if node is None:
        listed = ", ".join(inputs[:10]) + (f", ... ({len(inputs) - 10} more)" if len(inputs) > 10 else "")
        raise UsageError(f"{what} {name}: no node named '{node_name}' in the graph",
                         hint=did_you_mean(node_name, inputs) or
                         (f"the graph's placeholders: {listed}" if inputs else "the graph has no placeholders"))
    if node.op not in SHAPEABLE_OPS:
        raise UsageError(f"{what} {name}: '{node.name}' is a {node.op}, not a placeholder",
                         hint=did_you_mean(node_name, inputs))
    return node


def declared_shape(node: Node) -> Shape:
    """The shape an input declares: its `shape` attr (Placeholder*), or `_output_shapes` (_Arg)."""
    if node.op == "_Arg":
        shapes = node.attr("_output_shapes", None)
        return Shape.of(shapes[0]) if shapes else Shape.unknown()
    shape = node.attr("shape", None)
    return shape if isinstance(shape, Shape) else Shape.unknown()


def apply_shape_overrides(graph: Graph, shapes: Mapping[str, Sequence[int]]) -> dict[str, Node]:
    """Write each --shape override into its placeholder's declared shape (in place), checked: the
    rank must match a declared rank, and shape inference must accept the new shape everywhere it
    did before (a Reshape to a fixed size, a MatMul of the wrong depth...). UsageError naming the
    placeholder on a conflict. Returns override name -> the placeholder node."""
    if not shapes:
        return {}
    before = infer_shapes(graph).errors
    nodes: dict[str, Node] = {}
    for name, dims in shapes.items():
        node = find_input(graph, name)
        declared = declared_shape(node)
        if has_rank(declared) and declared.rank != len(dims):
            raise UsageError(f"--shape {name}={','.join(map(str, dims))}: placeholder '{node.name}' has rank "
                             f"{declared.rank} ({declared}); the override has rank {len(dims)}")
        if node.op == "_Arg":
            node.set_attr("_output_shapes", [Shape(dims)], "list(shape)")
        else:
            node.set_attr("shape", Shape(dims))
        nodes[name] = node
    after = infer_shapes(graph).errors
    # A PlaceholderWithDefault named here is fed: its default no longer has to fit.
    new = [(n, message) for n, message in after.items() if n not in before and n not in nodes.values()]
    if new:
        culprit, message = new[0]
        named = ", ".join(f"'{node.name}' as {Shape(shapes[name])}" for name, node in nodes.items())
        raise UsageError(f"--shape: placeholder {named} conflicts with the graph: {message}",
                         hint="the graph fixes that size; keep the declared dims it depends on")
    return nodes


def generate_feeds(graph: Graph, seed: int = 0, skip: Iterable[Node] = (), shapes: Mapping[str, Sequence[int]] | None = None,
                   integers: str = "indices", unknown_dim: int = DEFAULT_UNKNOWN_DIM) -> dict[str, np.ndarray]:
    """A value for every Placeholder/_Arg of `graph` not in `skip` (those fed explicitly), and for
    each PlaceholderWithDefault `shapes` names (overrides already applied with
    apply_shape_overrides); keyed by node name, in graph order."""
    rng = np.random.default_rng(seed)
    inferred = infer_shapes(graph)
    skipped = set(skip)
    named = {find_input(graph, name).name for name in (shapes or {})}
    # Inputs share a batch: an unknown dim 0 follows the first --shape override's.
    batch = next((dims[0] for dims in (shapes or {}).values() if len(dims) > 0), unknown_dim)
    planned: dict[str, tuple[Node, DType, list[int]]] = {}
    for node in graph.nodes:
        if node in skipped:
            continue
        if node.op not in FED_INPUT_OPS and not (node.op == "PlaceholderWithDefault" and node.name in named):
            continue
        dtype = _dtype_of(node, inferred)
        shape = declared_shape(node) if node.name in named else inferred.shape(node.output(0))
        declared = derived_dims(node, list(shape.dims), inferred) if has_rank(shape) else None
        dims = [(batch if i == 0 else unknown_dim) if d is None else d for i, d in enumerate(declared)] \
            if declared is not None else [unknown_dim]
        _check_size(node, dims, dtype)
        planned[node.name] = (node, dtype, dims)
    # What the consumers need of the values, seen with every generated feed's concrete shape.
    concrete = infer_shapes(graph, {name: Shape(dims) for name, (_, _, dims) in planned.items()}) if planned else inferred
    needs = constraints(graph, concrete, {name: dims for name, (_, _, dims) in planned.items()})
    feeds: dict[str, np.ndarray] = {}
    for name, (node, dtype, dims) in planned.items():
        value = values_for(needs[name], rng, dims, dtype) if name in needs else None
        feeds[name] = value if value is not None else _values(rng, dims, dtype, integers)
    return feeds


def describe(feeds: Mapping[str, np.ndarray], seed: int, graph: Graph | None = None) -> str:
    """The one-line notice of what was generated: names (a SavedModel input by its signature key,
    with `graph`), dtypes and shapes, and the seed."""
    def label(name: str) -> str:
        node = graph.get(name) if graph is not None else None
        return str(node.attr(SIGNATURE_INPUT_ATTR)) if node is not None and node.has_attr(SIGNATURE_INPUT_ATTR) \
            else name

    parts = [f"{label(name)} {_dtype_name(value)}{Shape(value.shape)}" for name, value in feeds.items()]
    shown = parts[:8] + ([f"... ({len(parts) - 8} more)"] if len(parts) > 8 else [])
    return f"generated {len(parts)} feed(s) with seed {seed}: {', '.join(shown)}"


def _dtype_name(value: np.ndarray) -> str:
    return "string" if value.dtype == object else str(value.dtype)


def _dtype_of(node: Node, inferred) -> DType:
    dtype = node.attr("dtype", None) if node.op != "_Arg" else node.attr("T", None)
    if not isinstance(dtype, DType):
        dtype = inferred.dtype(node.output(0))
    return dtype.base


def _integers(rng, dims, dtype, style: str) -> np.ndarray:
    if style == "nonzero":
        return rng.integers(1, 4, size=dims).astype(dtype)
    if style == "permutation" and len(dims) == 1:
        return rng.permutation(dims[0]).astype(dtype)
    return rng.integers(0, 3, size=dims).astype(dtype)


def _values(rng, dims: list[int], dtype: DType, integers: str) -> np.ndarray:
    if dtype.is_bool:
        return rng.random(dims) < 0.5
    if dtype.is_integer:
        return _integers(rng, dims, dtype.numpy, integers)
    if dtype.is_complex:
        return (rng.uniform(0.5, 1.5, dims) + 1j * rng.uniform(-1, 1, dims)).astype(dtype.numpy)
    if dtype.is_floating:
        return rng.uniform(0.5, 1.5, dims).astype(dtype.numpy)
    letters = rng.integers(ord("a"), ord("z") + 1, size=(*dims, _TEXT_LENGTH)).astype(np.uint8)
    flat = letters.reshape(-1, _TEXT_LENGTH)
    return np.array([row.tobytes() for row in flat], dtype=object).reshape(dims)


def _check_size(node: Node, dims: list[int], dtype: DType) -> None:
    """A declared shape may claim any size; a feed of it is built only within the tensor bound
    (a placeholder of [2**40] would otherwise allocate terabytes before anything runs)."""
    itemsize = dtype.numpy.itemsize if dtype.numpy is not None else 8
    size = math.prod(dims) * itemsize
    bound = limits.current().max_tensor_bytes
    if math.prod(d for d in dims if d) * itemsize >= 2**62:
        # Even empty, numpy cannot hold dims whose other product overflows its index type.
        raise RuntimeFailure(f"cannot make a random feed for placeholder '{node.name}' of shape {dims}: "
                             f"its dims are too large to represent")
    if size > bound:
        raise RuntimeFailure(f"cannot make a random feed for placeholder '{node.name}' of shape {dims}: "
                             f"{limits.describe_bytes(size)} is above the tensor limit "
                             f"{limits.describe_bytes(bound)} (--max-tensor-bytes)")


# Variables whose value a step reads; their TensorFlow initializer is named `<variable>/Assign`.
_VARIABLE_OPS = frozenset({"VariableV2", "Variable", "VarHandleOp"})
_ASSIGN_OPS = frozenset({"Assign", "AssignVariableOp"})


def variable_initializers(graph: Graph, fetch_nodes: Iterable[Node]) -> list[Node]:
    """The initializer of every variable the fetches need (TensorFlow's `<variable>/Assign`, an
    Assign or AssignVariableOp of the variable), for a run on generated inputs of a graph whose
    variables nobody initialized; in graph order."""
    needed = needed_nodes(graph, list(fetch_nodes))
    found = []
    for node in graph.nodes:
        if node.op not in _VARIABLE_OPS or node not in needed:
            continue
        init = graph.get(f"{node.name}/Assign")
        if init is not None and init.op in _ASSIGN_OPS and init.inputs and init.inputs[0].node is node:
            found.append(init)
    return found
