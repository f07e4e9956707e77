"""The Markdown state summary of one deployment (no Textual here).

collect_summary(deck) -> SummaryInputs; render_markdown(inputs) -> str;
export_summary(text, ...) writes it atomically.
"""

from tui.summary.collect import CollectTimeouts, collect_summary, summary_secrets
from tui.summary.export import SummaryExistsError, default_summary_name, export_summary
from tui.summary.inputs import Incident, ModelSummary, ServiceSummary, SummaryInputs
from tui.summary.render import render_json, render_markdown

__all__ = [
    "CollectTimeouts",
    "Incident",
    "ModelSummary",
    "ServiceSummary",
    "SummaryExistsError",
    "SummaryInputs",
    "collect_summary",
    "default_summary_name",
    "export_summary",
    "render_json",
    "render_markdown",
    "summary_secrets",
]
