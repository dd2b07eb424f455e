"""Session: run a graph for some fetches given some feeds, the way `dftool run` does.

It validates feeds and fetches against the graph (names, dtypes, shapes), prunes the graph to what
the fetches need, puts every node on the chosen device, compiles one plan per (fetches, feeds)
signature and executes it.
"""
from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes
from ..errors import RuntimeFailure, UsageError
from ..suggest import did_you_mean, join_hints
from ..functions.lowering import lower_functional_ops, needs_lowering
from ..ir import Graph, TensorRef, parse_tensor_name
from ..ir.queries import picked_outputs
from ..ops.core import FED_INPUT_OPS
from ..ops import opaque
from ..prune import SIGNATURE_INPUT_ATTR, SIGNATURE_OUTPUT_ATTR, fed_tensor_aliases, needed_nodes, retval_names
from ..shape_inference import infer_shapes
from ..shapes import Shape
from .device_factory import create_device
from .devices import Device, FakeGPUDevice
from .executor import Executor
from .kernels.state import Uninitialized
from .multi_device import compile_multi_device, needs_multi_device, single_device_moves, with_peer_sends
from .plan import compile_plan
from .resources import SessionResources, StepResources
from .step_stats import StepStats

if TYPE_CHECKING:   # the JIT sits above the executor: it is imported when a session compiles with it
    from ..jit.engine import JitReport


@dataclass
class RunResult:
    values: list[np.ndarray | None]   # None: a dead fetch, with run(allow_dead=True)
    nodes_executed: int
    iterations: dict[str, int]
    devices: list[str] = field(default_factory=list)   # the devices whose executors ran
    step_stats: StepStats | None = None   # with run(trace=True): every node execution, memory
    notes: list[str] = field(default_factory=list)   # device requests soft placement moved
    moves: list = field(default_factory=list)   # the same, as multi_device.Moved entries
    transfer_bytes: int = 0   # on a cluster: bytes the step sent between tasks


