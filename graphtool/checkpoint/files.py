"""Reading a checkpoint file whole, within dftool's input bound: the one door the index and V1
readers, `dftool inspect` and MergeV2Checkpoints share."""
from __future__ import annotations

from .errors import CheckpointError


def read_checkpoint_file(path: str) -> bytes:
    """A checkpoint file's bytes, within the input bound (--max-input-bytes); CheckpointError
    naming it when it cannot be read or is too big."""
    from ..errors import InvalidGraphError
    from ..graph_io import read_bounded  # here: graph_io imports this package (formats -> table)

    try:
        with open(path, "rb") as handle:
            return read_bounded(handle, path)
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such file") from None
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except CheckpointError:
        raise
    except InvalidGraphError as exc:
        raise CheckpointError(str(exc)) from None
