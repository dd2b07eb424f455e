"""`dftool compare A [B]`: two graphs, or one graph under two configurations, on the same feeds
(see docs/commands.md)."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import click
import numpy as np

from graphtool.feeds import files as feed_files
from graphtool import graph_io
from graphtool.compare import DEFAULT_ATOL, DEFAULT_CHUNK_BYTES, DEFAULT_RTOL, Comparison, compare_values
from graphtool.compare import plan_tensors, walk
from graphtool.compare.stats import format_number, format_value
from graphtool.errors import DftoolError, RuntimeFailure, UsageError

from .common import common_options, emit_report
from .output import notice, result, stage, table, take_stdout
from .run_cmd import execution_options, open_session

# How many diverging tensors --all-tensors lists by default.
DEFAULT_TOP = 20


@click.command("compare")
@click.argument("graph_a", metavar="A")
@click.argument("graph_b", metavar="[B]", required=False)
@execution_options
@click.option("--a-device", metavar="DEVICE", help="A's device (default: --device).")
@click.option("--b-device", metavar="DEVICE", help="B's device (default: --device).")
@click.option("--a-jit", is_flag=True, help="Run A with the XLA JIT (extra `jit`).")
@click.option("--b-jit", is_flag=True, help="Run B with the XLA JIT (extra `jit`).")
@click.option("--b-optimize", is_flag=True, help="B is A after `dftool optimize`'s default passes.")
@click.option("--b-npz", metavar="FILE.npz",
              help="B is saved results (e.g. TensorFlow's), keyed by tensor names as fetched (`y` or `y:0`).")
@click.option("--rtol", type=click.FloatRange(min=0), default=DEFAULT_RTOL, show_default=True,
              help="Relative tolerance: |a - b| <= atol + rtol * |b| passes.")
@click.option("--atol", type=click.FloatRange(min=0), default=DEFAULT_ATOL, show_default=True,
              help="Absolute tolerance.")
@click.option("--all-tensors", is_flag=True,
              help="Also compare every intermediate tensor both sides have and name the first node "
                   "(in A's topological order) whose output diverges.")
@click.option("--top", type=click.IntRange(min=1), default=DEFAULT_TOP, show_default=True, metavar="N",
              help="With --all-tensors: list the first N diverging tensors.")
@click.option("--chunk-bytes", type=click.IntRange(min=1), default=DEFAULT_CHUNK_BYTES, show_default=True,
              metavar="BYTES", help="With --all-tensors: fetch intermediates in chunks of about this size "
                                    "(per side), one run of each side per chunk.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report on stdout.")
@click.option("--report", metavar="FILE.json", help="Write the JSON report to a file.")
@common_options
def command(graph_a, graph_b, a_device, b_device, a_jit, b_jit, b_optimize, b_npz, rtol, atol, all_tensors, top,
            chunk_bytes, as_json, report, **execution):
    """Run A and B on the same feeds and compare their outputs: per output max/mean/median/p99 of
    absolute and relative error, where the max is, the smallest rtol and atol that would pass,
    PASSED/FAILED. Exit 1 if any output fails.

    B is a second graph, or A itself under other settings: --b-device/--a-device, --b-jit/--a-jit,
    --b-optimize (A optimized), or --b-npz (saved results)."""
    if as_json:
        take_stdout()
    if report:
        graph_io.check_writable(report)
    sides = _b_kind(graph_b, b_optimize, b_npz)
    device, jit = execution.pop("device"), execution.pop("jit")
    a_device, b_device = a_device or device, b_device or device
    jit_a, jit_b = (True if a_jit else jit), (True if b_jit else jit)
    if execution.get("cluster_spec") is not None:
        raise UsageError("compare does not run on a cluster (--cluster)", hint="compare on this machine")
    if sides == "same" and a_device == b_device and jit_a == jit_b:
        raise UsageError("nothing to compare: A against itself with the same settings",
                         hint="give B, or --b-optimize, --b-npz, --b-device or --b-jit")
    if graph_a == "-" and (sides in ("same", "optimize") or graph_b == "-"):
        raise UsageError("standard input ('-') can be read once, and B here is read from it too",
                         hint="save the graph to a file and compare that")
    if all_tensors and sides == "npz":
        raise UsageError("--all-tensors needs B to run (a graph, or A under other settings), not --b-npz",
                         hint="save the intermediates you want with --fetch in the npz and compare those")
    fetches, timeout = execution.pop("fetches"), execution.pop("timeout")
    feed_pairs, feeds_file, threads = execution.pop("feed_pairs"), execution.pop("feeds_file"), execution.pop("threads")
    # Generated feeds (--random-feeds, --seed) are made once, for A, and B runs on the same values;
    # --shape overrides reshape both sides' placeholders.
    generate = {"random_feeds": execution.pop("random_feeds"), "seed": execution.pop("seed"),
                "shapes": execution.pop("shape_overrides")} if "random_feeds" in execution else {}
    reshape = {"shapes": generate["shapes"]} if generate else {}
    with _side("A", a_device, device):
        session_a, feeds, fetch_list = open_session(graph_a, feed_pairs, feeds_file, fetches, a_device, threads,
                                                    jit=jit_a, **generate, **execution)
    session_b = None
    if sides == "npz":
        fetch_list = _npz_fetches(b_npz, session_a, list(fetches), fetch_list)
    else:
        prepare = None
        if sides == "optimize":
            def prepare(loaded, names=tuple(fetch_list)):
                from graphtool import api

                with stage("optimizing B"):
                    api.optimize(loaded, fetches=[loaded.tensor(name) for name in names], inplace=True)
        # B gets A's feed values (generated ones too), so its own feed options are not read again.
        with _side("B", b_device, device):
            session_b, _, _ = open_session(graph_b if sides == "graph" else graph_a, (), None, fetches, b_device,
                                           threads, jit=jit_b, prepare_graph=prepare, **reshape, **execution)
        if not fetches:
            fetch_list = _common_fetches(fetch_list, session_b, graph_b)
    feeds_b = _feeds_for(session_b, feeds) if session_b is not None else {}


    def run_a(names: list[str]) -> list:
        with _side("A", a_device, device):
            return list(session_a.run(names, feeds, allow_dead=True, timeout=timeout).values)

    def run_b(names: list[str]) -> list:
        assert session_b is not None
        with _side("B", b_device, device):
            return list(session_b.run(names, feeds_b, allow_dead=True, timeout=timeout).values)

    with stage("running A"):
        values_a = run_a(fetch_list)
    if session_b is not None:
        with stage("running B"):
            values_b = run_b(fetch_list)
    else:
        values_b = _npz_values(b_npz, fetch_list)
    comparisons = [compare_values(name, a, b, rtol, atol) for name, a, b in zip(fetch_list, values_a, values_b)]
    del values_a, values_b

    walked = None
    if all_tensors:
        assert session_b is not None
        plan = plan_tensors(session_a.graph, session_b.graph, [session_a.resolve(n, "fetch") for n in fetch_list])
        with stage(f"comparing {len(plan.tensors)} intermediate tensor(s)"):
            walked = walk(plan, run_a, run_b, rtol, atol, chunk_bytes)
    failed = [c for c in comparisons if not c.passed]
    result(outputs_table(comparisons),
           f"{len(comparisons)} output(s): {len(comparisons) - len(failed)} passed, {len(failed)} failed "
           f"(rtol {rtol:g}, atol {atol:g})")
    if walked is not None:
        result(*_walk_lines(walked, plan.op_of, top))
    if as_json or report:
        b_graph = graph_b if sides == "graph" else (b_npz if sides == "npz" else graph_a)
        emit_report({"command": "compare", "graph": graph_a, "a": _side_json(session_a),
                     "b": {"kind": sides, "graph": b_graph, **_side_json(session_b)},
                     "rtol": rtol, "atol": atol, "passed": not failed,
                     "outputs": [c.to_json() for c in comparisons],
                     "all_tensors": None if walked is None else _walk_json(walked, plan.op_of, top)},
                    as_json=as_json, report_path=report)
    if failed:
        raise RuntimeFailure(f"{len(failed)} of {len(comparisons)} output(s) differ beyond rtol {rtol:g}, "
                             f"atol {atol:g}: " + ", ".join(c.name for c in failed[:5])
                             + (f" (and {len(failed) - 5} more)" if len(failed) > 5 else ""))


@contextmanager
def _side(label: str, side_device: str, device: str) -> Iterator[None]:
    """An error while loading or running one side says which (`B: ...`); a device error names
    the side's option when that was given."""
    try:
        yield
    except DftoolError as exc:
        text = str(exc)
        if side_device != device:
            text = text.replace("--device ", f"--{label.lower()}-device ", 1)
        exc.args = (f"{label}: {text}",)
        raise


