"""Packaging: the wheel (and an editable install) put `graphtool` and `dftool` into site-packages,
no top-level `cli`, with the sample graphs, py.typed and the license; the `dftool` console script
works from both (docs/packaging.md).

Nothing is downloaded: the wheel is built without build isolation by the setuptools installed here
(the `test` extra asks for one new enough), and each install goes into a fresh virtual environment
that sees this environment's dependencies through a .pth file naming its site-packages. A .pth
file's directories are not scanned for further .pth files, so this environment's own (editable)
dftool stays invisible there.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from .helpers import REPO_ROOT

pytestmark = pytest.mark.slow

# What a build needs from the checkout (tests, tools and fixtures stay out).
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE", "CHANGELOG.md",
           "cli", "graphtool", "sample_graphs")


def _run(*args, cwd, check=True, **kw) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300, **kw)
    if check:
        assert proc.returncode == 0, f"{args} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A copy of the checkout's build inputs: building writes build/ and *.egg-info beside them."""
    root = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        path = REPO_ROOT / name
        if path.is_dir():
            shutil.copytree(path, root / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, root / name)
    return root


def _fresh_venv(where: Path) -> Path:
    """A virtual environment whose only extra path is this environment's site-packages."""
    _run(sys.executable, "-m", "venv", "--without-pip", where, cwd=where.parent)
    python = where / "bin" / "python"
    purelib = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                        cwd=where).stdout.strip())
    ours = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    (purelib / "dependencies.pth").write_text("".join(f"{path}\n" for path in ours))
    return python


def _pip_install(python: Path, *args, cwd: Path) -> None:
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
         "--no-build-isolation", "-q", *args, cwd=cwd)


def _check_installed(python: Path, workdir: Path, expect_in: Path) -> None:
    """Run from a directory outside any checkout: no `cli`, graphtool/dftool from `expect_in`,
    and `dftool samples` lists and copies samples that then run."""
    no_cli = _run(python, "-c", "import cli", cwd=workdir, check=False)
    assert no_cli.returncode != 0 and "No module named 'cli'" in no_cli.stderr
    where = _run(python, "-c", "import dftool, graphtool; print(dftool.__file__); print(graphtool.__file__)",
                 cwd=workdir).stdout.split()
    assert all(Path(path).resolve().is_relative_to(expect_in.resolve()) for path in where), where
    dftool = python.parent / "dftool"
    listed = _run(dftool, "samples", cwd=workdir).stdout
    assert {"mlp", "convnet", "while_loop"} <= {line.split()[0] for line in listed.splitlines()}
    _run(dftool, "samples", "mlp", "--dir", "samples", cwd=workdir)
    ran = _run(dftool, "run", "samples/mlp.pb", "--feeds", "samples/mlp.feeds.npz", cwd=workdir)
    assert ran.stdout.startswith("probs  float32[4, 10]")
    assert _run(python, "-m", "dftool", "--version", cwd=workdir).stdout.strip() == "dftool, version 0.1.0"


def test_wheel_installs_dftool_and_graphtool_but_no_cli(source, tmp_path):
    dist = tmp_path / "dist"
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
         "-w", dist, source, cwd=tmp_path)
    wheel = next(dist.glob("dftool-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert {name.split("/")[0] for name in names if not name.startswith("dftool-")} == {"dftool", "graphtool"}
    assert "graphtool/py.typed" in names and "dftool/sample_graphs/mlp.feeds.npz" in names
    assert not any(name.endswith(".py") for name in names if name.startswith("dftool/sample_graphs/"))
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert "License-Expression: Apache-2.0" in metadata

    python = _fresh_venv(tmp_path / "venv")
    _pip_install(python, wheel, cwd=tmp_path)
    workdir = tmp_path / "work"
    workdir.mkdir()
    _check_installed(python, workdir, tmp_path / "venv")


def test_editable_install_runs_the_checkout(source, tmp_path):
    """`pip install -e .` (what the README and .ci/run do): the console script and imports come from
    the checkout's cli/ and graphtool/ folders, the samples from its sample_graphs/."""
    python = _fresh_venv(tmp_path / "venv")
    _pip_install(python, "-e", source, cwd=tmp_path)
    workdir = tmp_path / "work"
    workdir.mkdir()
    _check_installed(python, workdir, source)