class Session:
    def __init__(self, graph: Graph, device: Device | str = "cpu", threads: int | None = None,
                 check_numerics: bool = False, source: str | None = None, jit: bool | None = None,
                 cluster=None):
        # With jit (None: $DFTOOL_JIT), clusters of supported ops run as XLA programs through JAX
        # (graphtool/jit); UsageError naming the `jit` extra when JAX is missing.
        self.jit = _jit_enabled(jit)
        self.jit_report: JitReport | None = None   # what the JIT did, all compiled signatures
        # TF2 function graphs run as v1 control flow: lower a copy (the caller's graph stays as it was).
        # With jit, functional ops stay functional so that clusters can compile them whole; what
        # stays in the interpreter is lowered in each signature's pruned copy.
        self.lowering = None
        if not self.jit and needs_lowering(graph):
            graph = graph.copy()
            self.lowering = lower_functional_ops(graph)
        self.graph = graph
        self.source = source   # the file the graph came from, for error messages
        self.device = create_device(device) if isinstance(device, str) else device
        self.threads = threads
        self.check_numerics = check_numerics
        self.resources = SessionResources()   # variables live as long as the session
        self._shapes = infer_shapes(graph)
        # 'node:k' fed in a pruned graph -> its feed node; SavedModel signature keys
        self._aliases = {role: fed_tensor_aliases(graph, role) for role in ("feed", "fetch")}
        self._executors: dict[tuple, tuple[Executor, list, dict]] = {}
        self._resolved: dict[tuple[str, str], TensorRef] = {}   # steps name the same tensors again
        # Steps may run from several threads at once (as TensorFlow's Session allows): each has
        # its own step container and rendezvous; only compiling a new signature is serialised.
        self._compile_lock = threading.Lock()
        # Several devices named, or a partitioned graph: one executor per device (multi_device.py).
        self.multi_device = needs_multi_device(graph, self.device)
        # On a cluster (graphtool.cluster.Cluster) each signature is placed over its tasks and
        # registered on their workers; steps run there.
        self.cluster = None
        if cluster is not None:
            self.use_cluster(cluster)

    def use_cluster(self, cluster) -> None:
        """Run every later step on `cluster` (a graphtool.cluster.Cluster) instead of here."""
        if self.jit:
            raise UsageError("--jit and --cluster cannot be combined yet",
                             hint="run on the cluster without --jit, or with --jit in one process")
        self.cluster = cluster
        self.multi_device = True
        self._executors.clear()

    # --- names ----------------------------------------------------------------------------------
    def resolve(self, name: str, what: str) -> TensorRef:
        """A tensor named by the user; UsageError (exit 2) naming it when it does not exist."""
        key = (name, what)
        found = self._resolved.get(key)
        if found is None:
            found = self._resolved[key] = self._resolve(name, what)
        return found

    def _resolve(self, name: str, what: str) -> TensorRef:
        node_name, port = parse_tensor_name(name)
        aliased = self._aliases[what].get(f"{node_name}:{port}")
        if aliased is not None:
            return aliased
        node = self.graph.get(node_name)
        if node is None:
            raise UsageError(f"{what} '{name}': no node named '{node_name}' in the graph",
                             hint=self._name_hint(node_name, what))
        if node.op == "_Retval" and port == 0:   # fetching a call frame's result: its value
            return node.inputs[0]
        if port >= node.num_outputs:
            raise UsageError(f"{what} '{name}': node '{node_name}' ({node.op}) has {node.num_outputs} output(s)")
        return TensorRef(node, port)

    def resolve_node(self, name: str, what: str = "target"):
        """A node named by the user (`^name` too) to run as a target; UsageError (exit 2) naming
        it, as `what` (target, init), when it does not exist."""
        node = self.graph.get(name.lstrip("^"))
        if node is None:
            raise UsageError(f"{what} '{name}': no node named '{name.lstrip('^')}' in the graph",
                             hint=did_you_mean(name.lstrip("^"), (n.name for n in self.graph.nodes)))
        return node

    def _name_hint(self, name: str, what: str) -> str | None:
        """Close names (signature keys too); for a feed, also the inputs the graph has."""
        names = [n.name for n in self.graph.nodes] + [key.split(":")[0] for key in self._aliases[what]]
        if what != "feed":
            return did_you_mean(name, names)
        inputs = [(n.attr(SIGNATURE_INPUT_ATTR) if n.has_attr(SIGNATURE_INPUT_ATTR) else n.name, n)
                  for n in self.graph.nodes if n.op in FED_INPUT_OPS]
        listed = ", ".join(f"{key} ({self._describe(node.output(0))})" for key, node in inputs[:10])
        more = f", ... ({len(inputs) - 10} more)" if len(inputs) > 10 else ""
        return join_hints(did_you_mean(name, names),
                          f"the graph's placeholders: {listed}{more}" if inputs else "the graph has no placeholders")

    def default_fetches(self) -> list[str]:
        retvals = retval_names(self.graph)
        if retvals:   # a call-frame graph returns its _Retvals, in index order
            return retvals
        # A SavedModel output whose key names another node is fetched by its key. The graph's
        # real outputs: not loop counters, probes or cond bookkeeping (ir.queries.picked_outputs).
        picked, _ = picked_outputs(self.graph)
        return [ref.node.attr(SIGNATURE_OUTPUT_ATTR) if ref.node.has_attr(SIGNATURE_OUTPUT_ATTR) else ref.name
                for ref in picked]

    # --- running ----------------------------------------------------------------------------------
    def run(self, fetches: list[str], feeds: dict[str, np.ndarray] | None = None,
            timeout: float | None = None, targets: Sequence[str] = (), allow_dead: bool = False,
            trace: bool = False) -> RunResult:
        """Compute `fetches` (tensor names) after running `targets` (node names, e.g. an init op
        without outputs), given `feeds`. Feeds the fetches do not need are accepted and unused.
        A fetch on an untaken cond branch is an error, or None with `allow_dead`. With `trace`,
        the result's `step_stats` has every node execution and the memory in use per device."""
        feeds = feeds or {}
        fetch_refs = [self.resolve(name, "fetch") for name in fetches]
        target_nodes = [self.resolve_node(name, "target") for name in targets]
        feed_values = {self.resolve(name, "feed"): value for name, value in feeds.items()}
        checked = {ref: self._check_feed(ref, name, value)
                   for (name, value), ref in zip(feeds.items(), feed_values)}
        key = (tuple(fetch_refs), tuple(n.name for n in target_nodes),
               tuple(sorted((r.node.name, r.index) for r in checked)))
        compiled = self._executors.get(key)
        if compiled is None:
            with self._compile_lock:
                compiled = self._executors.get(key)
                if compiled is None:
                    compiled = self._executors[key] = self._compile(fetch_refs, target_nodes, checked)
        executor, fetch_pairs, fed_items = compiled
        device = self.device
        feed_outputs = {}
        for item, refs in fed_items.items():
            feed_outputs[item] = tuple(device.to_device(checked[r]) if r in checked else None for r in refs)
        step_fetches = list(fetch_pairs)
        stats = StepStats() if trace else None
        values, step = executor.run_step(feed_outputs, step_fetches, timeout=timeout,
                                         resources=StepResources(self.resources), allow_dead=allow_dead, stats=stats)
        for ref, value in zip(fetch_refs, values):
            if isinstance(value, Uninitialized):   # TensorFlow's FailedPrecondition, not a value
                raise RuntimeFailure(f"fetch '{ref.full_name}': attempting to use uninitialized value {value.name}",
                                     hint="run the variable's initializer first (dftool run --init OP)")
        host_values = [None if v is None else device.to_host(v) for v in values]
        return RunResult(host_values, step.nodes_executed, dict(step.iterations),
                         executor.device_names, stats.stop() if stats is not None else None,
                         notes=list(getattr(executor, "notes", ())), moves=list(getattr(executor, "moves", ())),
                         transfer_bytes=step.transfer_bytes)

    def _compile(self, fetch_refs, target_nodes, checked):
        fed_nodes = {ref.node for ref in checked}
        needed = needed_nodes(self.graph, [r.node for r in fetch_refs] + list(target_nodes), fed_nodes)
        if self.multi_device:  # a needed _Recv needs its _Send on another device
            needed = with_peer_sends(self.graph, needed, fed_nodes)
        fed_nodes &= needed
        # Everything unknown that must execute, named at once (a fed node need not execute).
        opaque.require_known([n for n in self.graph.nodes if n in needed and n not in fed_nodes],
                             "run the fetches", source=self.source)
        for node in needed:
            if node.op in FED_INPUT_OPS and node not in fed_nodes:
                # A SavedModel signature input is named by its key (the name users know).
                key = node.attr(SIGNATURE_INPUT_ATTR) if node.has_attr(SIGNATURE_INPUT_ATTR) else node.name
                what = f"signature input '{key}' (placeholder '{node.name}', " if key != node.name else \
                    f"placeholder '{node.name}' ("
                raise UsageError(f"missing feed for {what}{self._describe(node.output(0))})",
                                 hint=f"pass --feed {key}=FILE.npy or put '{key}' in --feeds")
        for node in fed_nodes:
            consumed_ports = {ref.index for ref in checked if ref.node is node}
            for consumer, slot in node.uses():
                port = consumer.inputs[slot].index
                if consumer in needed and port not in consumed_ports:
                    raise UsageError(f"node '{node.name}' is fed on output(s) {sorted(consumed_ports)} but "
                                     f"'{consumer.name}' also needs its output {port}; feed every used output")
        from ..prune import pruned_copy

        pruned = pruned_copy(self.graph, needed, fed_nodes)
        if self.cluster is not None:
            return self.cluster.compile(self, pruned, fed_nodes, fetch_refs, target_nodes)
        if self.multi_device:
            if self.jit and needs_lowering(pruned):   # placement and partitioning see v1 control flow
                lower_functional_ops(pruned)
            return compile_multi_device(self, pruned, fed_nodes, fetch_refs, target_nodes)
        moved = {}
        if self.jit:
            moved = self.jit_compile(pruned, self.device.name, fetch_refs, fed_nodes, target_nodes)
        plan = compile_plan(pruned, self.device, {n.name for n in fed_nodes})
        executor = Executor(plan, self.threads, check_numerics=self.check_numerics,
                            targets=[plan.item_of[n.name] for n in target_nodes])
        # Nodes that ask for another device (e.g. a graph pinned whole to a missing GPU) run here.
        executor.moves = single_device_moves(pruned.nodes, self.device, isinstance(self.device, FakeGPUDevice))
        executor.notes = [move.note() for move in executor.moves]
        fetch_pairs = [_fetch_pair(plan.item_of, moved, ref) for ref in fetch_refs]
        fed_items = {}
        for node in fed_nodes:
            fed_items[plan.item_of[node.name]] = [TensorRef(node, i) for i in range(node.num_outputs)]
        return executor, fetch_pairs, fed_items

    def close(self) -> None:
        """Close the session as tf.compat.v1.Session.close does: operations waiting in any of its
        steps (a dequeue, an enqueue into a full queue, a read) fail with CancelledError, and
        its queues close. Idempotent; runs after it fail the same way as soon as they wait."""
        self.resources.close()

    def jit_compile(self, graph: Graph, device_name: str, fetch_refs, fed_nodes, target_nodes,
                    lower_rest: bool = True) -> dict:
        """Cluster and compile `graph` (a pruned copy, changed in place) for the JIT; returns where
        fetched tensors moved (see graphtool.jit.engine). The report accumulates per signature."""
        from ..jit.engine import JitReport, compile_graph

        report, moved = compile_graph(graph, device_name, {(r.node.name, r.index) for r in fetch_refs},
                                      {n.name for n in fed_nodes}, {n.name for n in target_nodes},
                                      lower_rest=lower_rest, interpreter=_interpreter)
        if self.jit_report is None:
            self.jit_report = JitReport()
        self.jit_report.merge(report)
        if report.lowered is not None and report.lowered.changed and self.lowering is None:
            self.lowering = report.lowered
        return moved

    # --- feeds ----------------------------------------------------------------------------------
    def _describe(self, ref: TensorRef) -> str:
        return f"{self._shapes.dtype(ref)} {self._shapes.shape(ref)}"

    def _check_feed(self, ref: TensorRef, name: str, value) -> np.ndarray:
        """The fed array in the tensor's dtype; UsageError if its dtype or shape cannot fit."""
        want = self._shapes.dtype(ref).base
        array = np.asarray(value)
        if want is not dtypes.INVALID and want.numpy is not None:
            array = _cast_feed(array, want, name)
        shape = self._shapes.shape(ref)
        declared = ref.node.attr("shape", None) if ref.node.op in FED_INPUT_OPS else None  # _Arg has none
        if declared is not None:
            shape = shape.merge(declared) if shape.is_compatible_with(declared) else shape
        if not shape.is_compatible_with(Shape(array.shape)):
            raise UsageError(f"feed '{name}': shape {list(array.shape)} does not fit {shape} "
                             f"expected by '{ref.node.name}'")
        return array


