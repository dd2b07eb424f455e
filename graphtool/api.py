"""The Python API: what the dftool commands do, as functions on in-memory graphs (notebooks, scripts).

    import graphtool as gt

    g = gt.load("sample_graphs/mlp.pb")              # GraphDef .pb/.pbtxt, or a SavedModel dir
    probs = gt.run(g, {"x": x}, "probs")              # one fetch -> one array
    small = gt.optimize(g)                            # a new graph; g stays as it was
    placed = gt.place(small, ["cpu:0", "cpu:1"])
    parts = gt.partition(placed)
    trainable = gt.grad(g, "loss", ["w"])             # gradient tensor: grad/w
    report = gt.profile(g, {"x": x}, repeat=20)       # dict, as `dftool profile --json`
    small.save("small.pb")

The transforms (optimize, place, partition, grad) copy the graph and return the copy; with
`inplace=True` they change the graph given (no copy: what the CLI does with large graphs) and
return it; with `report=True` they return `(graph, report)`, the report being what the command
prints and puts in its JSON. Errors are graphtool.errors.DftoolError subclasses (UsageError for
a bad name or option, InvalidGraphError for a bad graph, RuntimeFailure for a failed run), each
with the message the command line prints.

Every import beyond the IR happens inside the function that needs it, so that `import graphtool`
stays light and each command pays only for what it uses.
"""
from __future__ import annotations

import os
from typing import Any, Iterable, Mapping, Sequence

from .errors import UsageError
from .ir import Graph, TensorRef

__all__ = ["load", "save", "run", "optimize", "place", "partition", "grad", "replicate", "profile"]

PathLike = str | os.PathLike
Feeds = Mapping[str, Any] | PathLike | None
Fetches = str | Sequence[str] | None


# --- files ---------------------------------------------------------------------------------------

def load(path: PathLike, *, signature: str | None = None, verify: bool = True) -> Graph:
    """The graph in `path`: a binary or text GraphDef (.pb, .pbtxt), or a SavedModel directory
    (or its saved_model.pb), frozen for `signature` (default serving_default)."""
    from .loader import load_graph

    return load_graph(os.fspath(path), signature=signature, verify=verify)


def save(graph: Graph, path: PathLike, *, text: bool | None = None) -> None:
    """Write `graph` as a GraphDef (the same as graph.save(path, text=text))."""
    graph.save(path, text=text)


# --- running -------------------------------------------------------------------------------------

def _session(graph: Graph, device: str, threads: int | None, check_numerics: bool, jit: bool | None):
    from .exec.session import Session

    return Session(graph, device=device, threads=threads, check_numerics=check_numerics, jit=jit)


def _feed_values(session, feeds: Feeds) -> dict[str, Any]:
    """Name -> array. An .npz path is read as `dftool run --feeds` reads it; plain Python values
    (lists, numbers) take the placeholder's dtype, numpy arrays are checked as they are."""
    import numpy as np

    from .feeds.files import collect_feeds, placeholder_expectation

    expect = placeholder_expectation(session.resolve)
    if feeds is None:
        return {}
    if isinstance(feeds, (str, os.PathLike)):
        return collect_feeds((), os.fspath(feeds), expect=expect)
    values = {}
    for name, value in feeds.items():
        if not isinstance(value, (np.ndarray, np.generic)):
            expected = expect(name)
            dtype = expected[0].numpy if expected and expected[0] is not None else None
            value = np.asarray(value, dtype=dtype)
        values[name] = value
    return values


def _fetch_list(session, fetches: Fetches) -> tuple[list[str], bool]:
    """(fetch names, whether the caller named them)."""
    if fetches is None:
        names = session.default_fetches()
        if not names:
            raise UsageError("the graph has no outputs to fetch; name one in `fetches`")
        return names, False
    return ([fetches] if isinstance(fetches, str) else list(fetches)), True


def run(graph: Graph, feeds: Feeds = None, fetches: Fetches = None, *, device: str = "cpu",
        threads: int | None = None, timeout: float | None = None, check_numerics: bool = False,
        jit: bool | None = None):
    """Execute `graph` once, as `dftool run` does, and return the fetched values as numpy arrays.

    `feeds`: {tensor name: value} (names as `x` or `x:0`) or the path of an .npz archive.
    `fetches`: one tensor name -> its array; a list of names -> a list of arrays; None -> a dict
    {name: array} of the graph's real outputs, as `dftool run` fetches by default (an output on
    a cond branch this run did not take is None). `device`: "cpu", "gpu", "cpu:1", ...; `jit=True` compiles clusters with XLA (the `jit`
    extra); None follows $DFTOOL_JIT."""
    session = _session(graph, device, threads, check_numerics, jit)
    names, named = _fetch_list(session, fetches)
    result = session.run(names, _feed_values(session, feeds), timeout=timeout, allow_dead=not named)
    if fetches is None:
        return dict(zip(names, result.values))
    return result.values[0] if isinstance(fetches, str) else list(result.values)


