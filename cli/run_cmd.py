"""`dftool run GRAPH`: execute a graph (see docs/commands.md)."""
from __future__ import annotations

import contextlib
import io
import os
import time
from dataclasses import dataclass
from typing import Any

import click
import numpy as np

from graphtool.feeds import files as feed_files
from graphtool.feeds import generated as generated_feeds
from graphtool import graph_io
from graphtool.errors import RuntimeFailure, UsageError
from graphtool.exec.trace import write_trace
from graphtool.placement.device_names import short_device_name

from graphtool.exec.queue_runner import QueueRunner, parse_queue_runner_spec
from graphtool.training import checkpoints
from graphtool.training.loop import StepLoop, StepPlan
from graphtool.training.step_feeds import read_feeds_per_step

from .cluster_cmd import CLUSTER_HELP, start_cluster
from .common import common_options, emit_report, info, load_graph, settings, signature_option
from .output import detail, notice, stage, take_stdout
from .output import result as show_result
from .report import tensor_value
from .run_steps import (StepLog, check_step_options, default_log_every, open_event_log, stacked, step_options,
                        training_summary)


# What --output writes, by the file name's extension.
OUTPUT_FORMATS = {".npz": "an .npz archive keyed by the fetch strings", ".npy": "one array (one fetch)"}


def check_output_name(path: str, fetch_count: int) -> None:
    """--output's format follows its name: .npz, or .npy for exactly one fetch; UsageError (exit
    2) for anything else, before the graph runs. What is not a file (/dev/stdout, a FIFO) gets
    an .npz archive."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in OUTPUT_FORMATS and not graph_io.is_stream(path):
        raise UsageError(f"--output {path}: dftool writes results as .npz (or .npy for one fetch), "
                         f"not '{suffix or 'a name without extension'}'",
                         hint=f"name it {os.path.splitext(path)[0] or 'results'}.npz")
    if suffix == ".npy" and fetch_count != 1:
        raise UsageError(f"--output {path}: an .npy file holds one array, and there are {fetch_count} fetches",
                         hint="use an .npz archive, or --fetch just one tensor")
    graph_io.check_writable(path)


def save_outputs(path: str, fetches: list[str], values: list[np.ndarray]) -> None:
    """Write results as .npz keyed by the fetch strings exactly as given, or one fetch as .npy
    (atomically)."""
    for name, value in zip(fetches, values):
        if value.dtype == object and any(not isinstance(v, (bytes, str)) for v in value.ravel()):
            kind = type(next(v for v in value.ravel() if not isinstance(v, (bytes, str)))).__name__
            raise UsageError(f"--output: fetch '{name}' is a variant ({kind}), which has no array form",
                             hint="fetch what it holds instead (e.g. a TensorListStack of a list)")
    buffer = io.BytesIO()
    if path.lower().endswith(".npy"):
        if len(values) != 1:   # the one fetch was dead (an untaken cond branch)
            raise RuntimeFailure(f"--output {path}: the fetch produced no value (dead), nothing to write")
        np.save(buffer, values[0], allow_pickle=False)
    else:
        arrays: dict[str, Any] = dict(zip(fetches, values))
        np.savez(buffer, **arrays)
    graph_io.write_atomic(path, buffer.getvalue())


@dataclass
class Expectation:
    """`run --expect`'s outcome: one comparison per fetch (graphtool.compare statistics)."""

    path: str
    comparisons: list

    @property
    def mismatches(self) -> list[str]:
        return [c.summary() for c in self.comparisons if not c.passed]

    def to_json(self) -> dict:
        return {"file": self.path, "mismatches": self.mismatches,
                "outputs": [c.to_json() for c in self.comparisons]}


