"""TensorBoard support: event files (event_log.EventLog, through TensorBoard's own writer) and
finding the summary tensor a run fetches each step (find.find_summary_tensor). The summary ops
themselves are graphtool/ops/summary.py and graphtool/exec/kernels/summary.py."""
from .event_log import EventLog
from .find import find_summary_tensor, find_summary_tensors

__all__ = ["EventLog", "find_summary_tensor", "find_summary_tensors"]
