"""The error every checkpoint problem raises: an invalid input file (exit 3), naming the file."""
from ..errors import InvalidGraphError


class CheckpointError(InvalidGraphError):
    """A tensor bundle or table file that is missing, truncated, corrupt or unsupported."""
