"""A SavedModel signature as one frozen, self-contained graph every command can work on.

    graph, info = load_saved_model("model_dir", "serving_default")

Steps:
1. read saved_model.pb(.pbtxt), take the MetaGraph tagged "serve" and the signature;
2. map variable handles to checkpoint keys through the saver's restore op (restore_map.py);
3. cut the GraphDef down to what the signature's outputs need (the save/restore machinery holds
   ops no signature uses), import it, and lower functional ops (calls, If, While, Case) to v1
   control flow so that variables captured by functions become visible handles;
   The SavedModel's init op comes along when it fills lookup tables: every table lookup waits
   for it by a control edge, so tables are filled in the frozen graph's every step;
4. freeze: read the variables from variables/variables.{index,data-*} and replace the handles and
   their readers by Consts (freeze.py);
5. prune to the signature (its inputs become the graph's feeds, its outputs its fetches) and make
   the signature's keys usable as names: each output gets an Identity named after its key (unless
   a signature tensor's node holds that name: then a fresh name carrying SIGNATURE_OUTPUT_ATTR),
   and each input's feed node carries SIGNATURE_INPUT_ATTR = key, which the session's feed
   resolution accepts.
   Both are ordinary graph content, so they survive `dftool prune DIR - | dftool run -`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import dtypes
from ..checkpoint import BundleReader, CheckpointError
from ..errors import InvalidGraphError
from ..functions.library import drop_unreferenced
from ..functions.lowering import lower_functional_ops, needs_lowering
from ..ir import Graph, from_graphdef
from ..proto.graph_pb2 import GraphDef
from ..prune import SIGNATURE_INPUT_ATTR, SIGNATURE_OUTPUT_ATTR, prune
from .freeze import REF_VARIABLE_OPS, freeze_variables
from .reader import (DEFAULT_SIGNATURE, Signature, find_saved_model, read_saved_model, select_signature,
                     serving_meta_graph, signatures)
from .restore_map import checkpoint_keys

VARIABLES_PREFIX = Path("variables") / "variables"


@dataclass
class SavedModelInfo:
    path: str                                   # as the user gave it
    directory: Path
    tags: list[str]
    signature: Signature                        # the one loaded
    signatures: dict[str, Signature]            # every user-facing one
    variables: dict[str, str] = field(default_factory=dict)   # frozen node -> checkpoint key
    unfrozen: dict[str, str] = field(default_factory=dict)    # variable restored per step -> why
    lowered: bool = False

    def notice(self) -> str:
        """The one line commands print on stderr after loading."""
        sig = self.signature
        text = (f"SavedModel {self.path}: signature '{sig.key}' ({len(sig.inputs)} input(s), {len(sig.outputs)} "
                f"output(s)), {len(self.variables)} variable(s) frozen" + (", functions lowered" if self.lowered else ""))
        if self.unfrozen:
            name, why = next(iter(self.unfrozen.items()))
            more = f" (and {len(self.unfrozen) - 1} more)" if len(self.unfrozen) > 1 else ""
            text += f"; variable '{name}' stays a variable, restored at the start of every step ({why}){more}"
        return text

    def to_json(self) -> dict:
        return {"path": self.path, "tags": self.tags, "signature": self.signature.key,
                "signatures": [s.to_json() for s in self.signatures.values()],
                "variables_frozen": len(self.variables), "variables_unfrozen": self.unfrozen,
                "lowered_functions": self.lowered}


def is_saved_model(path: str) -> bool:
    return find_saved_model(path) is not None


def load_saved_model(path: str, signature: str | None = None, *, verify: bool = True) -> tuple[Graph, SavedModelInfo]:
    """The frozen graph of one signature (default serving_default) of the SavedModel at `path`
    (its directory or its saved_model.pb(.pbtxt)). UsageError (exit 2) for an unknown signature,
    InvalidGraphError/CheckpointError (exit 3) naming the file for anything unreadable."""
    file = find_saved_model(path)
    if file is None:
        raise InvalidGraphError(f"{path}: not a SavedModel (no saved_model.pb or saved_model.pbtxt)")
    meta = serving_meta_graph(read_saved_model(file), path)
    chosen = select_signature(meta, signature or DEFAULT_SIGNATURE, path)
    info = SavedModelInfo(path, file.parent, list(meta.meta_info_def.tags), chosen, signatures(meta, path))
    keys = checkpoint_keys(meta, str(file))

    initializers = _table_initializers(meta, str(file))
    needed = _needed_part(meta.graph_def, [t.tensor for t in chosen.inputs + chosen.outputs] + initializers, str(file))
    graph = from_graphdef(needed, str(file), verify=False)
    info.lowered = _lower(graph)
    _initialize_tables_first(graph, initializers)
    values = _read_variables(graph, keys, info.directory / VARIABLES_PREFIX, str(file))
    report = freeze_variables(graph, values)
    info.variables = {name: keys[name].key for name in report.frozen}
    # A variable the signature also writes stays a variable, restored at the start of each step.
    info.unfrozen = dict(report.restored_per_step)

    graph, pruned = prune(graph, [t.tensor for t in chosen.outputs], [t.tensor for t in chosen.inputs])
    _name_signature_tensors(graph, chosen, {feed.tensor: feed.node for feed in pruned.feeds})
    drop_unreferenced(graph)   # e.g. the save and restore functions
    if verify:
        graph.verify()
    return graph, info


# --- steps ------------------------------------------------------------------------------------------

def _needed_part(graph_def: GraphDef, tensors: list[str], source: str) -> GraphDef:
    """The nodes the signature's tensors depend on (data and control inputs), in file order."""
    nodes = {n.name: n for n in graph_def.node}
    stack = [t.split(":")[0] for t in tensors]
    for name in stack:
        if name not in nodes:
            raise InvalidGraphError(f"{source}: the signature names tensor '{name}', which is not in the graph")
    needed: set[str] = set()
    while stack:
        name = stack.pop()
        if name in needed or name not in nodes:
            continue
        needed.add(name)
        stack.extend(i.lstrip("^").split(":")[0] for i in nodes[name].input)
    out = GraphDef()
    out.versions.CopyFrom(graph_def.versions)
    out.library.CopyFrom(graph_def.library)
    out.node.extend(n for n in graph_def.node if n.name in needed)
    return out