def compare_expected(path: str, fetches: list[str], values: list[np.ndarray], rtol: float, atol: float) -> Expectation:
    """Each fetch against a saved .npz with `dftool compare`'s statistics (floats with tolerances,
    others exactly); on a mismatch the statistics table is printed. Only the entries of fetches
    whose shape matches are decoded (headers are read first)."""
    from graphtool.compare import Comparison, compare_values

    from .compare_cmd import outputs_table

    headers = feed_files.npz_headers(path, "--expect")
    keys = {name: next((k for k in (name, f"{name}:0", name.removesuffix(":0")) if k in headers), None)
            for name in fetches}
    wanted = {key for n, v in zip(fetches, values) if (key := keys[n]) is not None and headers[key].shape == v.shape}
    archive = feed_files.read_npz(path, "--expect", keys=sorted(wanted))
    comparisons = []
    for name, value in zip(fetches, values):
        key = keys[name]
        if key is None or headers[key].shape != value.shape:
            problem = f"not in {path}" if key is None else \
                f"shape {list(value.shape)}, expected {list(headers[key].shape)}"
            comparisons.append(Comparison(name, False, "mismatch", rtol, atol, dtype_a=str(value.dtype),
                                          shape_a=list(value.shape), problem=problem))
            continue
        comparisons.append(compare_values(name, value, archive.pop(key), rtol, atol))
    outcome = Expectation(path, comparisons)
    if outcome.mismatches:
        show_result(outputs_table(comparisons))
    return outcome


def _cluster_summary(cluster, spec: str, transfer_bytes: int) -> dict:
    """The run report's `cluster`: which, how big, and what the step sent between tasks."""
    return {"spec": spec, "tasks": len(cluster.tasks), "nodes": len({t.node_id for t in cluster.tasks}),
            "transfer_bytes": transfer_bytes}


def _summary(name: str, value: np.ndarray) -> str:
    flat = np.ravel(value)
    shown = np.array2string(flat[:6], precision=5, separator=", ", threshold=6)
    more = " ..." if flat.size > 6 else ""
    return f"{name}  {value.dtype}{list(value.shape)}  {shown}{more}"


def execution_options(func):
    """The feed/fetch/device options of `run`, shared with `profile`: --feed, --feeds, --fetch,
    --device, --threads, --timeout."""
    options = [
        click.option("--feed", "feed_pairs", multiple=True, metavar="NAME=FILE.npy|VALUE",
                     help="Feed one tensor from an .npy file, or inline: n=60, x=[1,2,3], flag=true."),
        click.option("--feeds", "feeds_file", metavar="FILE.npz", help="Feed the tensors named by an .npz's keys."),
        click.option("--cast-feeds", is_flag=True,
                     help="Convert fed arrays to the dtype the graph expects where numpy's same-kind "
                          "casting allows (float64 -> float32, int -> float); without it a feed must "
                          "have that dtype, a wider float, or an integer type whose values fit."),
        click.option("--fetch", "fetches", multiple=True, metavar="T",
                     help="Tensor to fetch (default: the graph's real outputs, as `inspect` lists them)."),
        click.option("--random-feeds", is_flag=True,
                     help="Generate a value for every placeholder not fed explicitly (explicit feeds win); "
                          "a notice names what was generated."),
        click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, metavar="S",
                     help="With --random-feeds: the generator's seed."),
        click.option("--shape", "shape_overrides", multiple=True, metavar="NAME=DIMS",
                     help="Run placeholder NAME at this concrete shape (e.g. input=4,224,224,3), replacing "
                          "its declared one; every dim must have a size."),
        click.option("--device", default="cpu", show_default=True, help="cpu or gpu (cpu:N, gpu:N)."),
        click.option("--threads", type=click.IntRange(min=1), help="Worker threads (default: cores)."),
        click.option("--timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
                     help="Stop a step that runs longer (exit 1, naming the nodes running). Default: no "
                          "limit; set one for a graph whose loop may never end. A kernel already running "
                          "(e.g. a BLAS call) finishes first."),
        click.option("--jit/--no-jit", default=None,
                     help="Compile clusters of supported ops with XLA through JAX (extra `jit`); what "
                          "cannot compile stays in the interpreter. Default: $DFTOOL_JIT."),
        click.option("--jit-cache", metavar="DIR",
                     help="JAX's persistent compilation cache (default: $DFTOOL_JIT_CACHE, else "
                          "~/.cache/dftool/jax; `off` disables it)."),
        click.option("--cluster", "cluster_spec", metavar="SPEC", help=CLUSTER_HELP),
        click.option("--compress", type=click.Choice(["none", "bf16", "fp16"]), default="none", show_default=True,
                     help="With --cluster: float32 tensors travel between tasks as this 16-bit type."),
    ]
    for option in reversed(options):
        func = option(func)
    return signature_option(func)


