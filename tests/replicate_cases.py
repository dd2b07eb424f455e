"""Shared helpers of the `dftool replicate` tests: the training graphs (tests/fixtures/replicate:
float64, batch 8, made by tools/make_replicate_fixtures.py; tests/fixtures/training_runs: float32
TF1 graphs, the MLP's batch is 8) and training them in one Session as `dftool run --init init
--target train --fetch loss` does."""
from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np

from graphtool import graph_io
from graphtool.exec.session import Session
from graphtool.ir import Graph, from_graphdef

FIXTURES = Path(__file__).resolve().parent / "fixtures"
STEPS = 20
# case -> (fixture directory, feeds file, rtol of the acceptance: float64 1e-10, float32 1e-4)
CASES = {
    "mlp64_adam_resource": (FIXTURES / "replicate" / "mlp64_adam_resource", "feeds.npz", 1e-10),
    "conv64_momentum_ref": (FIXTURES / "replicate" / "conv64_momentum_ref", "feeds.npz", 1e-10),
    "mlp64_sgd_random": (FIXTURES / "replicate" / "mlp64_sgd_random", "feeds.npz", 1e-10),
    "mlp_adam_ref": (FIXTURES / "training_runs" / "mlp_adam_ref", "feeds.npz", 1e-4),
    "mlp_momentum_resource": (FIXTURES / "training_runs" / "mlp_momentum_resource", "feeds.npz", 1e-4),
}


def load(case: str) -> Graph:
    directory = CASES[case][0]
    return from_graphdef(graph_io.load_graphdef(str(directory / "graph.pb")), case)


def feeds(case: str) -> dict[str, np.ndarray]:
    directory, name, _ = CASES[case]
    return dict(np.load(directory / name))


def rtol(case: str) -> float:
    return CASES[case][2]


def train(graph: Graph, step_feeds: dict, steps: int = STEPS, cluster=None) -> tuple[Session, np.ndarray]:
    session = Session(graph, threads=1, cluster=cluster)
    session.run([], targets=["init"])
    losses = [float(session.run(["loss:0"], step_feeds, targets=["train"]).values[0]) for _ in range(steps)]
    return session, np.asarray(losses)


@functools.lru_cache(maxsize=None)
def single_device_losses(case: str) -> np.ndarray:
    """The losses of the unreplicated graph on the full batch (the reference every replicated run meets)."""
    return train(load(case), feeds(case))[1]


def variable_names(graph: Graph) -> list[str]:
    return [node.name for node in graph if node.op in ("VariableV2", "VarHandleOp")]


def read_tensor(graph: Graph, name: str) -> str:
    """A tensor holding variable `name`'s value: a ref variable itself, else its TF1 read node."""
    if graph.get(name).op == "VariableV2":
        return f"{name}:0"
    return f"{name}/Read/ReadVariableOp:0"


def case_json(case: str) -> dict:
    return json.loads((CASES[case][0] / "case.json").read_text())
