"""The Markdown state summary of one deployment (no Textual here).

collect_summary(deck) -> SummaryInputs; render_markdown(inputs) -> str;
export_summary(text, ...) writes it atomically.

collect.py: Gather a SummaryInputs from a Deck: every collector at once, each under its own timeout
export.py: Writing a summary to disk: atomic, and never over an existing file unless asked
hardware_section.py: The state summary's "Hardware health" section: doctor findings, GPU health, last probe
incidents.py: Incidents for the summary: kills of leftover GPU processes, service actions and stalls, from the audit log
inputs.py: What a state summary is made of: one frozen SummaryInputs, gathered once, rendered many ways
last_load.py: The summary's "Last load" section: why the last load took as long as it did
mdtable.py: Small Markdown building blocks for the summary: tables that always parse, and value formats
recorded.py: The summary's view of the flight recorder: incidents, deployment attempts and the last tune in a window
recorded_render.py: Markdown for the flight recorder's parts of the summary: incidents, deployment attempts, the tune
render.py: The state summary as Markdown: an "at a glance" block first, then one section per topic
sections.py: The machine-facing sections of the summary: hardware, software, model, service, now
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
