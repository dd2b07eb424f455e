"""Static types: mypy finds no error in graphtool/ and cli/ with the configuration in pyproject.toml
([tool.mypy]), and that configuration stays honest: no module of ours has its errors switched off,
and every `# type: ignore` names the error it silences and says why.
"""
from __future__ import annotations

import re
import subprocess
import sys
import tomllib

import pytest

from .helpers import REPO_ROOT

# `# type: ignore[code]  # reason`: the code names what is silenced, the reason why mypy is wrong.
_IGNORE = re.compile(r"#\s*type:\s*ignore(?P<codes>\[[^\]]*\])?(?P<rest>.*)$")


def _mypy_config() -> dict:
    with open(REPO_ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["mypy"]


def _our_sources():
    for folder in ("graphtool", "cli"):
        for path in sorted((REPO_ROOT / folder).rglob("*.py")):
            if "proto" not in path.relative_to(REPO_ROOT).parts:
                yield path


def test_config_checks_both_packages_without_switching_errors_off():
    config = _mypy_config()
    assert config["files"] == ["graphtool", "cli"]
    assert config.get("ignore_errors") is not True and config.get("ignore_missing_imports") is not True
    for override in config.get("overrides", []):
        modules = override["module"]
        modules = [modules] if isinstance(modules, str) else modules
        assert override.get("ignore_errors") is not True, f"errors switched off for {modules}"
        if override.get("ignore_missing_imports"):
            ours = [m for m in modules if m.split(".")[0] in ("graphtool", "cli", "dftool")]
            assert not ours, f"missing imports ignored for our own modules {ours}"


def test_every_type_ignore_names_its_error_and_a_reason():
    bare = []
    for path in _our_sources():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = _IGNORE.search(line)
            if match and not (match["codes"] and match["rest"].strip().startswith("#")):
                bare.append(f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}")
    assert not bare, "type: ignore without [code] and a '# reason':\n" + "\n".join(bare)


@pytest.mark.slow
def test_mypy_is_clean(tmp_path):
    pytest.importorskip("mypy")
    # graphtool/jit is checked against JAX's own annotations (the `jit` extra, which CI installs).
    pytest.importorskip("jax")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), "--no-error-summary"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=900)
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    listed = "\n".join(errors[:80]) or proc.stdout[-4000:]
    assert proc.returncode == 0 and not errors, (
        f"mypy found {len(errors)} errors (exit {proc.returncode}):\n{listed}\n{proc.stderr[-2000:]}")
