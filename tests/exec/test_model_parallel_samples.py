"""The model-parallel sample graphs (sample_graphs/model_parallel.py): the paper's 8-layer RNN
with one layer per device inside one while loop, and a 4-stage pipeline. Each gives exactly the
same results on the devices it names (one executor per device) as on one device, whatever
parallel_iterations allows."""
import numpy as np
import pytest

from graphtool import graph_io
from graphtool.exec.session import Session
from graphtool.ir import Graph, from_graphdef
from sample_graphs.model_parallel import colocate_loop_state, pipeline, stacked_rnn

from ..helpers import REPO_ROOT, run_dftool

SAMPLES = REPO_ROOT / "sample_graphs"
OUTPUTS = {"model_parallel_rnn": ["final_state", "top_sum"], "pipeline": ["total"]}


def on_one_device(graph: Graph) -> Graph:
    """A copy of `graph` that names no device (so it runs on one executor)."""
    copy = graph.copy()
    for node in copy.nodes:
        node.device = ""
    return copy


def assert_same_on_one_and_many_devices(graph: Graph, feeds: dict, fetches: list[str], devices: int):
    many = Session(graph, threads=1).run(fetches, feeds, timeout=60)
    one = Session(on_one_device(graph), threads=2).run(fetches, feeds, timeout=60)
    assert len(many.devices) == devices and len(one.devices) == 1
    for name, got, want in zip(fetches, many.values, one.values):
        assert np.array_equal(got, want), name
    return many


@pytest.mark.parametrize("name, devices", [("model_parallel_rnn", 8), ("pipeline", 4)])
def test_committed_sample_runs_equally_on_one_and_on_its_devices(name, devices):
    graph = from_graphdef(graph_io.load_graphdef(str(SAMPLES / f"{name}.pb")), name)
    with np.load(SAMPLES / f"{name}.feeds.npz") as archive:
        feeds = {key: archive[key] for key in archive.files}
    result = assert_same_on_one_and_many_devices(graph, feeds, OUTPUTS[name], devices)
    assert list(result.iterations.values()) == [13 if name == "model_parallel_rnn" else 9]


@pytest.mark.parametrize("parallel_iterations", [1, 3])
@pytest.mark.parametrize("colocate_state", [False, True])
def test_stacked_rnn_any_parallel_iterations_and_state_layout(parallel_iterations, colocate_state):
    builder, feeds = stacked_rnn(np.random.default_rng(5), layers=3, hidden=4, batch=2, steps=5,
                                 parallel_iterations=parallel_iterations, colocate_state=colocate_state)
    assert_same_on_one_and_many_devices(builder.graph, feeds, OUTPUTS["model_parallel_rnn"], 3)


def test_pipeline_with_one_parallel_iteration():
    builder, feeds = pipeline(np.random.default_rng(6), stages=3, width=4, batch=2, micro_batches=5,
                              parallel_iterations=1)
    assert_same_on_one_and_many_devices(builder.graph, feeds, OUTPUTS["pipeline"], 3)


def test_colocate_loop_state_moves_each_variables_plumbing_to_its_value():
    builder, _ = stacked_rnn(np.random.default_rng(0), layers=2, hidden=4, batch=2, steps=2)
    graph = builder.graph
    colocate_loop_state(graph)
    for node in graph.nodes:
        if node.op == "NextIteration":
            merge = next(consumer for consumer, _ in node.uses())
            assert merge.device == node.device == node.inputs[0].node.device


def test_cli_runs_the_model_parallel_sample_on_eight_executors():
    code, out, err = run_dftool("run", SAMPLES / "model_parallel_rnn.pb", "--feeds",
                                SAMPLES / "model_parallel_rnn.feeds.npz", "--threads", "1")
    assert code == 0, err
    assert "final_state" in out and "ran on 8 devices, one executor each: cpu:0, cpu:1" in err
