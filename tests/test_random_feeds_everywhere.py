"""Issue 20's acceptance: `run` and `profile --repeat 1 --warmup 0` of every sample, every TensorFlow
fixture graph and every SavedModel fixture succeed with `--random-feeds` alone (no other feed
option): the generated values fit what the graph does with them (graphtool/feeds/constraints.py),
the default fetches are the real outputs, and variables start from their initializers.

In-process (cli.main.main) to keep it fast; each graph gets a --timeout so a loop that a value
keeps running fails instead of hanging."""
from pathlib import Path

import pytest

from .helpers import REPO_ROOT

pytestmark = pytest.mark.slow

_FIXTURES = REPO_ROOT / "tests" / "fixtures"
GRAPHS = sorted(
    [p.relative_to(REPO_ROOT) for p in (REPO_ROOT / "sample_graphs").glob("*.pb")]
    + [p.relative_to(REPO_ROOT) for p in _FIXTURES.glob("tf*/*/graph.pb")]
    + [p.parent.relative_to(REPO_ROOT) for p in _FIXTURES.glob("saved_models/*/model/saved_model.pb")])


def test_the_acceptance_set_is_all_there():
    assert len([g for g in GRAPHS if g.parts[0] == "sample_graphs"]) >= 9
    assert len([g for g in GRAPHS if "saved_models" in g.parts]) >= 7
    assert len(GRAPHS) >= 150


@pytest.mark.parametrize("command", ["run", "profile"])
@pytest.mark.parametrize("graph", GRAPHS, ids=str)
def test_runs_on_generated_inputs_alone(graph: Path, command: str, capsys):
    from cli.main import main

    extra = ["--repeat", "1", "--warmup", "0"] if command == "profile" else []
    code = main([command, str(REPO_ROOT / graph), "--random-feeds", "--timeout", "60", *extra])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Traceback" not in captured.err
