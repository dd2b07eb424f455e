"""Checkpoint ops (ops/io.py) have no gradients: their outputs come from files (RestoreV2,
Restore, RestoreSlice) or are file names (ShardedFilename, ShardedFilespec), and the save ops
have no outputs."""
from __future__ import annotations

from .registry import not_differentiable

not_differentiable("RestoreV2", "Restore", "RestoreSlice", "ShardedFilename", "ShardedFilespec")
