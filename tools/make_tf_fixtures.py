#!/usr/bin/env python3
"""Record TensorFlow reference fixtures for dftool's conformance tests.

Builds small TensorFlow v1 graphs (graph mode, v1 control flow: Switch/Merge/Enter/Exit,
TensorArrayV3, StackV2; reference variables frozen into Const), runs them with TensorFlow, and
writes one directory per case under ``tests/fixtures/tf/<case>/``:

    graph.pb       binary GraphDef as TensorFlow wrote it; nodes with outputs carry `_output_shapes`
    feeds.npz      feed values keyed by tensor name with port (``x:0``)
    expected.npz   fetched values keyed by tensor name with port (``probs:0``)
    case.json      name, family, description, feeds, fetches, rtol, atol, ops, notes, cpu_devices,
                   extra_runs (more feeds_<run>.npz / expected_<run>.npz pairs) and skipped ops
    feeds_<run>.npz / expected_<run>.npz   one pair per entry of extra_runs
    expected_grads.npz (and expected_grads_<run>.npz per extra run)   only for a case that
                   differentiates: TensorFlow's tf.gradients(y, xs) keyed by x (``w:0``); case.json
                   then has "gradients": {"y", "xs", "expected"} and each extra run "expected_grads".
                   graph.pb stays forward-only (the `grad_reference` family checks `dftool grad`)

and ``tests/fixtures/tf/manifest.json`` listing every case and the TensorFlow version.

Run it with the TensorFlow venv (the project itself never needs TensorFlow):

    $TF_PYTHON tools/make_tf_fixtures.py                 # every case
    $TF_PYTHON tools/make_tf_fixtures.py --only cond while_loop
    $TF_PYTHON tools/make_tf_fixtures.py --only $($TF_PYTHON \
        tools/make_tf_fixtures.py --list | awk '$2 == "grad_reference" {print $1}')
    $TF_PYTHON tools/make_tf_fixtures.py --list

Each generated case directory is deleted and rewritten; a full run also removes case directories
no longer registered. The output is deterministic: every case has its own seed, sessions run
single-threaded with grappler and the classic graph optimizer off (so TensorFlow executes exactly
the ops in graph.pb), protos are serialized deterministically and the .npz files carry fixed
timestamps, so re-running reproduces the files byte for byte.

The tests only read these files; they never import TensorFlow.

The cases live in the package next to this script, one module per family
(tools/tf_fixtures/models.py, control_flow.py, gradients.py, multi_device.py, ops_math.py,
ops_array.py, ops_nn.py, ops_dtype.py, ops_segment.py, grad_reference.py, stateful.py);
tools/tf_fixtures/recording.py runs
and writes them.

Adding a case: in its family's module, write a function taking a `Builder` and decorate it with
`@case(...)`. Create inputs with `b.placeholder(name, value)` (the value becomes the feed), and
mark outputs with `b.fetch(tensor, name)` or create single ops with `b.raw(OpType, name, **args)`,
which names the op after the edge case and fetches its outputs. `b.variant(run, **feeds)` adds
another run of the same graph with some feeds replaced; `b.variable(name, value)` makes a variable
that is frozen; `b.differentiate(y, xs)` fetches y and records tf.gradients(y, xs) as data. A new
family gets a new module, imported in tools/tf_fixtures/__init__.py.
"""
import argparse
import shutil
import sys
from pathlib import Path

from tf_fixtures import REGISTRY, generate, write_manifest  # the package beside this script

OUT_DIR = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "tf"


def remove_unregistered(out_dir):
    """Delete case directories whose case is no longer registered."""
    for stale in out_dir.glob("*/case.json"):
        if stale.parent.name not in REGISTRY:
            shutil.rmtree(stale.parent)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Record TensorFlow reference fixtures.")
    parser.add_argument("--only", nargs="+", metavar="CASE", choices=sorted(REGISTRY),
                        help="generate only these cases (the others are left alone)")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output directory")
    args = parser.parse_args(argv)
    if args.list:
        for spec in REGISTRY.values():
            print(f"{spec.name:32} {spec.family:14} {spec.description}")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.only:
        remove_unregistered(args.out)
    for name in args.only or REGISTRY:
        print(f"{name} ...", end=" ", file=sys.stderr, flush=True)
        graph_def = generate(REGISTRY[name], args.out)
        print(f"{len(graph_def.node)} nodes", file=sys.stderr)
    write_manifest(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
