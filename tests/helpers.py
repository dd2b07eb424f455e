"""Shared test helpers: run the real `dftool` entry point, and build small graphs.

Graph builders come in two flavours: on the IR (`Graph.add_node`, for valid graphs) and on raw
GraphDef protos (`graph_def`/`node_def`, for graphs the IR would refuse to build, such as duplicate
names or inputs naming missing nodes).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from graphtool import attrs as attr_codec
from graphtool import dtypes, graph_io
from graphtool.ir import Graph, Node, TensorRef, to_graphdef
from graphtool.proto import GraphDef
from graphtool.proto.node_def_pb2 import NodeDef

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "tf"
# The full-name prefix of local devices: PREFIX + "CPU:1".
DEVICE_PREFIX = "/job:localhost/replica:0/task:0/device:"
F32 = dtypes.float32


# --- the command line -------------------------------------------------------------------------

def _python_path() -> str:
    """The repo root first, then whatever PYTHONPATH already held (packages installed beside the
    interpreter's own, as on a machine where dependencies are unpacked into a target folder)."""
    return os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))


def run_dftool(*args, input: bytes | str | None = None, binary: bool = False,
               timeout: float = 120, user: int | None = None, cwd=None) -> tuple[int, str | bytes, str]:
    """Run `python -m cli.main ARGS` from the repo root (or `cwd`); returns (exit code, stdout, stderr).
    stdout is text unless `binary` (graphs written to '-'); stderr is always text. `user` (a uid;
    needs root) runs it as another user, e.g. to meet file permissions that root would bypass."""
    env = {**os.environ, "PYTHONPATH": _python_path(), "COLUMNS": "200"}
    data = input.encode() if isinstance(input, str) else input
    proc = subprocess.run([sys.executable, "-m", "cli.main", *map(str, args)], input=data,
                          capture_output=True, cwd=cwd or REPO_ROOT, env=env, timeout=timeout,
                          stdin=subprocess.DEVNULL if data is None else None,
                          user=user, group=user, extra_groups=[] if user is not None else None)
    stdout = proc.stdout if binary else proc.stdout.decode("utf-8", "replace")
    return proc.returncode, stdout, proc.stderr.decode("utf-8", "replace")


def run_dftool_on_terminal(*args, stream: str = "stdout", cwd=None, timeout: float = 300) -> tuple[int, bytes, bytes]:
    """Run `python -m cli.main ARGS` with `stream` ('stdout' or 'stderr') on a pseudo-terminal and
    the other on a pipe; returns (exit code, what the terminal got, what the pipe got). The
    terminal is read while the command runs: its buffer is small and a writer to a full one waits."""
    import pty
    import threading

    main, replica = pty.openpty()
    env = {**os.environ, "PYTHONPATH": _python_path()}
    chunks: list[bytes] = []

    def drain():
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:   # EIO: the other side is closed and drained
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    streams = {"stdout": replica, "stderr": subprocess.PIPE} if stream == "stdout" else \
        {"stdout": subprocess.PIPE, "stderr": replica}
    try:
        proc = subprocess.run([sys.executable, "-m", "cli.main", *map(str, args)], stdin=subprocess.DEVNULL,
                              cwd=cwd or REPO_ROOT, env=env, timeout=timeout, **streams)
    finally:
        os.close(replica)
    reader.join(timeout=10)
    os.close(main)
    piped = proc.stderr if stream == "stdout" else proc.stdout
    return proc.returncode, b"".join(chunks), piped


def error_line(stderr: str) -> str:
    """The single `error: ...` line of a failed command (asserts there is exactly one line)."""
    lines = stderr.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{stderr}"
    assert lines[0].startswith("error: "), lines[0]
    assert "Traceback" not in stderr
    return lines[0]


# --- IR builders ------------------------------------------------------------------------------

def const(graph: Graph, name: str, value, dtype=None, **kw) -> Node:
    array = np.asarray(value, dtype=(dtype or F32).numpy)
    return graph.add_node("Const", name, attrs={"value": array, "dtype": dtype or F32}, **kw)


def placeholder(graph: Graph, name: str, shape=None, dtype=F32) -> Node:
    attrs = {"dtype": dtype}
    if shape is not None:
        attrs["shape"] = shape
    return graph.add_node("Placeholder", name, attrs=attrs)