def open_session(graph: str, feed_pairs, feeds_file, fetches, device: str, threads, *, check_numerics: bool = False,
                 signature: str | None = None, jit: bool | None = None, jit_cache: str | None = None,
                 cast_feeds: bool = False, cluster_spec: str | None = None, compress: str = "none",
                 prepare_graph=None, random_feeds: bool = False, seed: int = 0, shapes=()):
    """(session, feeds, fetch list) for GRAPH and the execution options; the default fetches are
    the graph's real outputs (Session.default_fetches). UsageError for a graph with nothing to fetch. With `cluster_spec`, the
    session runs on that cluster (started here, closed when the command ends). `prepare_graph`
    sees the loaded graph before the session is made (a saver is added there). `shapes`
    (--shape NAME=DIMS strings) replace those placeholders' declared shapes; with `random_feeds`,
    every placeholder not fed explicitly gets a generated value (graphtool/feeds/generated.py,
    from `seed`), named in a notice, and the variables the fetches read are initialized."""
    from graphtool.exec.session import Session

    if jit_cache is not None:
        from graphtool.jit import runtime

        runtime.set_cache_dir(jit_cache)
    if seed and not random_feeds:
        raise UsageError("--seed needs --random-feeds (it seeds the generated feeds)")
    overrides = generated_feeds.parse_shape_overrides(shapes)
    loaded = load_graph(graph, signature=signature)
    generated_feeds.apply_shape_overrides(loaded, overrides)
    if prepare_graph is not None:
        prepare_graph(loaded)
    if cluster_spec is not None and jit:
        raise UsageError("--jit and --cluster cannot be combined yet",
                         hint="run on the cluster without --jit, or with --jit in one process")
    if cluster_spec is None and compress != "none":
        start_cluster(None, compress=compress)    # (says --compress needs --cluster)
    session = Session(loaded, device=device, threads=threads, check_numerics=check_numerics,
                      source="<stdin>" if graph == "-" else graph, jit=jit)
    # Each feed file's headers are checked against what the graph expects before any data is read.
    feeds = feed_files.collect_feeds(feed_pairs, feeds_file, expect=feed_files.placeholder_expectation(session.resolve),
                                     cast=cast_feeds)
    if random_feeds:
        fed = [session.resolve(name, "feed").node for name in feeds]
        made = generated_feeds.generate_feeds(loaded, seed, skip=fed, shapes=overrides)
        if made:
            info(generated_feeds.describe(made, seed, loaded))
        feeds = {**made, **feeds}
    if session.lowering is not None:
        info(session.lowering.notice())
    fetch_list = list(fetches) or session.default_fetches()
    if not fetch_list:
        raise UsageError(f"{graph}: the graph has no outputs to fetch; name one with --fetch")
    for name in fetch_list:   # a bad name is reported before a cluster takes seconds to start
        session.resolve(name, "fetch")
    if cluster_spec is not None:
        session.use_cluster(start_cluster(cluster_spec, threads=threads, compress=compress))
    if random_feeds:   # generated inputs, generated state: variables start from their initializers
        inits = generated_feeds.variable_initializers(session.graph, [session.resolve(n, "fetch").node
                                                                      for n in fetch_list])
        if inits:
            session.run([], feeds, targets=[n.name for n in inits])
            info(f"ran the initializers of {len(inits)} variable(s) first (as --init would): "
                 + ", ".join(n.name for n in inits[:5]) + (f", ... ({len(inits) - 5} more)" if len(inits) > 5 else ""))
    return session, feeds, fetch_list


