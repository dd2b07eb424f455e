"""Checkpoints of a multi-step run, in TensorFlow's format and layout.

A checkpoint is saved and restored by running Saver nodes in the session, as tf.train.Saver does:
the graph's own `save/` subgraph when it has one, else a built-in saver of every variable added
to the graph before the session is made (`prepare_graph`). Prefixes are `DIR/model.ckpt-STEP`;
after each save the `checkpoint` state file names the newest prefix and the ones kept
(`keep`: older prefixes' files are deleted, as Saver(max_to_keep) does). Running the Saver nodes
through the session means a cluster saves and restores every task's variables the same way.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..checkpoint import saver_graph, state_file
from ..checkpoint.saver_graph import SaverNodes
from ..errors import UsageError
from ..graph_io import ensure_directory

PREFIX_BASENAME = "model.ckpt"
_STEP_SUFFIX = re.compile(r"-(\d+)$")


def prepare_graph(graph) -> SaverNodes:
    """The graph's Saver nodes, adding a saver of every variable when it has none (before a
    Session is made from the graph)."""
    return saver_graph.find_saver(graph) or saver_graph.add_saver(graph)


def step_of(prefix: str) -> int | None:
    """The step a prefix was saved at (`model.ckpt-20` -> 20), or None without a step suffix."""
    match = _STEP_SUFFIX.search(os.path.basename(prefix))
    return int(match.group(1)) if match else None


@dataclass
class Checkpointing:
    """Saving every `save_every` steps into `directory` and restoring, through `saver`'s nodes."""

    session: Any   # a Session (or one on a cluster): what runs the Saver nodes
    saver: SaverNodes
    directory: str | None = None
    save_every: int | None = None
    keep: int | None = 5
    timeout: float | None = None

    def __post_init__(self):
        if self.directory is not None:
            ensure_directory(self.directory, "--checkpoint-dir")
        self.saved: list[str] = []

    def due(self, step: int) -> bool:
        return self.directory is not None and self.save_every is not None and step % self.save_every == 0

    def save(self, step: int) -> str:
        """Save the session's variables as `directory/model.ckpt-STEP`; returns the prefix."""
        assert self.directory is not None
        prefix = os.path.join(self.directory, f"{PREFIX_BASENAME}-{step}")
        self.session.run([self.saver.save_tensor], {self.saver.filename_tensor: _string(prefix)},
                         timeout=self.timeout)
        state_file.record_checkpoint(self.directory, prefix, keep=self.keep)
        self.saved.append(prefix)
        return prefix

    def restore(self, prefix: str) -> None:
        """Assign every saved variable from checkpoint `prefix`."""
        self.session.run([], {self.saver.filename_tensor: _string(prefix)}, targets=[self.saver.restore_op],
                         timeout=self.timeout)

    def latest(self) -> str | None:
        """The newest checkpoint of `directory` (by its state file), if any."""
        return state_file.latest_checkpoint(self.directory) if self.directory else None

    def resolve(self, spec: str) -> str:
        """--restore's argument as a checkpoint prefix: `latest` (the newest in --checkpoint-dir),
        a directory (its newest), or a prefix. UsageError when there is nothing to restore."""
        if spec == "latest":
            if self.directory is None:
                raise UsageError("--restore latest: name the directory with --checkpoint-dir",
                                 hint="or give --restore a checkpoint prefix or directory")
            found = self.latest()
            if found is None:
                raise UsageError(f"--restore latest: no checkpoint in '{self.directory}' (no 'checkpoint' state "
                                 f"file naming one)", hint="train without --restore first, or name a prefix")
            return found
        if os.path.isdir(spec):
            found = state_file.latest_checkpoint(spec)
            if found is None:
                raise UsageError(f"--restore '{spec}': the directory has no 'checkpoint' state file naming a checkpoint")
            return found
        if not os.path.exists(f"{spec}.index"):
            raise UsageError(f"--restore '{spec}': no checkpoint there ('{spec}.index' does not exist)",
                             hint="give the prefix without .index/.data suffixes, a directory, or `latest`")
        return spec


def _string(text: str) -> np.ndarray:
    """A string scalar as the session feeds it (a 0-d object array of bytes)."""
    return np.array(text.encode(), dtype=object)
