"""Protobuf-level fuzzing of every command, and the defects it found.

test_every_command_survives_mutations: real seed graphs, mutated structure-aware (tests/hostile/
mutate.py), through inspect, prune, place, optimize (plain and --verify), partition, grad, run and
profile; every run must end as ok or one clean `error:` line — never a traceback, an "internal
error", a hang, a memory blow-up or a signal. FUZZ_CLI_COUNT (inputs, default 30) and FUZZ_CLI_SEED
set its size and seed; tools/fuzz_cli.py is the long offline run with the same machinery.

The tests after it pin the classes the fuzzer found, each on a small graph built here.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

from graphtool import dtypes
from graphtool.proto import AttrValue, GraphDef
from tests.helpers import F32, const_def, graph_def, node_def, write_graph
from tests.hostile import cli_runner, mutate

COUNT = int(os.environ.get("FUZZ_CLI_COUNT", 30))
SEED = int(os.environ.get("FUZZ_CLI_SEED", 14))
CONFIG = cli_runner.Config(wall_s=20.0, exec_timeout_s=2.0)


@pytest.fixture(scope="module")
def seeds():
    return mutate.load_seeds()


def test_mutations_are_deterministic(seeds):
    first = [mutate.mutate(seeds, 3, i) for i in range(20)]
    again = [mutate.mutate(seeds, 3, i) for i in range(20)]
    assert [m.serialize() for m in first] == [m.serialize() for m in again]
    assert [m.mutations for m in first] == [m.mutations for m in again]
    # ... and they do mutate: every input differs from its seed graph.
    by_name = {s.name: s.graph_def.SerializeToString() for s in seeds}
    assert all(m.serialize() != by_name[m.seed] for m in first)


def test_seeds_cover_the_fixture_families(seeds):
    families = {s.name.split("/")[0] if s.name.startswith("sample") else s.name.split("/")[2] for s in seeds}
    assert {"sample_graphs", "tf", "tf2", "functional", "training"} <= families


@pytest.mark.slow
def test_every_command_survives_mutations(seeds, tmp_path):
    verify_timeout = cli_runner.optimize_has_timeout()
    results = []
    for index in range(COUNT):
        result, _ = cli_runner.run_input(seeds, SEED, index, tmp_path / str(index), CONFIG, verify_timeout)
        results.append(result)
    table = cli_runner.summarize(results)
    runs = sum(len(r.outcomes) for r in results)
    assert runs == COUNT * len(cli_runner.COMMANDS)
    bad = [f"input {r.index} (seed {SEED}; {r.seed}; {'; '.join(r.mutations)}): "
           f"{o.command} -> {o.kind}: dftool {' '.join(o.argv)}: {o.brief()}"
           for r in results for o in r.bad]
    assert not bad, f"{len(bad)} bad run(s)\n" + cli_runner.format_table(table) + "\n" + "\n".join(bad)
    # The mutations reach past loading: some runs of every command succeed.
    assert all(table[c]["ok"] > 0 for c in ("inspect", "prune", "place", "optimize")), table


# --- regressions: one graph per class the fuzzer found ----------------------------------------

def _run(tmp_path: Path, graph: GraphDef, argv: list[str], feeds: dict | None = None) -> cli_runner.Outcome:
    write_graph(graph, tmp_path / "g.pb")
    if feeds:
        np.savez(tmp_path / "feeds.npz", **feeds)
    return cli_runner.run_command(argv[0], argv, tmp_path, CONFIG)


def _attr(**kind_and_value) -> AttrValue:
    value = AttrValue()
    (kind, payload), = kind_and_value.items()
    if kind == "func":
        value.func.name = payload
    elif kind == "s":
        value.s = payload
    elif kind == "i":
        value.i = payload
    return value


def _wrong_kind_graphs():
    """Attrs whose stored kind differs from the op's declared one: readers (shape functions,
    colocation, kernels, inspect) assumed the declared kind and crashed."""
    type_is_func = graph_def(const_def("a"), node_def("b", "Relu", ["a"], T=_attr(func="f")))
    const_value_is_string = graph_def(node_def("c", "Const", dtype=F32, value=_attr(s=b"zz")),
                                      node_def("d", "Identity", ["c"], T=F32))
    shape_is_int = graph_def(node_def("p", "Placeholder", dtype=F32, shape=_attr(i=3)),
                             node_def("q", "Identity", ["p"], T=F32))
    return {"type_is_func": type_is_func, "const_value_is_string": const_value_is_string,
            "shape_is_int": shape_is_int}


COMMAND_ARGVS = {
    "inspect": ["inspect", "g.pb"],
    "place": ["place", "g.pb", "out.pb", "--devices", "cpu:0,cpu:1"],
    "optimize": ["optimize", "g.pb", "out.pb"],
    "grad": ["grad", "g.pb", "out.pb", "--y", "a"],
    "run": ["run", "g.pb"],
}


@pytest.mark.parametrize("case", sorted(_wrong_kind_graphs()))
@pytest.mark.parametrize("command", sorted(COMMAND_ARGVS))
def test_attr_of_the_wrong_kind_is_a_clean_error(tmp_path, case, command):
    outcome = _run(tmp_path, _wrong_kind_graphs()[case], COMMAND_ARGVS[command])
    assert outcome.kind == "error", (outcome.kind, outcome.stderr)
    assert outcome.rc == 3, outcome.stderr
    assert "attr" in outcome.stderr and "must be a" in outcome.stderr, outcome.stderr


@pytest.mark.parametrize("dims", [(2**40, 4), (0, 2**62, 2**40)])
def test_verify_does_not_build_a_huge_random_feed(tmp_path, dims):
    """A placeholder declaring [2**40, 4] floats: `optimize --verify` used to try to allocate its
    random feed (16 TiB, numpy's ValueError became an internal error); now it stops at the bound.
    An empty shape whose other dims overflow numpy's index type is refused the same way."""
    shape = AttrValue()
    for size in dims:
        shape.shape.dim.add().size = size
    graph = graph_def(node_def("big", "Placeholder", dtype=F32, shape=shape),
                      node_def("y", "Relu", ["big"], T=F32))
    outcome = _run(tmp_path, graph, ["optimize", "g.pb", "out.pb", "--verify"])
    assert outcome.kind == "error" and outcome.rc == 1, outcome.stderr
    assert "cannot make a random feed for placeholder 'big'" in outcome.stderr
    assert outcome.rss_growth < 256 << 20


def _huge_count_graphs():
    """A 4-byte count attr sizing an output list: shape inference built per-output lists of 2**31
    entries (MemoryError in every command) before verify() could say anything."""
    data = const_def("x", np.ones((4, 3), np.float32))
    parts = const_def("p", np.zeros(4, np.int32), dtype=dtypes.int32)
    dim = const_def("dim", np.int32(0), dtype=dtypes.int32)
    return {
        "dynamic_partition": graph_def(data, parts, node_def("dp", "DynamicPartition", ["x", "p"], T=F32,
                                                             num_partitions=2**31)),
        "split": graph_def(data, dim, node_def("s", "Split", ["dim", "x"], T=F32, num_split=2**40)),
        "unpack_negative": graph_def(data, node_def("u", "Unpack", ["x"], T=F32, num=-3, axis=0)),
    }


@pytest.mark.parametrize("case", sorted(_huge_count_graphs()))
@pytest.mark.parametrize("command", ["inspect", "place", "optimize", "run"])
def test_impossible_output_count_is_a_clean_error(tmp_path, case, command):
    outcome = _run(tmp_path, _huge_count_graphs()[case], COMMAND_ARGVS[command])
    assert outcome.kind == "error" and outcome.rc == 3, (outcome.kind, outcome.stderr)
    # The bound itself (registry.MAX_ARG_COUNT) comes with the bounds work; this pins the outcome.
    assert re.search(r"attr .num(_partitions|_split)?. = -?\d+ is (more than the|below its minimum)",
                     outcome.stderr), outcome.stderr
    assert outcome.rss_growth < 256 << 20


def _function_graph(body_op: str = "Relu", t_attr: AttrValue | None = None, caller_op: str = "fn") -> GraphDef:
    """y = fn(a) through a library function whose body is one node `r` (body_op, attr T)."""
    graph = graph_def(const_def("a", np.ones(3, np.float32)), node_def("call", caller_op, ["a"]),
                      node_def("y", "Identity", ["call"], T=F32))
    if caller_op == "SymbolicGradient":
        graph.node[1].input.append("a")  # the output gradient
        graph.node[1].attr["f"].func.name = "fn"
        graph.node[1].attr["Tin"].list.type.extend([1, 1])
        graph.node[1].attr["Tout"].list.type.extend([1])
    function = graph.library.function.add()
    function.signature.name = "fn"
    function.signature.input_arg.add(name="x", type=1)
    function.signature.output_arg.add(name="out", type=1)
    body = function.node_def.add(name="r", op=body_op, input=["x"])
    body.attr["T"].CopyFrom(t_attr if t_attr is not None else _attr_type(1))
    function.ret["out"] = "r:activations:0" if body_op == "Relu" else "r:output:0"
    return graph


def _attr_type(enum: int) -> AttrValue:
    value = AttrValue()
    value.type = enum
    return value


@pytest.mark.parametrize("caller", ["fn", "SymbolicGradient"])
@pytest.mark.parametrize("command", ["place", "optimize", "run"])
def test_malformed_function_body_is_invalid_input(tmp_path, caller, command):
    """A body node with a type attr holding an int: inlining copied it (exit 1 from optimize's
    'lower' pass), differentiating it for SymbolicGradient said "internal error: the gradient graph
    is invalid". Now every command names the function and exits 3."""
    graph = _function_graph(t_attr=_attr(i=7), caller_op=caller)
    outcome = _run(tmp_path, graph, COMMAND_ARGVS[command])
    assert outcome.kind == "error" and outcome.rc == 3, (outcome.kind, outcome.stderr)
    assert "function 'fn'" in outcome.stderr and "attr 'T' must be a type" in outcome.stderr


def test_function_body_may_not_declare_its_own_arg(tmp_path):
    """An `_Arg` node inside a FunctionDef's node_def is neither an input nor copied when inlining
    (KeyError in every command that lowers); it is refused when the function is instantiated."""
    graph = _function_graph()
    extra = graph.library.function[0].node_def.add(name="stray", op="_Arg")
    extra.attr["T"].type = 1
    extra.attr["index"].i = 0
    graph.library.function[0].node_def[0].input[0] = "stray:output:0"
    for command in ("place", "run"):
        outcome = _run(tmp_path, graph, COMMAND_ARGVS[command])
        assert outcome.kind == "error" and outcome.rc == 3, (outcome.kind, outcome.stderr)
        assert "node 'stray': op '_Arg' is not allowed in a function body" in outcome.stderr


def test_well_formed_function_graph_still_runs(tmp_path):
    """The control for the two tests above: the same graphs without the defect run."""
    assert _run(tmp_path, _function_graph(), ["run", "g.pb"]).kind == "ok"
    outcome = _run(tmp_path, _function_graph(caller_op="SymbolicGradient"), ["run", "g.pb"])
    assert outcome.kind == "ok", outcome.stderr


@pytest.mark.parametrize("name", ["^x", "a:1", "x:"])
@pytest.mark.parametrize("command", ["inspect", "prune", "run"])
def test_node_name_that_no_input_can_name_is_refused(tmp_path, name, command):
    """A node called '^x' was loaded; prune then found '^x' (read as a control input of x) among
    x's users and failed with an internal ValueError."""
    graph = graph_def(const_def("x"), node_def(name, "Identity", ["x"], T=F32),
                      node_def("y", "Identity", ["x"], T=F32))
    argv = {"prune": ["prune", "g.pb", "out.pb", "--fetch", "y"]}.get(command, COMMAND_ARGVS.get(command))
    outcome = _run(tmp_path, graph, argv)
    assert outcome.kind == "error" and outcome.rc == 3, (outcome.kind, outcome.stderr)
    assert f"node name '{name}' is not valid" in outcome.stderr


def test_declared_dims_beyond_int32_are_not_static_values(tmp_path):
    """A placeholder declaring [2**40]: its int32 Shape's static value cannot be held (inference
    raised OverflowError), and grad's seed built int32 dims from it (an internal error). Nothing
    is allocated: the shape is only declared."""
    shape = AttrValue()
    shape.shape.dim.add().size = 2**40
    graph = graph_def(node_def("big", "Placeholder", dtype=F32, shape=shape),
                      node_def("y", "Neg", ["big"], T=F32),
                      node_def("s", "Shape", ["big"], T=F32, out_type=dtypes.int32))
    inspect = _run(tmp_path, graph, ["inspect", "g.pb"])
    assert inspect.kind == "ok", inspect.stderr
    grad = _run(tmp_path, graph, ["grad", "g.pb", "out.pb", "--y", "y", "--x", "big"])
    assert grad.kind == "ok", grad.stderr
    assert grad.rss_growth < 256 << 20


def test_shape_vector_longer_than_any_rank(tmp_path):
    """Reshape's shape input declared as [10**12] int32s (its value unknown): inference built a
    Shape of 10**12 unknown dims (MemoryError in every command). A shape has at most 254 dims."""
    declared = AttrValue()
    declared.shape.dim.add().size = 10**12
    graph = graph_def(node_def("x", "Placeholder", dtype=F32, shape=AttrValue()),
                      node_def("shp", "Placeholder", dtype=dtypes.int32, shape=declared),
                      node_def("r", "Reshape", ["x", "shp"], T=F32, Tshape=dtypes.int32))
    for argv in (["inspect", "g.pb"], ["optimize", "g.pb", "out.pb"], ["place", "g.pb", "out.pb"]):
        outcome = _run(tmp_path, graph, argv)
        assert outcome.kind in ("ok", "error") and outcome.rc in (0, 3), (argv, outcome.kind, outcome.stderr)
        assert outcome.rss_growth < 256 << 20
    _run(tmp_path, graph, ["inspect", "g.pb", "--json"])
    assert "more than the 254 dimensions" in (tmp_path / "stdout.txt").read_text()