def _side_json(session) -> dict:
    """How one side ran (a saved .npz: no device)."""
    if session is None:
        return {"device": None, "jit": False}
    return {"device": session.device.name, "jit": session.jit_report is not None}


def _b_kind(graph_b, b_optimize: bool, b_npz) -> str:
    given = [what for what, on in (("B", graph_b), ("--b-optimize", b_optimize), ("--b-npz", b_npz)) if on]
    if len(given) > 1:
        raise UsageError(f"B is one thing: {' and '.join(given)} were both given",
                         hint="give a second graph, --b-optimize or --b-npz")
    if graph_b:
        return "graph"
    return "optimize" if b_optimize else "npz" if b_npz else "same"


def _common_fetches(names: list[str], session_b, graph_b) -> list[str]:
    """A's default fetches that B has too (a notice names the rest)."""
    common, missing = [], []
    for name in names:
        try:
            session_b.resolve(name, "fetch")
            common.append(name)
        except UsageError:
            missing.append(name)
    if missing:
        notice(f"not compared: {len(missing)} output(s) of A that B lacks: {', '.join(missing[:5])}"
               + (" ..." if len(missing) > 5 else ""))
    if not common:
        raise UsageError(f"A and {graph_b or 'B'} have no output in common", hint="name tensors with --fetch")
    return common


