"""How much faster optimized graphs run: step time of the original vs `dftool optimize`'s output
(all passes) for the frozen MLP and conv net fixtures and the bundled samples, each at its own
feeds and at batch 256. Prints a table (not a pass/fail test).

    python tests/bench/bench_optimize.py [--repeat N]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from graphtool import graph_io  # noqa: E402
from graphtool.exec.session import Session  # noqa: E402
from graphtool.inspect import graph_outputs  # noqa: E402
from graphtool.ir import from_graphdef  # noqa: E402
from graphtool.opt.base import PassContext  # noqa: E402
from graphtool.opt.manager import optimize  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "tf"
CASES = {
    "mlp_frozen (TF fixture)": (FIXTURES / "mlp_frozen" / "graph.pb", FIXTURES / "mlp_frozen" / "feeds.npz"),
    "convnet_frozen (TF fixture)": (FIXTURES / "convnet_frozen" / "graph.pb", FIXTURES / "convnet_frozen" / "feeds.npz"),
    "sample mlp": (ROOT / "sample_graphs" / "mlp.pb", ROOT / "sample_graphs" / "mlp.feeds.npz"),
    "sample convnet": (ROOT / "sample_graphs" / "convnet.pb", ROOT / "sample_graphs" / "convnet.feeds.npz"),
}


def best_step(session: Session, fetches, feeds, repeat: int) -> float:
    session.run(fetches, feeds)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        session.run(fetches, feeds)
        times.append(time.perf_counter() - start)
    return min(times)


def batched(feeds: dict, batch: int) -> dict:
    """The feeds with their leading (batch) dim repeated up to `batch`."""
    return {k: np.resize(v, (batch, *v.shape[1:])) if v.ndim else v for k, v in feeds.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    print(f"{'graph':30} {'batch':>6} {'nodes':>9} {'original':>12} {'optimized':>12} {'speed-up':>9}")
    for label, (graph_path, feeds_path) in CASES.items():
        original = from_graphdef(graph_io.load_graphdef(str(graph_path)))
        fetches = [ref.name for node in graph_outputs(original) for ref in node.outputs]
        optimized = original.copy()
        optimize(optimized, PassContext(fetches=[optimized.tensor(f) for f in fetches]))
        feeds = dict(np.load(feeds_path))
        for batch in (None, 256):
            step_feeds = feeds if batch is None else batched(feeds, batch)
            before = best_step(Session(original, threads=2), fetches, step_feeds, args.repeat)
            after = best_step(Session(optimized, threads=2), fetches, step_feeds, args.repeat)
            size = next(iter(step_feeds.values())).shape[0]
            print(f"{label:30} {size:>6} {len(original):>4}->{len(optimized):<4} {before * 1e6:>10.0f}us "
                  f"{after * 1e6:>10.0f}us {before / after:>8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
