"""`dftool draw`: what the picture shows (scopes and loops collapsed or open, devices, shapes,
control edges), DOT that is well formed for every sample, and SVG/PNG through Graphviz `dot`
(real when installed; a stand-in `dot` for the plumbing; its absence is one error line)."""
from __future__ import annotations

import os
import re
import shutil
import stat
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest

from graphtool import api
from graphtool.builder import GraphBuilder
from graphtool.draw import layout, to_dot
from tests.helpers import error_line, run_dftool

SAMPLES = Path(__file__).resolve().parent.parent / "sample_graphs"
MLP = str(SAMPLES / "mlp.pb")

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|->|[{}\[\];=,]|[A-Za-z_][\w.#-]*|-?\d+(?:\.\d+)?|\s+')
_ID = r'("(?:[^"\\]|\\.)*"|[A-Za-z_][\w]*)'


def unquote(token: str) -> str:
    return token[1:-1].replace('\\"', '"') if token.startswith('"') else token


def check_dot(text: str) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """Tokenize DOT text completely (anything else fails), check braces/brackets nest, every
    edge endpoint is a declared node; return {node id: label} and the edges."""
    position, tokens = 0, []
    while position < len(text):
        match = _TOKEN.match(text, position)
        assert match, f"not DOT at {text[position:position + 40]!r}"
        if not match.group().isspace():
            tokens.append(match.group())
        position = match.end()
    depth = {"{": 0, "[": 0}
    for token in tokens:
        if token in "{[":
            depth[token] += 1
        elif token in "}]":
            depth["{" if token == "}" else "["] -= 1
            assert min(depth.values()) >= 0
    assert depth == {"{": 0, "[": 0} and tokens[:1] == ["digraph"]
    nodes = {unquote(m.group(1)): m.group(2)
             for m in re.finditer(r'^\s*' + _ID + r' \[label="((?:[^"\\]|\\.)*)"', text, re.M)}
    edges = [(unquote(a), unquote(b)) for a, b in re.findall(r'^\s*' + _ID + ' -> ' + _ID, text, re.M)]
    for src, dst in edges:
        assert src in nodes and dst in nodes, (src, dst)
    return nodes, edges


MLP_DOT = f"""\
digraph "{MLP}" {{
\tgraph [compound=true fontname=Helvetica rankdir=TB]
\tnode [fontname=Helvetica fontsize=10]
\tedge [fontname=Helvetica fontsize=9]
\tx [label="x\\nPlaceholder" fillcolor="#ffffff" shape=box style="rounded,filled" tooltip=x]
\t"scope dense" [label="dense/\\n5 nodes: Const x2, MatMul, BiasAdd, ..." fillcolor="#ffffff" shape=box3d style=filled tooltip=dense]
\t"scope logits" [label="logits/\\n4 nodes: Const x2, MatMul, BiasAdd" fillcolor="#ffffff" shape=box3d style=filled tooltip=logits]
\tprobs [label="probs\\nSoftmax" fillcolor="#ffffff" shape=box style="rounded,filled" tooltip=probs]
\tx -> "scope dense" [label="[?,16]"]
\t"scope dense" -> "scope logits" [label="[?,32]"]
\t"scope logits" -> probs [label="[?,10]"]
\tsubgraph cluster_legend {{
\t\tcolor=gray70 label=devices style=rounded
\t\t"legend (unplaced)" [label="(unplaced)" fillcolor="#ffffff" shape=box style=filled]
\t}}
}}
"""


def test_mlp_dot_exactly(tmp_path):
    out = tmp_path / "mlp.dot"
    code, stdout, stderr = run_dftool("draw", MLP, out)
    assert code == 0, stderr
    assert out.read_text() == MLP_DOT
    assert stderr == (f"drew 11 nodes as 2 node(s) and 2 collapsed box(es) in 0 open scope(s), 3 edge(s), "
                      f"1 device(s) -> {out}\n")
    code, stdout, _ = run_dftool("draw", MLP, "-", "-q")
    assert code == 0 and stdout == MLP_DOT


@pytest.mark.parametrize("sample", sorted(p.stem for p in SAMPLES.glob("*.pb")))
def test_every_sample_draws_well_formed_dot(sample):
    graph = api.load(str(SAMPLES / f"{sample}.pb"))
    collapsed, _ = check_dot(to_dot(layout(graph)))
    everything, edges = check_dot(to_dot(layout(graph, expand_all=True)))
    node_ids = {n for n in everything if not n.startswith("legend ")}
    assert node_ids == {node.name for node in graph.nodes}            # expanded: every node, by name
    for node in graph.nodes:                                          # labelled with its op
        assert everything[node.name].endswith("\\n" + node.op)
    assert len(collapsed) <= len(everything)
    data_edges = {(ref.node.name, node.name) for node in graph.nodes for ref in node.inputs}
    assert data_edges <= set(edges)


def test_expand_opens_a_scope_as_a_cluster_and_loops_are_boxes():
    graph = api.load(str(SAMPLES / "while_loop.pb"))
    picture = layout(graph, expand=["double"])
    assert picture.clusters == ["double"]
    loop = picture.items["loop:double/while_context"]
    assert (loop.kind, loop.cluster, loop.nodes) == ("loop", "double", 11)
    assert "scope:accumulate" in picture.items                        # still collapsed
    opened = layout(graph, expand=["double", "double/while_context"])
    assert "loop:double/while_context" not in opened.items
    assert (opened.items["double/Merge"].label, opened.items["double/Merge"].cluster) == ("Merge", "double")
    assert opened.items["scope:double/Mul"].nodes == 2               # the loop's own scopes, collapsed
    assert layout(graph, depth=1).clusters == ["accumulate", "double"]


def test_devices_fill_with_a_legend_and_control_edges_are_dashed():
    b = GraphBuilder()
    with b.device("/cpu:0"):
        x = b.placeholder("float32", [2, 3], name="in/x")
        y = b.relu(x, name="in/relu")
    with b.device("/gpu:0"):
        z = b.tanh(y, name="out/tanh")
        with b.control_dependencies([x.node]):
            b.identity(z, name="out/id")
    picture = layout(b.graph)
    assert picture.items["scope:in"].device == "/device:CPU:0" and picture.items["scope:out"].device == "/device:GPU:0"
    text = to_dot(picture)
    assert '\t"scope in" -> "scope out" [label="[2,3]"]\n' in text
    assert '\t\t"legend /device%3ACPU%3A0" [label="/device:CPU:0" fillcolor="#a6cee3" shape=box style=filled]\n' in text
    assert '\t\t"legend /device%3AGPU%3A0" [label="/device:GPU:0" fillcolor="#b2df8a" shape=box style=filled]\n' in text
    opened = to_dot(layout(b.graph, expand_all=True))
    assert '\t"in/x" -> "out/id" [style=dashed]\n' in opened
    b2 = GraphBuilder()
    with b2.device("/cpu:0"):
        p = b2.placeholder("float32", [1], name="s/a")
    with b2.device("/gpu:0"):
        b2.relu(p, name="s/b")
    assert picture.devices == ["/device:CPU:0", "/device:GPU:0"]
    assert layout(b2.graph).items["scope:s"].device == "(mixed)"


def test_a_graph_wrapped_in_one_scope_is_drawn_inside_it():
    b = GraphBuilder()
    with b.name_scope("model"):
        x = b.placeholder("float32", [2], name="x")
        with b.name_scope("layer"):
            y = b.relu(x, name="relu")
            b.tanh(y, name="tanh")
        b.sigmoid(x, name="out")
    assert list(layout(b.graph).items) == ["scope:model"]
    opened = layout(b.graph, depth=None)
    assert list(opened.items) == ["model/x", "scope:model/layer", "model/out"] and opened.clusters == ["model"]


def test_several_tensors_between_boxes_are_counted():
    b = GraphBuilder()
    x = b.placeholder("float32", [4], name="a/x")
    y = b.placeholder("float32", [4], name="a/y")
    b.add(x, y, name="b/sum")
    b.mul(x, b.const(np.ones(4, np.float32), name="b/one"), name="b/mul")
    text = to_dot(layout(b.graph))
    assert '\t"scope a" -> "scope b" [label="2 tensors"]\n' in text


def test_usage_errors_are_one_line(tmp_path):
    code, _, stderr = run_dftool("draw", MLP, tmp_path / "x.dot", "--expand", "dens")
    assert code == 2
    assert error_line(stderr) == ("error: --expand dens: no name scope or while-loop frame of that name "
                                  "(hint: did you mean 'dense'?)")
    code, _, stderr = run_dftool("draw", MLP, tmp_path / "x.dot", "--expand-all", "--max-nodes", "5")
    assert code == 2
    assert error_line(stderr) == ("error: the picture would have 11 boxes and nodes, more than --max-nodes 5 "
                                  "(hint: collapse more (a smaller --depth, fewer --expand), draw a part of the "
                                  "graph (dftool prune), or raise --max-nodes)")
    code, _, stderr = run_dftool("draw", MLP, tmp_path / "x.pdf")
    assert code == 2 and error_line(stderr).startswith(f"error: {tmp_path / 'x.pdf'}: cannot tell the picture format")
    assert not (tmp_path / "x.dot").exists() and not (tmp_path / "x.pdf").exists()


def test_svg_without_dot_is_one_line_naming_the_package(tmp_path, monkeypatch):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    code, _, stderr = run_dftool("draw", MLP, tmp_path / "x.svg")
    assert code == 1
    assert error_line(stderr) == ("error: writing svg needs Graphviz's 'dot' program, which is not installed "
                                  "(hint: install the system package 'graphviz' (apt install graphviz, brew install "
                                  "graphviz), or write .dot and render it elsewhere)")
    assert not (tmp_path / "x.svg").exists()


def _stand_in_dot(folder: Path, script: str) -> None:
    folder.mkdir()
    program = folder / "dot"
    program.write_text("#!/bin/sh\n" + script)
    program.chmod(program.stat().st_mode | stat.S_IXUSR)


def test_svg_and_png_go_through_dot(tmp_path, monkeypatch):
    """A stand-in `dot` that records its arguments and input: the CLI pipes the DOT text to
    `dot -Tsvg` and writes what it prints; a failing `dot` is one error line, OUT untouched."""
    bin_dir = tmp_path / "bin"
    _stand_in_dot(bin_dir, f'echo "$@" > {tmp_path}/args\ncat > {tmp_path}/input\necho "<svg/>"\n')
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    code, _, stderr = run_dftool("draw", MLP, tmp_path / "x.svg", "-q")
    assert code == 0, stderr
    assert (tmp_path / "args").read_text() == "-Kdot -Tsvg\n" and (tmp_path / "input").read_text() == MLP_DOT
    assert (tmp_path / "x.svg").read_text() == "<svg/>\n"
    failing = tmp_path / "bin2"
    _stand_in_dot(failing, 'echo "Error: syntax error in line 1" >&2\nexit 1\n')
    monkeypatch.setenv("PATH", f"{failing}{os.pathsep}{os.environ['PATH']}")
    code, _, stderr = run_dftool("draw", MLP, tmp_path / "y.png")
    assert code == 1
    assert error_line(stderr) == "error: Graphviz 'dot' failed to render png: Error: syntax error in line 1"
    assert not (tmp_path / "y.png").exists()


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")
@pytest.mark.parametrize("sample", ["mlp", "while_loop", "multi_device"])
def test_real_svg_is_valid(sample, tmp_path):
    out = tmp_path / f"{sample}.svg"
    code, _, stderr = run_dftool("draw", SAMPLES / f"{sample}.pb", out, "--depth", "1")
    assert code == 0, stderr
    root = ElementTree.parse(out).getroot()
    assert root.tag.endswith("svg")