def op(graph: Graph, op_name: str, name: str, *inputs, dtype=F32, **attrs) -> Node:
    """A node typed by `T` = dtype whose inputs are nodes (output 0) or TensorRefs."""
    refs = [x if isinstance(x, TensorRef) else x.output(0) for x in inputs]
    return graph.add_node(op_name, name, inputs=refs, attrs={"T": dtype, **attrs})


def mlp_graph() -> Graph:
    """x[?,4] -> MatMul w1[4,8] -> BiasAdd b1[8] -> Relu -> MatMul w2[8,3] -> Add b2[3] = logits."""
    rng = np.random.default_rng(0)
    g = Graph()
    g.versions.producer = 1994
    x = placeholder(g, "x", [None, 4])
    w1, b1 = const(g, "dense/w", rng.normal(size=(4, 8))), const(g, "dense/b", np.zeros(8))
    h = op(g, "Relu", "dense/relu", op(g, "BiasAdd", "dense/bias", op(g, "MatMul", "dense/matmul", x, w1), b1))
    w2, b2 = const(g, "out/w", rng.normal(size=(8, 3))), const(g, "out/b", np.zeros(3))
    op(g, "Add", "logits", op(g, "MatMul", "out/matmul", h, w2), b2)
    return g


def while_loop(graph: Graph, init: Node, prefix: str = "while", parallel_iterations: int = 10) -> Node:
    """TensorFlow v1 form of `i = init; while i < 16: i = i * 2`; returns the Exit node."""
    frame = {"frame_name": f"{prefix}/ctx", "parallel_iterations": parallel_iterations}
    enter = op(graph, "Enter", f"{prefix}/Enter", init, **frame)
    merge = op(graph, "Merge", f"{prefix}/Merge", enter, enter, N=2)
    limit = const(graph, f"{prefix}/limit", 16.0, control_inputs=[merge])
    cond = graph.add_node("LoopCond", f"{prefix}/LoopCond",
                          inputs=[op(graph, "Less", f"{prefix}/Less", merge, limit).output(0)])
    switch = op(graph, "Switch", f"{prefix}/Switch", merge, cond)
    body = op(graph, "Identity", f"{prefix}/Identity", switch.output(1))
    two = const(graph, f"{prefix}/two", 2.0, control_inputs=[body])
    next_iteration = op(graph, "NextIteration", f"{prefix}/NextIteration", op(graph, "Mul", f"{prefix}/mul", body, two))
    merge.set_input(1, next_iteration.output(0))
    return op(graph, "Exit", f"{prefix}/Exit", switch.output(0))


def while_loop_graph() -> Graph:
    """start (Placeholder, scalar) -> while loop -> result (Identity)."""
    g = Graph()
    op(g, "Identity", "result", while_loop(g, placeholder(g, "start", []), parallel_iterations=4))
    return g


# --- raw GraphDef builders --------------------------------------------------------------------

def node_def(name: str, op_name: str, inputs=(), device: str = "", **attrs) -> NodeDef:
    """A NodeDef; attr values are Python values (kinds guessed) or AttrValue protos."""
    node = NodeDef(name=name, op=op_name, input=list(inputs), device=device)
    for key, value in attrs.items():
        node.attr[key].CopyFrom(attr_codec.encode(value))
    return node


def const_def(name: str, value=1.0, dtype=F32, **kw) -> NodeDef:
    return node_def(name, "Const", value=np.asarray(value, dtype.numpy), dtype=dtype, **kw)


def graph_def(*nodes: NodeDef) -> GraphDef:
    result = GraphDef()
    result.node.extend(nodes)
    result.versions.producer = 1994
    return result


def write_graph(graph: Graph | GraphDef, path) -> str:
    """Save a Graph or GraphDef (format by file name) and return the path as a string."""
    proto = to_graphdef(graph) if isinstance(graph, Graph) else graph
    graph_io.save_graphdef(proto, str(path))
    return str(path)


def serialize(graph: Graph | GraphDef, text: bool = False) -> bytes:
    proto = to_graphdef(graph) if isinstance(graph, Graph) else graph
    return graph_io.serialize_graphdef(proto, text)


def load_graph(path) -> Graph:
    """The graph in a .pb/.pbtxt file (parsed and verified)."""
    from graphtool.ir import from_graphdef

    return from_graphdef(graph_io.load_graphdef(str(path)), str(path))
