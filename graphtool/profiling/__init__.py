"""Profiling from step statistics: summaries over several steps, the critical path, the
`dftool profile` report and the measured cost model (see graphtool/exec/step_stats.py for what
a step records)."""
from .critical_path import CriticalPath, PathStep, critical_path
from .report import COST_MODEL_SCHEMA, PROFILE_SCHEMA, cost_model, profile_report, profile_steps
from .summary import NodeRow, OpRow, ProfileSummary, median_step, summarize

__all__ = ["COST_MODEL_SCHEMA", "PROFILE_SCHEMA", "CriticalPath", "NodeRow", "OpRow", "PathStep",
           "ProfileSummary", "cost_model", "critical_path", "median_step", "profile_report",
           "profile_steps", "summarize"]