def report_moves(moves) -> None:
    """One notice for the nodes that run elsewhere than they ask (soft placement: a GPU that is
    not here, a kernel a device lacks); -v names each."""
    if not moves:
        return
    groups: dict[tuple[str, str], int] = {}
    for move in moves:
        groups[move.requested, move.runs_on] = groups.get((move.requested, move.runs_on), 0) + 1
    reasons = "; ".join(sorted({move.why for move in moves})) + ("" if settings.verbose else "; -v names them")
    if len(groups) == 1:
        (requested, runs_on), = groups
        notice(f"soft placement: {len(moves)} node(s) asking for {requested} run on {runs_on} ({reasons})")
    else:
        what = ", ".join(f"{count} {requested} -> {runs_on}" for (requested, runs_on), count in sorted(groups.items()))
        notice(f"soft placement: {len(moves)} node(s) run elsewhere than they ask: {what} ({reasons})")
    for move in moves:
        detail(f"  {move.note()}")


def report_jit(session) -> None:
    """With -v, what the JIT compiled (clusters, ops, compile time) and why nodes stayed out."""
    if session.jit_report is None or not settings.verbose:
        return
    for line in session.jit_report.lines(settings.verbose):
        info(line)


@click.command("run")
@click.argument("graph")
@execution_options
@click.option("--output", metavar="FILE.npz", help="Save results, keyed by the fetch strings as given.")
@click.option("--trace", metavar="FILE.json", help="Write a Chrome-trace/Perfetto timeline of the step (.json.gz: gzipped).")
@click.option("--expect", metavar="FILE.npz", help="Compare results with saved ones; exit 1 on mismatch.")
@click.option("--rtol", type=float, default=1e-5, show_default=True)
@click.option("--atol", type=float, default=1e-8, show_default=True)
@click.option("--check-numerics", is_flag=True, help="Fail on the first NaN/Inf, naming its node.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report on stdout.")
@click.option("--report", metavar="FILE.json", help="Write the JSON report to a file.")
@step_options
@common_options
def command(graph, feed_pairs, feeds_file, fetches, device, output, trace, threads, timeout, expect, rtol, atol,
            check_numerics, as_json, report, inits, targets, steps, feeds_per_step, log_every, checkpoint_dir,
            save_every, keep, restore, max_restarts, logdir, queue_runners, signature, jit, jit_cache, cast_feeds,
            cluster_spec, compress, random_feeds, seed, shape_overrides):
    """Execute GRAPH and print or save the fetched tensors.

    Results go to stdout (with --json, to stderr after the report; --output: a file), one line
    per fetch: name, dtype and shape, the first values. With --steps, each step runs the
    --target nodes and the fetches in one run of the same session (variables persist)."""
    if as_json:
        take_stdout()
    if output:
        check_output_name(output, len(fetches) or 1)
    for path in (trace, report):
        if path:
            graph_io.check_writable(path)
    check_step_options(steps, checkpoint_dir, save_every, restore, max_restarts, cluster_spec)
    runners = [parse_queue_runner_spec(spec) for spec in queue_runners]
    saver_nodes: list = []
    wants_saver = bool(checkpoint_dir or restore)
    session, feeds, fetch_list = open_session(
        graph, feed_pairs, feeds_file, fetches, device, threads, check_numerics=check_numerics, signature=signature,
        jit=jit, jit_cache=jit_cache, cast_feeds=cast_feeds, cluster_spec=cluster_spec, compress=compress,
        random_feeds=random_feeds, seed=seed, shapes=shape_overrides,
        prepare_graph=(lambda loaded: saver_nodes.append(checkpoints.prepare_graph(loaded))) if wants_saver else None)
    if output:
        check_output_name(output, len(fetch_list))
    for name in (*inits, *targets):   # a bad name is exit 2 before any step runs
        session.resolve_node(name, "init" if name in inits else "target")
    per_step = read_feeds_per_step(feeds_per_step, steps, feed_files.placeholder_expectation(session.resolve),
                                   cast_feeds) if feeds_per_step else {}
    checkpointing = checkpoints.Checkpointing(session, saver_nodes[0], checkpoint_dir, save_every, keep, timeout) \
        if wants_saver else None
    restore_prefix = checkpointing.resolve(restore) if checkpointing is not None and restore else None
    summary_tensors, event_log = open_event_log(logdir, session) if logdir else ([], None)
    plan = StepPlan(steps=steps, fetches=fetch_list, targets=list(targets), inits=list(inits), feeds=feeds,
                    feeds_per_step=per_step, timeout=timeout, allow_dead=not fetches, restore=restore_prefix,
                    max_restarts=max_restarts, trace_last=bool(trace))
    queue_runner_list = [QueueRunner(session, [op], threads=count) for op, count in runners]
    # One step shows the usual spinner; many show a progress bar instead (one live display).
    running = stage(f"running {'<stdin>' if graph == '-' else graph}") if steps == 1 else contextlib.nullcontext()
    with running, StepLog(steps, log_every or default_log_every(steps)) as log:
        outcome = StepLoop(session, plan, checkpoints=checkpointing, summary_tensors=summary_tensors,
                           event_log=event_log, queue_runners=queue_runner_list, on_step=log.step,
                           on_event=log.event).run()
    if outcome.last_result is None:
        raise RuntimeFailure(f"no step ran: {outcome.input_exhausted or 'nothing to do'}")
    result = outcome.last_result
    step_seconds = outcome.seconds / max(1, outcome.steps_run)
    if trace:
        write_trace(result.step_stats, trace, metadata={"graph": graph})
        info(f"wrote a trace of {result.step_stats.nodes_executed} node execution(s) to {trace}")
    dead = [name for name, value in zip(fetch_list, result.values) if value is None]
    fetch_list, values = zip(*[(n, v) for n, v in zip(fetch_list, result.values) if v is not None]) or ((), ())
    fetch_list, values = list(fetch_list), list(values)
    if output and outcome.steps_run > 1:
        columns = [(n, v) for n, v in zip(plan.fetches, stacked(outcome, len(plan.fetches))) if v is not None]
        save_outputs(output, [n for n, _ in columns], [v for _, v in columns])
        info(f"wrote {len(columns)} tensor(s), each stacked over {outcome.steps_run} steps, to {output}")
    elif output:
        save_outputs(output, fetch_list, values)
        info(f"wrote {len(fetch_list)} tensor(s) to {output}")
    else:
        show_result(*(_summary(name, value) for name, value in zip(fetch_list, values)))
    for name in dead:
        info(f"{name}: dead (on a cond branch this run did not take)")
    report_moves(result.moves)
    devices = [short_device_name(d) for d in result.devices]
    if len(devices) > 1:
        info(f"ran on {len(devices)} devices, one executor each: {', '.join(devices)}")
    detail(f"{result.nodes_executed} node execution(s) on {', '.join(devices) or session.device.name}"
           + (f"; loop iterations: {', '.join(f'{k}={v}' for k, v in result.iterations.items())}"
              if result.iterations else ""))
    report_jit(session)
    expectation = compare_expected(expect, fetch_list, values, rtol, atol) if expect else None
    mismatches = expectation.mismatches if expectation is not None else []
    if as_json or report:
        emit_report({"command": "run", "graph": graph, "device": session.device.name, "devices": devices,
                     "steps": steps, "step_time_ms": round(step_seconds * 1e3, 6),
                     "nodes_executed": result.nodes_executed, "loop_iterations": result.iterations,
                     "fetches": [{"name": n, "dtype": str(v.dtype), "shape": list(v.shape), "size": int(v.size),
                                  "value": tensor_value(v)} for n, v in zip(fetch_list, values)],
                     "dead_fetches": dead,
                     **({"jit": session.jit_report.to_json()} if session.jit_report is not None else {}),
                     **({"cluster": _cluster_summary(session.cluster, cluster_spec, result.transfer_bytes)}
                        if session.cluster is not None else {}),
                     **({"training": training_summary(outcome, event_log)}
                        if steps > 1 or inits or targets or checkpointing or event_log or queue_runner_list else {}),
                     "expect": None if expectation is None else expectation.to_json()},
                    as_json=as_json, report_path=report)
    if mismatches:
        raise RuntimeFailure(f"results differ from {expect}: " + "; ".join(mismatches[:5])
                             + (f" (and {len(mismatches) - 5} more)" if len(mismatches) > 5 else ""))
    if expect:
        info(f"all {len(fetch_list)} fetch(es) match {expect}")