def _feeds_for(session_b, feeds: dict) -> dict:
    """A's feeds that name a tensor of B."""
    kept = {}
    for name, value in feeds.items():
        try:
            session_b.resolve(name, "feed")
        except UsageError:
            continue
        kept[name] = value
    return kept


def _npz_key(name: str, headers) -> str | None:
    return next((k for k in (name, f"{name}:0", name.removesuffix(":0")) if k in headers), None)


def _npz_fetches(path: str, session_a, fetches: list[str], defaults: list[str]) -> list[str]:
    """--fetch as given, or every key of the .npz that names a tensor of A (in the archive's order)."""
    headers = feed_files.npz_headers(path, "--b-npz")
    if fetches:
        return fetches
    names, unknown = [], []
    for key in headers:
        try:
            session_a.resolve(key, "fetch")
        except UsageError:
            unknown.append(key)
            continue
        names.append(key)
    if not names:
        raise UsageError(f"--b-npz {path}: no key names a tensor of A", hint=f"A's outputs: {', '.join(defaults[:5])}")
    if unknown:
        notice(f"--b-npz {path}: not compared, naming no tensor of A: {', '.join(unknown[:5])}"
               + (" ..." if len(unknown) > 5 else ""))
    return names


def _npz_values(path: str, names: list[str]) -> list[np.ndarray | None]:
    """B's values from the .npz; a fetch the archive lacks is compared as a problem."""
    headers = feed_files.npz_headers(path, "--b-npz")
    keys = [_npz_key(name, headers) for name in names]
    missing = [name for name, key in zip(names, keys) if key is None]
    if missing:
        raise RuntimeFailure(f"--b-npz {path}: no saved value for {', '.join(missing)}",
                             hint=f"its keys: {', '.join(list(headers)[:8])}")
    archive = feed_files.read_npz(path, "--b-npz", keys=sorted({k for k in keys if k is not None}))
    return [archive[key] for key in keys if key is not None]


def outputs_table(comparisons: list[Comparison]):
    """The statistics table, one row per output (also `run --expect`'s on a mismatch)."""
    columns = ["output", "status", "mismatches", "max abs", "mean abs", "median abs", "p99 abs", "max rel",
               "mean rel", "median rel", "p99 rel", "max abs at (A vs B)", "min rtol", "min atol", "note"]
    out = table(None, columns, right=tuple(columns[2:11]) + ("min rtol", "min atol"))
    for c in comparisons:
        out.add_row(*_row(c))
    return out


