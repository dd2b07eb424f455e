"""Every GraphDef TensorFlow wrote (tests/fixtures/tf) loads, verifies, round-trips unchanged,
inspects cleanly, and our shape inference agrees with the shapes TensorFlow recorded."""
from pathlib import Path

import pytest

from graphtool import graph_io
from graphtool.attrs import decode
from graphtool.ir import from_graphdef, to_graphdef
from graphtool.shape_inference import infer_shapes

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tf"
CASES = sorted(p.parent.name for p in FIXTURES.glob("*/graph.pb"))


def _load(case):
    return graph_io.load_graphdef(str(FIXTURES / case / "graph.pb"))


def test_fixtures_exist():
    assert len(CASES) >= 20, "run tools/make_tf_fixtures.py (needs tensorflow) to create the fixtures"


def _canonical_inputs(graph_def):
    """TensorFlow may spell output 0 as 'x' or 'x:0'; both mean the same edge."""
    for node in graph_def.node:
        for i, text in enumerate(node.input):
            if text.endswith(":0") and not text.startswith("^"):
                node.input[i] = text[:-2]
    return graph_def


@pytest.mark.parametrize("case", CASES)
def test_round_trip_reproduces_the_graphdef(case):
    original = _load(case)
    graph = from_graphdef(original, case)  # verifies
    exported = to_graphdef(graph)
    assert _canonical_inputs(exported) == _canonical_inputs(_load(case))
    # And through bytes, both formats.
    for text in (False, True):
        data = graph_io.serialize_graphdef(exported, text)
        assert graph_io.parse_graphdef(data, case, None) == exported


def _more_or_equally_specific(ours, theirs) -> bool:
    """Our shape fits TensorFlow's and knows at least every dim TensorFlow knows."""
    if theirs.dims is None:
        return True
    if ours.dims is None or len(ours.dims) != len(theirs.dims):
        return False
    return all(t is None or o == t for o, t in zip(ours.dims, theirs.dims))


@pytest.mark.parametrize("case", CASES)
def test_shape_inference_agrees_with_tensorflow(case):
    graph = from_graphdef(_load(case), case)
    result = infer_shapes(graph)
    assert not result.errors, list(result.errors.values())[:5]
    disagreements = []
    for node in graph.nodes:
        if "_output_shapes" not in node.attrs:
            continue
        recorded = decode(node.attrs["_output_shapes"])
        for index, theirs in enumerate(recorded):
            ours = result.shape(node.output(index))
            if not ours.is_compatible_with(theirs) or not _more_or_equally_specific(ours, theirs):
                disagreements.append(f"{node.name}:{index} ({node.op}) ours {ours} tensorflow {theirs}")
    assert not disagreements, f"{len(disagreements)} outputs differ: " + "; ".join(disagreements[:10])


@pytest.mark.parametrize("case", CASES)
def test_inspect_runs_cleanly(case, capsys):
    from cli.main import main

    assert main(["inspect", str(FIXTURES / case / "graph.pb"), "--json"]) == 0
    assert '"schema": "dftool.inspect/2"' in capsys.readouterr().out


def _case_json(case):
    import json

    return json.loads((FIXTURES / case / "case.json").read_text())


@pytest.mark.parametrize("case", CASES)
def test_inferred_types_and_shapes_fit_tensorflows_actual_outputs(case):
    """The values TensorFlow computed for the fetches have the dtype we infer and a shape that
    fits our static shape (with the feeds' real shapes given, as a run would)."""
    import numpy as np

    from graphtool import dtypes

    graph = from_graphdef(_load(case), case)
    feeds = np.load(FIXTURES / case / "feeds.npz")
    result = infer_shapes(graph, feed_shapes={name: feeds[name].shape for name in feeds.files})
    assert not result.errors, list(result.errors.values())[:3]
    expected = np.load(FIXTURES / case / "expected.npz")
    for fetch in _case_json(case)["fetches"]:
        ref = graph.tensor(fetch)
        actual = expected[fetch]
        inferred_dtype = result.dtype(ref).base
        if inferred_dtype is dtypes.string:
            assert actual.dtype.kind in "SUO", fetch
        else:
            assert inferred_dtype.numpy == actual.dtype, f"{fetch}: ours {inferred_dtype}, TensorFlow {actual.dtype}"
        assert result.shape(ref).is_compatible_with(actual.shape), \
            f"{fetch}: ours {result.shape(ref)}, TensorFlow computed {actual.shape}"
