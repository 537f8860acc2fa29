"""The report of a results folder: static HTML pages, and the list of its runs.

`build_report(results_dir)` writes `results/<name>/report/`; `list_runs(results_dir,
scenario)` says what became of every run; `redo_runs` removes runs so the workflow redoes them.
"""

from agentab.report.builder import ReportResult, build_report, report_dir
from agentab.report.runs import RUN_STATUSES, RunEntry, list_runs

__all__ = ["RUN_STATUSES", "ReportResult", "RunEntry", "build_report", "list_runs", "report_dir"]