# Where a SavedModel keeps the op that initializes its lookup tables (TF2: a signature; TF1: a
# collection), which TensorFlow's loader runs once before any signature.
_INIT_SIGNATURE = "__saved_model_init_op"
_INIT_COLLECTIONS = ("saved_model_main_op", "legacy_init_op")
_TABLE_FILLERS = {"InitializeTableV2", "InitializeTable", "LookupTableImportV2", "LookupTableImport",
                  "InitializeTableFromTextFileV2", "InitializeTableFromTextFile"}
_TABLE_READERS = {"LookupTableFindV2", "LookupTableFind", "LookupTableSizeV2", "LookupTableSize",
                  "LookupTableExportV2"}
_VARIABLE_OPS = {"VariableV2", "Variable", "VarHandleOp", "Assign", "AssignVariableOp"}


def _table_initializers(meta, source: str) -> list[str]:
    """The SavedModel's init op when it fills lookup tables and touches no variable (variables
    are frozen from the checkpoint instead), else nothing."""
    if _INIT_SIGNATURE in meta.signature_def:
        names = [t.name for t in meta.signature_def[_INIT_SIGNATURE].outputs.values()]
    else:
        names = next((list(meta.collection_def[key].node_list.value) for key in _INIT_COLLECTIONS
                      if key in meta.collection_def), [])
    names = [name.lstrip("^").split(":")[0] for name in names]
    if not names or any(name not in {n.name for n in meta.graph_def.node} for name in names):
        return []
    part = _needed_part(meta.graph_def, names, source)
    functions = {f.signature.name: f for f in part.library.function}
    ops, pending, seen = set(), list(part.node), set()
    while pending:   # ops of the part and of every function it calls
        node = pending.pop()
        ops.add(node.op)
        for value in node.attr.values():
            for name in [value.func.name] + [f.name for f in value.list.func]:
                if name in functions and name not in seen:
                    seen.add(name)
                    pending.extend(functions[name].node_def)
        if node.op in functions and node.op not in seen:
            seen.add(node.op)
            pending.extend(functions[node.op].node_def)
    return names if ops & _TABLE_FILLERS and not ops & _VARIABLE_OPS else []