def _row(c: Comparison) -> list[str]:
    counts = f"{c.mismatches}/{c.size}" if c.problem is None and c.kind != "dead" else "-"
    if c.kind == "float":
        assert c.abs_error is not None and c.rel_error is not None
        a, r = c.abs_error, c.rel_error
        where = f"{a.max_index} {format_value(a.max_a)} vs {format_value(a.max_b)}" if a.max > 0 else "-"
        notes = [f"{c.nonfinite_mismatches} NaN/Inf mismatch(es)"] if c.nonfinite_mismatches else []
        if c.dtype_a != c.dtype_b:
            notes.append(f"dtype {c.dtype_a} vs {c.dtype_b}")
        note = "; ".join(notes)
        return [c.name, c.status, counts, *(format_number(v) for v in (a.max, a.mean, a.median, a.p99, r.max, r.mean,
                                                                     r.median, r.p99)),
                where, format_number(c.min_rtol), format_number(c.min_atol), note]
    if c.kind == "exact":
        diff = c.first_difference
        note = f"compared exactly; first difference at {diff['index']}: {diff['a']} vs {diff['b']}" if diff \
            else "compared exactly"
        if c.dtype_a != c.dtype_b:
            note += f"; dtype {c.dtype_a} vs {c.dtype_b}"
        return [c.name, c.status, counts, *["-"] * 11, note]
    return [c.name, c.status, counts, *["-"] * 11, c.problem or "dead on both sides"]


def _walk_lines(walked, op_of: dict[str, str], top: int) -> list:
    skipped = "; ".join(f"{count} {reason}" for reason, count in sorted(walked.skipped.items()))
    lines: list = [f"all tensors: {walked.compared} compared in {walked.chunks} chunk(s), "
                   f"{len(walked.diverging)} diverge"
                   + (f"; {sum(walked.skipped.values())} not comparable: {skipped}" if walked.skipped else "")]
    for source in walked.sources:
        lines.append(f"source of divergence: {source.name} ({op_of[source.name]}, no inputs) differs: "
                     f"{_brief(source)}")
    if walked.first is not None:
        lines.append(f"first diverging node: {walked.first.name} ({op_of[walked.first.name]}): {_brief(walked.first)}")
    elif not walked.diverging:
        lines.append("no intermediate tensor diverges")
    if walked.diverging:
        shown = walked.diverging[:top]
        out = table(f"diverging tensors (first {len(shown)} of {len(walked.diverging)}, A's topological order)",
                    ["tensor", "op", "mismatches", "max abs", "max rel", "min rtol", "min atol", "note"],
                    right=("mismatches", "max abs", "max rel", "min rtol", "min atol"))
        for c in shown:
            row = _row(c)
            out.add_row(c.name, op_of[c.name], row[2], row[3], row[7], row[12], row[13], row[14])
        lines.append(out)
    return lines


def _brief(c: Comparison) -> str:
    if c.kind != "float":
        return c.summary().split(": ", 1)[1]
    assert c.abs_error is not None and c.rel_error is not None
    return (f"{c.mismatches}/{c.size} beyond tolerance, max abs err {format_number(c.abs_error.max)} at "
            f"{c.abs_error.max_index} ({format_value(c.abs_error.max_a)} vs {format_value(c.abs_error.max_b)}), "
            f"max rel err {format_number(c.rel_error.max)}, min rtol {format_number(c.min_rtol)}, "
            f"min atol {format_number(c.min_atol)}")


def _walk_json(walked, op_of: dict[str, str], top: int) -> dict:
    def entry(c: Comparison) -> dict:
        return {**c.to_json(), "op": op_of[c.name]}

    return {"compared": walked.compared, "chunks": walked.chunks,
            "not_comparable": dict(sorted(walked.skipped.items())),
            "first": None if walked.first is None else entry(walked.first),
            "sources": [entry(c) for c in walked.sources],
            "diverging_count": len(walked.diverging),
            "diverging": [entry(c) for c in walked.diverging[:top]]}
