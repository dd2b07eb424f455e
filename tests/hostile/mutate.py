"""Structure-aware mutations of real GraphDefs at the protobuf level, for fuzzing every dftool command.

Seeds are real graphs (sample_graphs/*.pb and small fixtures); each mutation edits the decoded
GraphDef the way a corrupt or hostile producer would: op names, attr kinds and values, dtypes,
shapes, tensor contents, input strings, frames, node duplication/deletion, library functions.
Everything is deterministic given (seed, index), so a failure is reproduced from two numbers.

This module is used by tests/hostile/test_fuzz_cli.py and tools/fuzz_cli.py; dftool never imports
it. It needs only the generated protobuf classes and the op registry's names.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from graphtool.ops import registry
from graphtool.proto import AttrValue, GraphDef, NodeDef, TensorProto

ROOT = Path(__file__).resolve().parents[2]
# Fixture families whose graphs are used as seeds (small files only: the mutations, not the sizes,
# are what is under test, and small seeds keep every run fast).
SEED_DIRS = ("sample_graphs", "tests/fixtures/tf", "tests/fixtures/tf2", "tests/fixtures/functional",
             "tests/fixtures/training")
MAX_SEED_BYTES = 12_000

ALL_OPS = sorted(registry.all_ops())
UNKNOWN_OPS = ["NoSuchOp", "", "const", "Placeholder ", "_Arg", "_Retval", "_Send", "_Recv"]
CONTROL_OPS = ["Enter", "Exit", "NextIteration", "Merge", "Switch", "LoopCond", "RefEnter", "RefSwitch"]
VALID_DTYPES = [1, 2, 3, 4, 5, 6, 7, 9, 10, 14, 17, 19, 22, 23]  # float..uint64
ODD_DTYPES = [0, 8, 11, 12, 13, 15, 16, 18, 20, 21, 24, 99, 101, 103, 110, 121, 1000, -1, 2**31 - 1]
ODD_INTS = [-1, 0, -2**31, 2**31 - 1, 2**31, 2**40, -2**63, 2**63 - 1, 7, 1000]
HUGE_DIMS = [2**31, 2**40, 2**62, 10**6, 65536]
FRAMES = ["", "while", "other_frame", "while/while", "f" * 300]


@dataclass
class Seed:
    name: str          # path relative to the repository root
    graph_def: GraphDef


@dataclass
class Mutant:
    seed: str
    index: int
    mutations: list[str] = field(default_factory=list)
    graph_def: GraphDef | None = None

    def serialize(self) -> bytes:
        return self.graph_def.SerializeToString()


def load_seeds(root: Path = ROOT, max_bytes: int = MAX_SEED_BYTES, limit: int | None = None) -> list[Seed]:
    """The seed graphs, sorted by path (deterministic); files that do not parse are skipped."""
    paths: list[Path] = []
    for directory in SEED_DIRS:
        base = root / directory
        if base.is_dir():
            paths.extend(p for p in base.rglob("*.pb") if p.stat().st_size <= max_bytes)
    seeds = []
    for path in sorted(paths):
        graph_def = GraphDef()
        try:
            graph_def.ParseFromString(path.read_bytes())
        except Exception:  # noqa: BLE001 - a seed that is not a GraphDef (e.g. a SavedModel proto)
            continue
        if graph_def.node:
            seeds.append(Seed(str(path.relative_to(root)), graph_def))
    if limit is not None and len(seeds) > limit:
        # An even spread over the families rather than the first few alphabetically.
        step = len(seeds) / limit
        seeds = [seeds[int(i * step)] for i in range(limit)]
    return seeds


# --- helpers ---------------------------------------------------------------------------------------

def _all_nodes(graph_def: GraphDef) -> list[NodeDef]:
    """Graph nodes and function-body nodes alike: mutations reach into the library too."""
    nodes = list(graph_def.node)
    for function in graph_def.library.function:
        nodes.extend(function.node_def)
    return nodes


def _pick_node(rng: random.Random, graph_def: GraphDef, pred=None) -> NodeDef | None:
    nodes = [n for n in _all_nodes(graph_def) if pred is None or pred(n)]
    return rng.choice(nodes) if nodes else None


def _node_names(graph_def: GraphDef) -> list[str]:
    return [n.name for n in graph_def.node]


def _random_tensor_name(rng: random.Random, graph_def: GraphDef) -> str:
    names = _node_names(graph_def) or ["x"]
    name = rng.choice(names)
    return name if rng.random() < 0.7 else f"{name}:{rng.choice([1, 2, 5])}"


def _random_shape(rng: random.Random, shape) -> None:
    shape.Clear()
    choice = rng.random()
    if choice < 0.15:
        shape.unknown_rank = True
        return
    rank = rng.choice([0, 1, 2, 3, 4, 8, 33])
    for _ in range(rank):
        shape.dim.add().size = rng.choice([-1, -1, 0, 1, 2, 3, -5] + HUGE_DIMS)


def _random_tensor(rng: random.Random, tensor: TensorProto) -> None:
    """Replace a tensor with one of the known hostile shapes of tensor: filled, mismatched, huge."""
    dtype = rng.choice(VALID_DTYPES + [7, 0, 99])
    tensor.Clear()
    tensor.dtype = dtype
    kind = rng.randrange(6)
    dims = [rng.choice([0, 1, 2, 3, 4, -1, -7] + HUGE_DIMS) for _ in range(rng.choice([0, 1, 2, 3]))]
    for d in dims:
        tensor.tensor_shape.dim.add().size = d
    if kind == 0:
        tensor.tensor_content = bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 3, 4, 7, 16])))
    elif kind == 1:
        tensor.float_val.extend([rng.uniform(-1e3, 1e3) for _ in range(rng.choice([0, 1, 2, 5]))])
    elif kind == 2:
        tensor.int_val.extend([rng.choice(ODD_INTS[:4] + [0, 1, 3]) for _ in range(rng.choice([1, 2, 5]))])
    elif kind == 3:
        tensor.string_val.extend([b"ab", b"\xff\x00"][: rng.choice([1, 2])])
    elif kind == 4:
        tensor.int64_val.extend([rng.choice(ODD_INTS) for _ in range(rng.choice([1, 3]))])
    else:
        tensor.bool_val.extend([True, False][: rng.choice([1, 2])])


# --- mutations: each edits graph_def in place and returns a short description, or None -----------

def m_op_swap(rng, graph_def):
    node = _pick_node(rng, graph_def)
    if node is None:
        return None
    pool = rng.choice([ALL_OPS, UNKNOWN_OPS, CONTROL_OPS,
                       [f.signature.name for f in graph_def.library.function] or UNKNOWN_OPS])
    old, node.op = node.op, rng.choice(pool)
    return f"op {node.name}: {old} -> {node.op!r}"


def m_attr_value(rng, graph_def):
    node = _pick_node(rng, graph_def, lambda n: len(n.attr) > 0)
    if node is None:
        return None
    key = rng.choice(sorted(node.attr))
    attr = node.attr[key]
    kind = attr.WhichOneof("value")
    choice = rng.randrange(10)
    new = AttrValue()
    if choice == 0:
        new.i = rng.choice(ODD_INTS)
    elif choice == 1:
        new.type = rng.choice(ODD_DTYPES + VALID_DTYPES)
    elif choice == 2:
        _random_shape(rng, new.shape)
    elif choice == 3:
        new.s = rng.choice([b"", b"NHWC", b"VALID", b"\xff\xfe", b"loc:@nowhere", b"x" * 1000])
    elif choice == 4:
        new.f = rng.choice([float("nan"), float("inf"), -1.0, 1e30, 0.0])
    elif choice == 5:
        new.b = rng.random() < 0.5
    elif choice == 6:
        _random_tensor(rng, new.tensor)
    elif choice == 7:  # list <-> scalar swaps and odd lists
        if kind == "list":
            lst = attr.list
            if lst.i:
                new.i = lst.i[0]
            elif lst.type:
                new.type = lst.type[0]
            elif lst.s:
                new.s = lst.s[0]
            else:
                new.list.SetInParent()
        else:
            which = rng.randrange(4)
            if which == 0:
                new.list.i.extend([rng.choice(ODD_INTS) for _ in range(rng.choice([0, 1, 2, 4, 5]))])
            elif which == 1:
                new.list.type.extend([rng.choice(ODD_DTYPES + VALID_DTYPES) for _ in range(rng.choice([0, 1, 3]))])
            elif which == 2:
                new.list.s.extend([b"loc:@" + rng.choice(_node_names(graph_def) or ["x"]).encode(), b""])
            else:
                for _ in range(rng.choice([0, 1, 2])):
                    _random_shape(rng, new.list.shape.add())
    elif choice == 8:
        new.func.name = rng.choice([f.signature.name for f in graph_def.library.function] + ["no_such_fn", ""])
    else:
        del node.attr[key]
        return f"attr {node.name}.{key}: deleted"
    node.attr[key].CopyFrom(new)
    return f"attr {node.name}.{key}: {kind} -> {new.WhichOneof('value')}"


def m_int_attr(rng, graph_def):
    """Out-of-range values where an int (or list of ints) is expected: axis, N, strides, k..."""
    node = _pick_node(rng, graph_def, lambda n: any(a.WhichOneof("value") == "i" or a.list.i
                                                   for a in n.attr.values()))
    if node is None:
        return None
    keys = [k for k, a in sorted(node.attr.items()) if a.WhichOneof("value") == "i" or a.list.i]
    key = rng.choice(keys)
    attr = node.attr[key]
    if attr.WhichOneof("value") == "i":
        attr.i = rng.choice(ODD_INTS + [attr.i + 1, attr.i - 1, -attr.i])
    else:
        values = list(attr.list.i)
        pos = rng.randrange(len(values))
        values[pos] = rng.choice(ODD_INTS)
        if rng.random() < 0.3:
            values = values[:-1] if rng.random() < 0.5 else values + [1]
        del attr.list.i[:]
        attr.list.i.extend(values)
    return f"int {node.name}.{key}"


def m_dtype(rng, graph_def):
    node = _pick_node(rng, graph_def, lambda n: any(a.WhichOneof("value") == "type" for a in n.attr.values()))
    if node is None:
        return None
    key = rng.choice(sorted(k for k, a in node.attr.items() if a.WhichOneof("value") == "type"))
    node.attr[key].type = rng.choice(VALID_DTYPES + ODD_DTYPES if rng.random() < 0.3 else VALID_DTYPES)
    return f"dtype {node.name}.{key} = {node.attr[key].type}"


def m_shape(rng, graph_def):
    node = _pick_node(rng, graph_def, lambda n: "shape" in n.attr or "_output_shapes" in n.attr
                      or n.op in ("Placeholder", "Reshape", "Fill", "Const"))
    if node is None:
        return None
    if "_output_shapes" in node.attr and rng.random() < 0.4:
        shapes = node.attr["_output_shapes"].list.shape
        if shapes:
            _random_shape(rng, shapes[rng.randrange(len(shapes))])
        return f"_output_shapes {node.name}"
    _random_shape(rng, node.attr["shape"].shape)
    return f"shape {node.name}"


def m_tensor(rng, graph_def):
    node = _pick_node(rng, graph_def, lambda n: any(a.WhichOneof("value") == "tensor" for a in n.attr.values()))
    if node is None:
        return None
    key = rng.choice(sorted(k for k, a in node.attr.items() if a.WhichOneof("value") == "tensor"))
    tensor = node.attr[key].tensor
    choice = rng.randrange(6)
    if choice == 0 and tensor.tensor_content:  # truncate
        tensor.tensor_content = tensor.tensor_content[: rng.randrange(len(tensor.tensor_content))]
        what = "truncated"
    elif choice == 1:  # extend
        tensor.tensor_content = tensor.tensor_content + bytes(rng.choice([1, 3, 4, 8, 64]))
        what = "extended"
    elif choice == 2:  # huge claimed shape with a filled value
        del tensor.tensor_shape.dim[:]
        for _ in range(rng.choice([1, 2, 3])):
            tensor.tensor_shape.dim.add().size = rng.choice(HUGE_DIMS)
        tensor.ClearField("tensor_content")
        what = "huge"
    elif choice == 3:  # negative or changed dims
        if tensor.tensor_shape.dim:
            tensor.tensor_shape.dim[rng.randrange(len(tensor.tensor_shape.dim))].size = rng.choice([-1, -3, 0, 2, 7])
        else:
            tensor.tensor_shape.dim.add().size = rng.choice([-1, 0, 3])
        what = "dims"
    elif choice == 4:  # dtype changed under the content
        tensor.dtype = rng.choice(VALID_DTYPES + ODD_DTYPES)
        what = "dtype"
    else:
        _random_tensor(rng, tensor)
        what = "replaced"
    return f"tensor {node.name}.{key}: {what}"


_ODD_VALUES = [0, -1, 1, -5, 3, 2**31 - 1, -2**31, 10**6, 10**12, 1e30, float("nan"), float("inf"), -0.0]
_VALUE_FIELDS = ("float_val", "double_val", "int_val", "int64_val", "half_val")


def m_const_values(rng, graph_def):
    """Odd values in a small constant, its dtype and shape kept: the graph stays valid and the
    value reaches what reads it (a loop bound, a Reshape target, a Fill dims, an axis, a divisor)."""
    def small(n):
        t = n.attr["value"].tensor if "value" in n.attr else None
        return n.op == "Const" and t is not None and t.dtype in _NUMPY_DTYPES and t.dtype not in (7, 10) \
            and (len(t.tensor_content) <= 256 and (t.tensor_content or any(getattr(t, f) for f in _VALUE_FIELDS)))
    node = _pick_node(rng, graph_def, small)
    if node is None:
        return None
    tensor = node.attr["value"].tensor
    np_dtype = np.dtype(_NUMPY_DTYPES[tensor.dtype])
    new = rng.choice(_ODD_VALUES)
    with np.errstate(all="ignore"):
        cast = np.array(new).astype(np_dtype) if np_dtype.kind == "f" or np.isfinite(new) else np_dtype.type(0)
    if tensor.tensor_content:
        values = np.frombuffer(tensor.tensor_content[: len(tensor.tensor_content) // np_dtype.itemsize
                                                     * np_dtype.itemsize], np_dtype).copy()
        if not values.size:
            return None
        values[rng.randrange(values.size)] = cast
        tensor.tensor_content = values.tobytes()
    else:
        field_name = next(f for f in _VALUE_FIELDS if getattr(tensor, f))
        values = getattr(tensor, field_name)
        position = rng.randrange(len(values))
        if field_name == "half_val":
            values[position] = int(np.array(cast, np.float16).view(np.uint16))
        elif field_name in ("int_val", "int64_val"):
            values[position] = int(cast)
        else:
            values[position] = float(cast)
    return f"value {node.name}: {new}"


def m_input(rng, graph_def):
    node = _pick_node(rng, graph_def)
    if node is None:
        return None
    names = _node_names(graph_def) or ["x"]
    choice = rng.randrange(10)
    if choice == 0:
        new = rng.choice(["nowhere", "nowhere:1", "", ":", "a:b:c", "^", "^^x", " x"])
    elif choice == 1:
        new = "^" + rng.choice(names)
    elif choice == 2:
        new = f"{rng.choice(names)}:{rng.choice([1, 2, 9, 2**31, -1])}"
    elif choice == 3:
        new = node.name  # self-loop
    elif choice == 4:
        new = f"{node.name}:{rng.choice([0, 1])}" if rng.random() < 0.5 else "^" + node.name
    elif choice == 5 and node.input:  # drop one input
        pos = rng.randrange(len(node.input))
        removed = node.input[pos]
        del node.input[pos]
        return f"input {node.name}: dropped {removed!r}"
    elif choice == 6 and len(node.input) >= 2:  # reorder (a control input before data ones, or swaps)
        inputs = list(node.input)
        rng.shuffle(inputs)
        del node.input[:]
        node.input.extend(inputs)
        return f"input {node.name}: shuffled"
    elif choice == 7:  # a cycle: make a consumer of this node its input
        consumers = [n.name for n in graph_def.node if any(i.lstrip("^").split(":")[0] == node.name
                                                          for i in n.input)]
        if not consumers:
            return None
        new = rng.choice(consumers)
    else:
        new = f"{rng.choice(names)}:{rng.choice([0, 0, 1])}"
    if node.input and rng.random() < 0.6:
        node.input[rng.randrange(len(node.input))] = new
        how = "replaced"
    else:
        node.input.append(new)
        how = "appended"
    return f"input {node.name}: {how} {new!r}"


def m_frame(rng, graph_def):
    node = _pick_node(rng, graph_def, lambda n: n.op in CONTROL_OPS or n.op in ("RefEnter", "RefExit"))
    if node is None:
        return None
    names = _node_names(graph_def) or ["x"]
    choice = rng.randrange(4)
    if choice == 0 and "frame_name" in node.attr:
        node.attr["frame_name"].s = rng.choice(FRAMES).encode()
        return f"frame {node.name}: renamed"
    if choice == 1:
        node.op = rng.choice(CONTROL_OPS)
        return f"frame {node.name}: op -> {node.op}"
    if choice == 2 and node.input:
        node.input[0] = rng.choice(names)
        return f"frame {node.name}: rewired"
    if "is_constant" in node.attr:
        node.attr["is_constant"].b = not node.attr["is_constant"].b
    node.attr["parallel_iterations"].i = rng.choice([0, -1, 1, 2**31 - 1])
    return f"frame {node.name}: attrs"


def m_duplicate(rng, graph_def):
    if not graph_def.node:
        return None
    node = graph_def.node[rng.randrange(len(graph_def.node))]
    copy = graph_def.node.add()
    copy.CopyFrom(node)
    if rng.random() < 0.4:
        copy.name = node.name + "_dup"
        return f"duplicate {node.name} (renamed)"
    return f"duplicate {node.name}"


def m_delete(rng, graph_def):
    if len(graph_def.node) <= 1:
        return None
    pos = rng.randrange(len(graph_def.node))
    name = graph_def.node[pos].name
    del graph_def.node[pos]
    return f"delete {name}"


def m_rename(rng, graph_def):
    node = _pick_node(rng, graph_def)
    if node is None:
        return None
    old = node.name
    node.name = rng.choice(["", "^x", "a:1", "a b", old + "/", "_SOURCE", "x" * 500,
                            rng.choice(_node_names(graph_def) or ["x"])])
    return f"rename {old} -> {node.name!r}"


def m_device(rng, graph_def):
    node = _pick_node(rng, graph_def)
    if node is None:
        return None
    node.device = rng.choice(["/device:GPU:0", "/device:CPU:7", "garbage", "/job:x/task:-1/device:CPU:0",
                              "/device:CPU:*", "/job:localhost/replica:0/task:0/device:CPU:1", "cpu:1",
                              "/device:TPU:0", ""])
    return f"device {node.name}: {node.device!r}"


def m_colocation(rng, graph_def):
    node = _pick_node(rng, graph_def)
    if node is None:
        return None
    names = _node_names(graph_def) or ["x"]
    attr = node.attr["_class"]
    choice = rng.randrange(3)
    if choice == 0:
        attr.Clear()
        attr.list.s.extend([b"loc:@" + rng.choice(names + ["missing"]).encode()])
    elif choice == 1:
        attr.Clear()
        attr.s = b"loc:@" + rng.choice(names).encode()
    else:
        attr.Clear()
        attr.list.s.extend([b"loc:@" + node.name.encode(), b"garbage", b"loc:@"])
    return f"_class {node.name}"


def m_library(rng, graph_def):
    functions = graph_def.library.function
    if not functions:
        # Wrap nothing: add a bogus function and a call to it.
        function = functions.add()
        function.signature.name = "fuzz_fn"
        arg = function.signature.input_arg.add()
        arg.name, arg.type = "a", 1
        out = function.signature.output_arg.add()
        out.name, out.type = "b", rng.choice([1, 3, 0])
        function.ret["b"] = rng.choice(["a", "a:0", "missing:0", ""])
        return "library: added fuzz_fn"
    function = functions[rng.randrange(len(functions))]
    choice = rng.randrange(6)
    if choice == 0:
        function.signature.name = rng.choice(["", "renamed_fn", functions[0].signature.name])
        return "library: renamed function"
    if choice == 1 and function.signature.input_arg:
        arg = function.signature.input_arg[rng.randrange(len(function.signature.input_arg))]
        arg.type = rng.choice(VALID_DTYPES + ODD_DTYPES)
        return "library: input_arg type"
    if choice == 2 and function.ret:
        key = rng.choice(sorted(function.ret))
        function.ret[key] = rng.choice(["missing:out:0", "", "x", function.ret[key] + ":7"])
        return "library: ret"
    if choice == 3 and function.signature.output_arg:
        del function.signature.output_arg[-1]
        return "library: dropped output_arg"
    if choice == 4 and function.node_def:
        del function.node_def[rng.randrange(len(function.node_def))]
        return "library: dropped body node"
    del functions[rng.randrange(len(functions))]
    return "library: deleted function"


MUTATIONS = [
    (m_op_swap, 3), (m_attr_value, 4), (m_int_attr, 3), (m_dtype, 3), (m_shape, 3), (m_tensor, 3),
    (m_input, 4), (m_frame, 2), (m_duplicate, 1), (m_delete, 1), (m_rename, 1), (m_device, 1),
    (m_colocation, 1), (m_library, 2), (m_const_values, 6),
]


def mutate(seeds: list[Seed], seed: int, index: int) -> Mutant:
    """The index-th mutant of a run with this seed: a seed graph and one to three mutations."""
    rng = random.Random(f"{seed}:{index}")
    base = seeds[rng.randrange(len(seeds))]
    graph_def = GraphDef()
    graph_def.CopyFrom(base.graph_def)
    mutant = Mutant(base.name, index, graph_def=graph_def)
    functions, weights = zip(*MUTATIONS)
    wanted = rng.choice([1, 1, 2, 3])
    tries = 0
    while len(mutant.mutations) < wanted and tries < 20:
        tries += 1
        mutation = rng.choices(functions, weights)[0]
        description = mutation(rng, graph_def)
        if description:
            mutant.mutations.append(description)
    return mutant


# --- what to ask of each command -------------------------------------------------------------

_NUMPY_DTYPES = {1: np.float32, 2: np.float64, 3: np.int32, 4: np.uint8, 5: np.int16, 6: np.int8,
                 7: np.bytes_, 9: np.int64, 10: np.bool_, 17: np.uint16, 19: np.float16,
                 22: np.uint32, 23: np.uint64}
FLOAT_DTYPES = (1, 2, 19)


def placeholder_feeds(graph_def: GraphDef, rng: random.Random, max_elements: int = 4096) -> dict:
    """Random values for the graph's Placeholders from their dtype/shape attrs (unknown dims -> 2);
    placeholders whose dtype or shape cannot be fed are left out (the command then says so)."""
    feeds = {}
    for node in graph_def.node:
        if node.op != "Placeholder":
            continue
        np_dtype = _NUMPY_DTYPES.get(node.attr["dtype"].type) if "dtype" in node.attr else None
        if np_dtype is None:
            continue
        shape_attr = node.attr["shape"].shape if "shape" in node.attr else None
        if shape_attr is None or shape_attr.unknown_rank:
            dims = [2]
        else:
            dims = [d.size if d.size >= 0 else 2 for d in shape_attr.dim]
        if len(dims) > 8 or math.prod(dims) > max_elements or any(d > max_elements for d in dims):
            continue
        if np_dtype is np.bytes_:
            value = np.full(dims, b"ab", dtype=object).astype(np.bytes_)
        elif np_dtype is np.bool_:
            value = np.array([rng.random() < 0.5 for _ in range(int(np.prod(dims)))]).reshape(dims)
        else:
            value = (np.arange(int(np.prod(dims))) % 5).astype(np_dtype).reshape(dims)
        feeds[node.name] = value
    return feeds


def float_node(graph_def: GraphDef, rng: random.Random) -> str | None:
    """A node whose output is (probably) floating point, for `grad --y`."""
    candidates = [n.name for n in graph_def.node
                  if any(n.attr[k].type in FLOAT_DTYPES for k in ("T", "dtype") if k in n.attr)]
    if not candidates:
        return None
    return rng.choice(candidates)


def output_nodes(graph_def: GraphDef) -> list[str]:
    consumed = {i.lstrip("^").split(":")[0] for n in graph_def.node for i in n.input}
    return [n.name for n in graph_def.node if n.name not in consumed]