def _interpreter(body: Graph, device: Device) -> "Session":
    """What runs a JIT cluster's body that XLA cannot compile (jit/cluster_op.py): a plain Session."""
    return Session(body, device=device, jit=False)


def _jit_enabled(jit: bool | None) -> bool:
    """jit=None follows $DFTOOL_JIT; on, JAX must be importable (UsageError naming the extra)."""
    if jit is None:
        from ..jit.engine import enabled_by_env

        jit = enabled_by_env()
    if jit:
        from ..jit import runtime

        if not runtime.available():
            raise UsageError("--jit needs JAX, which is not installed", hint=runtime.INSTALL_HINT)
    return bool(jit)


def _fetch_pair(item_of: dict, moved: dict, ref: TensorRef) -> tuple:
    """(plan item, port) computing fetched tensor `ref` (a cluster's output when it moved there)."""
    target = moved.get((ref.node.name, ref.index))
    if target is not None:
        return item_of[target.node.name], target.index
    return item_of[ref.node.name], ref.index


def _cast_feed(array: np.ndarray, want, name: str) -> np.ndarray:
    """Exact dtype, or a lossless-enough conversion within the same kind (float64 data for a
    float32 placeholder, int64 indices for int32, text for string); anything else is an error."""
    if array.dtype == want.numpy:
        return array
    try:
        got = dtypes.from_numpy(array.dtype) if array.dtype.kind not in "OSU" else dtypes.string
    except UsageError:
        raise UsageError(f"feed '{name}': numpy dtype {array.dtype} has no TensorFlow counterpart",
                         hint=f"save the array as {want.numpy}") from None
    if want is dtypes.string and array.dtype.kind in "OSU":
        return array.astype(object)
    if got.is_floating and want.is_floating:
        return array.astype(want.numpy)
    if got.is_integer and want.is_integer:
        converted = array.astype(want.numpy)
        if np.array_equal(converted.astype(array.dtype), array):
            return converted
        raise UsageError(f"feed '{name}': {got} values do not fit {want}")
    raise UsageError(f"feed '{name}': dtype {got} does not match the expected {want}",
                     hint=f"save the array as {want.numpy}")