def _initialize_tables_first(graph: Graph, initializers: list[str]) -> None:
    """Make every table lookup wait for the init op: it then runs in each step, which refills a
    static table with the entries it already has (a no-op) before it is read, so the frozen
    graph needs no separate initialization run."""
    inits = [node for node in map(graph.get, initializers) if node is not None]
    if not inits:
        return
    upstream, stack = set(), list(inits)
    while stack:   # what the init op itself needs must not wait for it
        node = stack.pop()
        if node not in upstream:
            upstream.add(node)
            stack.extend(ref.node for ref in node.inputs)
            stack.extend(node.control_inputs)
    for node in list(graph.nodes):
        if node.op in _TABLE_READERS and node not in upstream:
            for init in inits:
                node.add_control_input(init)


def _lower(graph: Graph) -> bool:
    """Inline function calls and lower If/While/Case, so captured variables become plain handles."""
    if not needs_lowering(graph):
        return False
    lower_functional_ops(graph)
    return True


def _read_variables(graph: Graph, keys: dict, prefix: Path, source: str) -> dict[str, np.ndarray]:
    """Values of the graph's variable handles from the bundle, checked against their attrs."""
    handles = [n for n in graph.nodes if n.op == "VarHandleOp" or n.op in REF_VARIABLE_OPS]
    if not handles:
        return {}
    missing = [n.name for n in handles if n.name not in keys]
    if missing:
        raise InvalidGraphError(f"{source}: variable '{missing[0]}' is not restored by the SavedModel's restore op"
                                + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    reader = BundleReader(prefix)
    values = {}
    for node in handles:
        key, spec = keys[node.name]
        if key not in reader:
            raise CheckpointError(f"{reader.index_path}: no tensor '{key}' (the value of variable '{node.name}')")
        value = reader.read_slice(key, spec)
        want = node.attr("dtype").base
        if dtypes.from_numpy(value.dtype) is not want and not (want is dtypes.string and value.dtype == object):
            raise CheckpointError(f"{reader.index_path}: tensor '{key}' is {reader.entry(key).dtype}, "
                                  f"variable '{node.name}' holds {want}")
        shape = node.attr("shape", None)
        if shape is not None and not shape.is_compatible_with(value.shape):
            raise CheckpointError(f"{reader.index_path}: tensor '{key}'{f' [{spec}]' if spec else ''} has shape "
                                  f"{list(value.shape)}, variable '{node.name}' is {shape}")
        values[node.name] = value
    return values


def _name_signature_tensors(graph: Graph, signature: Signature, feed_nodes: dict[str, str]) -> None:
    """Identity nodes named after output keys, SIGNATURE_INPUT_ATTR on the feed nodes (which
    prune made or kept for each input tensor: `feed_nodes`)."""
    for tensor in signature.inputs:
        graph.node(feed_nodes[tensor.tensor]).set_attr(SIGNATURE_INPUT_ATTR, tensor.key, "string")
    # Nodes the signature names by tensor name keep their names; any other node that holds an
    # output key's name gives it up (optimize keeps fetched names, not attrs, so a name is the
    # alias that survives every later command).
    named = {t.tensor.partition(":")[0] for t in signature.inputs + signature.outputs} | set(feed_nodes.values())
    for tensor in signature.outputs:
        ref = graph.tensor(tensor.tensor)
        if ref.index == 0 and ref.node.name == tensor.key:
            continue
        holder = graph.get(tensor.key)
        if holder is not None and holder.name not in named:
            graph.rename(holder, graph.unique_name(tensor.key))
        name = graph.unique_name(tensor.key)
        dtype = ref.node.spec.output_dtypes(ref.node)[ref.index] if ref.node.spec else None
        attrs = {"T": dtype} if dtype is not None else {}
        if name != tensor.key:
            attrs[SIGNATURE_OUTPUT_ATTR] = tensor.key
        graph.add_node("Identity", name, [ref], attrs=attrs, device=ref.node.device)
