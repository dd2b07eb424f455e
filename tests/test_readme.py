"""The README's shell blocks run as written.

Every ```sh block of README.md is run by bash (`set -euo pipefail`, so a failing stage of a
pipeline fails the block) in a fresh directory holding the bundled `sample_graphs/`, with
`dftool` on PATH being this checkout's entry point. The two set-up blocks (they create a venv and
install from the network) are not run whole: the test checks they are still the two set-up
commands and runs the dftool command the first one ends with.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import REPO_ROOT

README = REPO_ROOT / "README.md"
SETUP_PREFIX = "python3 -m venv .venv && "


def shell_blocks() -> list[str]:
    return re.findall(r"^```(?:sh|bash|shell)\n(.*?)^```", README.read_text(), flags=re.S | re.M)


def example_blocks() -> list[str]:
    return [block for block in shell_blocks() if not block.startswith(SETUP_PREFIX)]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A fresh directory with the samples and a `dftool` that runs this checkout."""
    (tmp_path / "sample_graphs").symlink_to(REPO_ROOT / "sample_graphs")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "dftool"
    launcher.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m cli.main \"$@\"\n")
    launcher.chmod(0o755)
    return tmp_path


def run_block(block: str, workdir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{workdir / 'bin'}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "120"}
    return subprocess.run(["bash", "-c", "set -euo pipefail\n" + block], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_readme_has_its_two_setup_commands_and_examples():
    setups = [block for block in shell_blocks() if block.startswith(SETUP_PREFIX)]
    assert len(setups) == 2, "the README keeps exactly two set-up commands"
    assert ".venv/bin/dftool run sample_graphs/" in setups[0]        # install, then run a sample
    assert "pip install -q -e '.[test,jit]'" in setups[1] and setups[1].rstrip().endswith("pytest -q")
    assert len(example_blocks()) >= 4


def test_the_first_setup_command_runs_a_bundled_sample(workdir):
    setup = next(block for block in shell_blocks() if block.startswith(SETUP_PREFIX))
    command = setup.strip().split(" && ")[-1]
    assert command.startswith(".venv/bin/dftool ")
    result = run_block(command.removeprefix(".venv/bin/"), workdir)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("index", range(len(example_blocks())))
def test_readme_example_runs_as_written(index, workdir):
    block = example_blocks()[index]
    result = run_block(block, workdir)
    assert result.returncode == 0, f"README block {index + 1} failed:\n{block}\n{result.stderr}"
    assert "error:" not in result.stderr
