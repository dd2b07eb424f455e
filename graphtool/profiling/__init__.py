"""Profiling from step statistics: summaries over several steps, the critical path, the
`dftool profile` report, transfers per edge and the measured cost model (see graphtool/exec/step_stats.py for what
a step records), and a step as TensorFlow's RunMetadata for TensorBoard."""
from .critical_path import CriticalPath, PathStep, critical_path
from .report import COST_MODEL_SCHEMA, PROFILE_SCHEMA, cost_model, flops_per_node, profile_report, profile_steps
from .run_metadata import run_metadata, run_metadata_bytes
from .summary import NodeRow, OpRow, ProfileRun, ProfileSummary, Spread, median_step, summarize
from .transfers import EdgeRow, TransferTotals, edge_rows, network_totals

__all__ = ["COST_MODEL_SCHEMA", "PROFILE_SCHEMA", "CriticalPath", "EdgeRow", "NodeRow", "OpRow", "PathStep",
           "ProfileRun", "ProfileSummary", "Spread", "TransferTotals", "cost_model", "critical_path", "edge_rows", "flops_per_node", "median_step",
           "network_totals", "profile_report", "profile_steps", "run_metadata", "run_metadata_bytes", "summarize"]