def profile(graph: Graph, feeds: Feeds = None, fetches: Fetches = None, *, repeat: int = 10,
            warmup: int = 2, device: str = "cpu", threads: int | None = None, timeout: float | None = None,
            top: int = 10, name: str = "graph", jit: bool | None = None, max_time: float | None = None) -> dict:
    """Run `graph` `warmup` times, then `repeat` measured times (fewer if `max_time` seconds of
    measured steps pass first); return the report `dftool profile --json` prints (step times, per-op and per-node time and memory, peak memory per
    device, critical path). `name` fills its `graph` field."""
    from .profiling import flops_per_node, profile_report, profile_steps, summarize

    if repeat < 1 or warmup < 0:
        raise UsageError(f"profile needs repeat >= 1 and warmup >= 0 (got repeat={repeat}, warmup={warmup})")
    session = _session(graph, device, threads, False, jit)
    names, named = _fetch_list(session, fetches)
    values = _feed_values(session, feeds)
    steps = profile_steps(session, names, values, repeat=repeat, warmup=warmup,
                          timeout=timeout, allow_dead=not named, max_time=max_time)
    flops, _ = flops_per_node(session.graph, values)
    return profile_report(summarize(steps), graph=name, repeat=len(steps), warmup=warmup, top=top, flops_per_node=flops)


# --- transforms ----------------------------------------------------------------------------------

def _target(graph: Graph, inplace: bool) -> Graph:
    return graph if inplace else graph.copy()


def _lowered(graph: Graph):
    """Functional control flow (If/While/calls) lowered to v1 in place, as place, partition and grad
    need; returns what lowering did (None when there was nothing to lower)."""
    from .functions.lowering import lower_functional_ops, needs_lowering

    return lower_functional_ops(graph) if needs_lowering(graph) else None


def _result(graph: Graph, details, report: bool):
    return (graph, details) if report else graph


def _tensors(graph: Graph, names: Iterable[str | TensorRef], what: str) -> list[TensorRef]:
    refs = []
    for name in names:
        if isinstance(name, TensorRef):
            name = name.name
        try:
            refs.append(graph.tensor(name))
        except UsageError as exc:
            raise UsageError(f"{what} '{name}': {exc}", hint=exc.hint) from None
    return refs


def optimize(graph: Graph, *, fetches: Iterable[str | TensorRef] | None = None, keep: Iterable[str] = (),
             passes: Sequence[str] | None = None, skip: Sequence[str] | None = None, strict_fp: bool = False,
             max_iterations: int = 10, fold_max_bytes: int = 10 * 1024 * 1024, dump_dir: PathLike | None = None,
             inplace: bool = False, report: bool = False):
    """Run the optimization passes to a fixed point, as `dftool optimize` does. `fetches` (default:
    every graph output) and `keep` (node names) keep their names and values; `passes` runs only
    those, `skip` leaves those out (graphtool.opt.manager.pass_order() lists them); `strict_fp`
    skips rewrites that can change floating-point results. The report is an OptimizeReport (one
    PassRun per pass run, iterations)."""
    from .ir.queries import graph_outputs
    from .opt.base import PassContext
    from .opt.manager import optimize as run_passes
    from .opt.manager import select_passes

    chosen = select_passes(list(passes) if passes is not None else None, list(skip) if skip is not None else None)
    target = _target(graph, inplace)
    if fetches is None:
        fetch_refs = [ref for node in graph_outputs(target) for ref in node.outputs]
    else:
        fetch_refs = _tensors(target, fetches, "fetch")
    keep = set(keep)
    for name in sorted(keep):
        if name not in target:
            raise UsageError(f"keep '{name}': no node named '{name}' in the graph")
    ctx = PassContext(fetches=fetch_refs, keep=keep, strict_fp=strict_fp, fold_max_bytes=fold_max_bytes)
    details = run_passes(target, ctx, chosen, max_iterations=max_iterations,
                         dump_dir=os.fspath(dump_dir) if dump_dir is not None else None)
    return _result(target, details, report)


