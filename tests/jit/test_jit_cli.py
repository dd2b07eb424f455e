"""`dftool run/profile --jit` and DFTOOL_JIT through the real command line: the same results as the
interpreter, clusters reported with -v, a warm persistent cache that spares a second process the
compile, and a one-line error naming the extra when JAX is missing."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("jax")

from ..helpers import REPO_ROOT, error_line, run_dftool  # noqa: E402

MLP = ["sample_graphs/mlp.pb", "--feeds", "sample_graphs/mlp.feeds.npz"]
RNN = ["sample_graphs/rnn.pb", "--feeds", "sample_graphs/rnn.feeds.npz"]


def _dftool(*args, env=None, timeout=300):
    full_env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "200", **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "cli.main", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO_ROOT, env=full_env, timeout=timeout, stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def cache(tmp_path):
    return {"DFTOOL_JIT_CACHE": str(tmp_path / "jax-cache")}


def test_run_jit_matches_the_interpreter_and_reports_clusters_with_v(tmp_path, cache):
    plain = tmp_path / "plain.npz"
    code, _, err = _dftool("run", *MLP, "--output", plain)
    assert code == 0, err
    code, _, err = _dftool("run", *MLP, "--jit", "-v", "--expect", plain, "--rtol", "1e-4", env=cache)
    assert code == 0, err
    assert "cluster(s) compile" in err and "jit_cluster_0" in err and "MatMul" in err
    assert "stayed in the interpreter" in err and "fed by the caller" in err


def test_the_environment_variable_turns_the_jit_on_and_no_jit_off(cache):
    code, out, err = _dftool("run", *MLP, "--json", env={**cache, "DFTOOL_JIT": "1"})
    assert code == 0, err
    assert json.loads(out)["jit"]["clusters"]
    code, out, err = _dftool("run", *MLP, "--json", "--no-jit", env={**cache, "DFTOOL_JIT": "1"})
    assert code == 0, err
    assert "jit" not in json.loads(out)


def test_profile_jit_reports_clusters_and_compile_time(cache):
    code, out, err = _dftool("profile", *RNN, "--jit", "--repeat", "2", "--warmup", "1", "--json", env=cache)
    assert code == 0, err
    jit = json.loads(out)["jit"]
    assert any("StatelessWhile" in c["ops"] for c in jit["clusters"]), jit
    assert all(c["compile_seconds"] > 0 for c in jit["clusters"] if c["calls"])
    assert jit["left_out"]


@pytest.mark.slow
def test_a_second_process_with_a_warm_cache_does_not_recompile(cache):
    """The first process compiles and stores every cluster's executable; the second loads them
    (no compilation at all: JAX's cache is not even asked) and its compile time is a fraction of
    the first's."""
    reports = []
    for _ in range(2):
        code, out, err = _dftool("run", *RNN, "--jit", "--json", env=cache)
        assert code == 0, err
        reports.append(json.loads(out)["jit"])
    first, second = reports
    assert first["persistent_cache"]["misses"] >= 1
    assert first["persistent_cache"]["executables_stored"] == len(first["clusters"])
    assert second["persistent_cache"]["misses"] == 0 and second["persistent_cache"]["hits"] == 0
    assert second["persistent_cache"]["executables_loaded"] == len(second["clusters"])
    compile_first = sum(c["compile_seconds"] for c in first["clusters"])
    compile_second = sum(c["compile_seconds"] for c in second["clusters"])
    assert compile_second < compile_first


_NO_TRACING = """
import sys
from graphtool.jit import trace
def refuse(*args, **kwargs):
    raise AssertionError("traced again")
trace.evaluate = refuse
from cli.main import run
sys.argv = ["dftool", *sys.argv[1:]]
run()
"""


def test_a_second_process_loads_the_compiled_program_instead_of_tracing(cache, tmp_path):
    """The first process stores each cluster's executable (executable_cache.py); a second one
    whose tracer would fail still runs it and computes the same numbers."""
    import numpy as np

    code, out, err = _dftool("run", *RNN, "--jit", "--output", tmp_path / "first.npz", env=cache)
    assert code == 0, err
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **cache}
    proc = subprocess.run([sys.executable, "-c", _NO_TRACING, "run", *RNN, "--jit", "--json",
                           "--output", str(tmp_path / "second.npz")], capture_output=True,
                          text=True, cwd=REPO_ROOT, env=env, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    clusters = json.loads(proc.stdout)["jit"]["clusters"]
    assert clusters and all(c["compiles"] >= 1 and not c["interpreted_because"] for c in clusters), clusters
    with np.load(tmp_path / "first.npz") as first, np.load(tmp_path / "second.npz") as second:
        assert sorted(first.files) == sorted(second.files)
        for name in first.files:
            np.testing.assert_array_equal(second[name], first[name])


_NO_JAX = """
import sys
class _NoJax:
    def find_spec(self, name, path=None, target=None):
        if name == "jax" or name.startswith("jax."):
            raise ImportError("No module named 'jax'")
sys.meta_path.insert(0, _NoJax())
import importlib.util
_find = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: None if name == "jax" else _find(name, *a)
from cli.main import run
sys.argv = ["dftool"] + sys.argv[1:]
run()
"""


@pytest.mark.parametrize("how", [["--jit"], []])
def test_without_jax_the_jit_is_a_one_line_error_naming_the_extra(how):
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "DFTOOL_JIT": "" if how else "1"}
    proc = subprocess.run([sys.executable, "-c", _NO_JAX, "run", *MLP, *how], capture_output=True, text=True,
                          cwd=REPO_ROOT, env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    line = error_line(proc.stderr)
    assert "JAX" in line and "pip install 'dftool[jit]'" in line


def test_without_jax_the_interpreter_still_runs():
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "DFTOOL_JIT": ""}
    proc = subprocess.run([sys.executable, "-c", _NO_JAX, "run", *MLP], capture_output=True, text=True,
                          cwd=REPO_ROOT, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_run_dftool_helper_sees_jit_option():
    code, out, _ = run_dftool("run", "--help")
    assert code == 0 and "--jit" in out and "--jit-cache" in out
