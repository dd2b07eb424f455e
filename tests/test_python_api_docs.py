"""docs/python-api.md's examples run as written: every ```python block, in order, in one namespace,
in a directory holding the samples they load (as `dftool samples ... --dir .` would leave it)."""
from __future__ import annotations

import re
import shutil

from .helpers import REPO_ROOT

DOC = REPO_ROOT / "docs" / "python-api.md"
SAMPLES = ("mlp", "multi_device")


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_every_example_runs(tmp_path, monkeypatch, capsys):
    for name in SAMPLES:
        for suffix in (".pb", ".feeds.npz"):
            shutil.copy(REPO_ROOT / "sample_graphs" / f"{name}{suffix}", tmp_path)
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks(DOC.read_text())
    assert len(blocks) >= 6
    namespace: dict = {}
    for index, block in enumerate(blocks):
        exec(compile(block, f"{DOC.name} block {index + 1}", "exec"), namespace)
    printed = capsys.readouterr().out
    # The reprs the page shows are the ones printed.
    for line in DOC.read_text().splitlines():
        if line.startswith("# <"):
            assert line[2:] in printed, line
    assert (tmp_path / "copy.pbtxt").read_text().startswith("node {")
    assert "logits/missing" in printed