def place(graph: Graph, devices: Sequence[str] | str | None = None, *, soft_placement: bool = True,
          cost_model=None, explain: bool = False, inplace: bool = False, report: bool = False):
    """Give every node a full device name, as `dftool place` does. `devices`: a list or a comma
    separated string in any spelling ("cpu:0,cpu:1,gpu:0"; other tasks' devices as
    "worker:0/cpu:0,ps:0/cpu:0"); None: the devices the graph names plus cpu:0. `cost_model`: a
    CostModel, or the path of a file `profile --cost-model-out` wrote. The report is a PlacementReport (device per node, load per device, softened
    constraints; with `explain`, the candidates of every node)."""
    # Imported here, not at the top: placement is about to move into its own package.
    from .placement.cost_model import CostModel
    from .placement import place as place_nodes

    if isinstance(devices, str):
        devices = [item.strip() for item in devices.split(",")]
    if cost_model is not None and not isinstance(cost_model, CostModel):
        cost_model = CostModel.load(os.fspath(cost_model))
    target = _target(graph, inplace)
    _lowered(target)
    details = place_nodes(target, list(devices) if devices is not None else None, soft_placement=soft_placement,
                          cost_model=cost_model, explain=explain)
    return _result(target, details, report)


def partition(graph: Graph, *, compress: str = "none", inplace: bool = False, report: bool = False):
    """Replace every cross-device edge of a placed graph with a _Send/_Recv pair, as `dftool
    partition` does (`compress`: "none", "bf16" or "fp16" for float32 transfers). The result
    runs with gt.run; graphtool.partition.split_by_device(result) gives one graph per device.
    The report is a PartitionReport (per device nodes, sends, recvs; every transfer)."""
    from .partition import partition as cut

    target = _target(graph, inplace)
    _lowered(target)
    details = cut(target, compress=compress)
    return _result(target, details, report)


def grad(graph: Graph, y: str | TensorRef, xs: Iterable[str | TensorRef] | None = None, *, prefix: str = "grad",
         inplace: bool = False, report: bool = False):
    """Add the gradient of `y` (summed if not scalar) with respect to each of `xs`, as `dftool
    grad` does; None: the parameters y depends on (floating Variables, and Consts of rank >= 1).
    The gradient of x = node:k is the tensor PREFIX/node (k = 0) or PREFIX/node_k. The report is
    a GradReport (each x with its gradient's name, whether it is structurally zero)."""
    from .grad.driver import add_gradients, default_xs

    target = _target(graph, inplace)
    _lowered(target)
    y_name = y.name if isinstance(y, TensorRef) else y
    chosen = [x.name if isinstance(x, TensorRef) else x for x in xs] if xs is not None else default_xs(target, y_name)
    if not chosen:
        raise UsageError(f"no xs given, and y '{y_name}' depends on no floating Variable or Const of rank >= 1",
                         hint="name the tensors to differentiate with respect to")
    details = add_gradients(target, y_name, chosen, prefix)
    return _result(target, details, report)


def replicate(graph: Graph, replicas: int, split: str | Iterable[str], *, devices: str | Sequence[str] | None = None,
              mode: str = "allreduce", fuse_bytes: int | None = None, losses: Iterable[str] = (),
              report: bool = False):
    """A synchronous data-parallel copy of a training graph, as `dftool replicate`: `replicas`
    copies on `devices` (default cpu:0..N-1), each fed 1/N of every `split` placeholder's batch,
    the updates' gradients averaged by collective all-reduce (`mode="allreduce"`, fused into
    buckets of at most `fuse_bytes`) or on a parameter server (`mode="ps"`). `graph` is left
    unchanged. The report is a ReplicateReport (split inputs, replicated nodes, reduced values,
    buckets)."""
    from .replicate import DEFAULT_FUSE_BYTES, ReplicateOptions
    from .replicate import replicate as make_replicas

    source = graph.copy()
    _lowered(source)
    names = [split] if isinstance(split, str) else list(split)
    chosen = devices if devices is None or isinstance(devices, str) else list(devices)
    options = ReplicateOptions(replicas=replicas, split=names, devices=chosen, mode=mode,
                               fuse_bytes=DEFAULT_FUSE_BYTES if fuse_bytes is None else fuse_bytes,
                               losses=list(losses))
    replicated, details = make_replicas(source, options)
    return _result(replicated, details, report)
