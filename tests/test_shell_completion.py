"""Shell completion as docs/packaging.md describes it: click's _DFTOOL_COMPLETE protocol."""
from __future__ import annotations

import os
import subprocess
import sys

from .helpers import REPO_ROOT


def _complete(instruction: str, words: str = "", cword: int = 0) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "_DFTOOL_COMPLETE": instruction,
           "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    proc = subprocess.run([sys.executable, "-m", "cli.main"], env=env, cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_bash_script_registers_dftool():
    assert "complete -o nosort -F _dftool_completion dftool" in _complete("bash_source")
    assert _complete("zsh_source").startswith("#compdef dftool")


def test_commands_options_and_sample_names_complete():
    assert _complete("bash_complete", "dftool sa", 1).split() == ["plain,samples"]
    assert "plain,--passes" in _complete("bash_complete", "dftool optimize --pa", 2).split()
    assert _complete("bash_complete", "dftool samples con", 2).split() == ["plain,cond", "plain,convnet"]
