"""Generated secrets in every form (issue 36: names x syntaxes x values, see
tests/support/secret_forms.py) leave no planted byte in any output: redact_text, the
batch and stream redactors, structured data, the audit log, the recorder's SQLite file
(log lines, a deployment's argv and env, an alert's message) and the summary's Markdown
and JSON. Each failed before the one redaction covered these forms and paths.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.secret_forms import all_forms, leaked, planted, secret_values, url_safe
from tui.alerts.monitor import AlertMonitor
from tui.core.alert_rules import AlertingConfig, AlertRule
from tui.core.audit import append_audit
from tui.core.redact import LineRedactor, redact_data, redact_lines, redact_text
from tui.logs.line import LogLine
from tui.record.feed import RecordFeed
from tui.record.writer import Recorder

PROPERTY = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
values = st.tuples(secret_values, secret_values).filter(lambda v: v[0][3:11] != v[1][3:11])


def _no_leak(text: str, value: str, other: str) -> None:
    found = leaked(text, planted(value, other))
    assert found == [], (found, text[:4000])


def _pem_free(forms: list[str]) -> list[str]:
    """The forms that stand alone (a PEM body's lines need the lines before them)."""
    return [form for form in forms if "PRIVATE KEY" in form or not form.startswith(("MII", "Zq7"))]


@PROPERTY
@given(pair=values)
def test_redact_text_leaves_no_planted_byte(pair: tuple[str, str]) -> None:
    value, other = pair
    forms = all_forms(value, other)
    _no_leak(redact_text("\n".join(forms)), value, other)
    for form in _pem_free(forms):
        _no_leak(redact_text(form), value, other)
    _no_leak("\n".join(redact_lines(_pem_free(forms))), value, other)


@PROPERTY
@given(values, st.lists(st.integers(1, 20), max_size=12))
def test_a_log_stream_cut_anywhere_leaves_no_planted_byte(
    pair: tuple[str, str], cuts: list[int]
) -> None:
    """The log's reads cut a PEM key anywhere: its body lines are still redacted."""
    value, other = pair
    forms = all_forms(value, other)
    redactor, out, start = LineRedactor(), [], 0
    for size in [*cuts, len(forms)]:
        out += redactor(forms[start : start + size])
        start += size
    assert len(out) == len(forms)
    _no_leak("\n".join(out), value, other)


@PROPERTY
@given(pair=values)
def test_structured_data_and_the_audit_log(pair: tuple[str, str], tmp_path: Path) -> None:
    value, other = pair
    forms = all_forms(value, other)
    argv = ["vllm", "serve", "/m", "--api-key", value, other, "--port", "8000"]
    details = {"notes": forms, "argv": argv, "env": {"MYSQL_PWD": value, "X": forms[0]}}
    _no_leak(json.dumps(redact_data(details)), value, other)
    path = tmp_path / f"audit-{abs(hash(pair))}.jsonl"
    path.unlink(missing_ok=True)  # hypothesis may draw the same pair again in one tmp_path
    append_audit("kill-request", "box", {**details, "message": forms[-1]}, path=path)
    _no_leak(path.read_text(), value, other)
    json.loads(path.read_text())


def _recorded(db: Path, value: str, other: str) -> str:
    """Record the forms as warnings, a deployment's argv and env, and an alert whose
    message holds a secret; the SQLite file's whole dump."""
    forms = all_forms(value, other)
    recorder = Recorder(db, host_label="box").start()
    feed = RecordFeed(recorder, "box")
    try:
        # the log as the Deck hands it on (redacted on the way in, a PEM body by its context),
        # and lines fed raw: the feed redacts what it records itself
        texts = [*LineRedactor()(forms), *_pem_free(forms)]
        lines = [LogLine(f"WARNING {text}", 1.8e9, level="WARNING") for text in texts]
        feed.observe_logs([(line, None) for line in lines], 1.8e9)
        feed.observe_exec(
            4242,
            ["vllm", "serve", "/m", "--api-key", value, other, f"--db-url=redis://:{value}@h"],
            {"MYSQL_PWD": value, "HF_ENDPOINT": f"https://{url_safe(value)}@hub"},
            1.8e9,
        )
        rule = AlertRule(
            "lost", "engine.ready_lost", ">=", 1.0, message=f"down; {forms[0]} {forms[-1]}"
        )
        monitor = AlertMonitor(AlertingConfig(rules=(rule,), use_defaults=False), "box", feed=feed)
        monitor.observe_ready(True, 1.8e9)
        assert monitor.observe_ready(False, 1.8e9 + 1), "the alert fired"
    finally:
        recorder.close()
    connection = sqlite3.connect(db)
    try:
        return "\n".join(connection.iterdump())
    finally:
        connection.close()


@settings(PROPERTY, max_examples=8)
@given(pair=values)
def test_the_recorders_sqlite_file_holds_no_planted_byte(
    pair: tuple[str, str], tmp_path: Path
) -> None:
    value, other = pair
    dump = _recorded(tmp_path / f"rec-{abs(hash(pair))}.sqlite", value, other)
    assert "vllm serve /m --api-key [REDACTED]" in dump and "lost" in dump
    _no_leak(dump, value, other)


LOG_HEAD = (
    "(APIServer pid=1) INFO 11-29 09:59:59 [api.py:1] vLLM server version 0.33.0, serving model m"
)


@settings(PROPERTY, max_examples=4)
@given(pair=values)
def test_the_summary_markdown_and_json(
    pair: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A summary over a log holding every form (its last error one of them) and handoff
    notes quoting them all."""
    from tui.core.config import HandoffNotes, load_profile_file
    from tui.deck import Deck
    from tui.hosts.local import LocalHost
    from tui.summary import collect_summary, render_json, render_markdown

    value, other = pair
    forms = all_forms(value, other)
    folder = tmp_path / f"s{abs(hash(pair))}"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    log = folder / "vllm.log"
    failure = f"RuntimeError: bad {forms[2]}"
    log.write_text("\n".join([LOG_HEAD, *forms, "Traceback (most recent call last):", failure]))
    (folder / "box.toml").write_text(
        f'[service]\nlog_file = "{log}"\nbase_url = "http://127.0.0.1:9"\n'
    )
    profile = load_profile_file(folder / "box.toml")
    profile = replace(profile, handoff=HandoffNotes(goal=forms[0], lessons=tuple(forms)))
    inputs = asyncio.run(collect_summary(Deck(profile, LocalHost())))
    markdown, as_json = render_markdown(inputs, ()), render_json(inputs, ())
    json.loads(as_json)
    assert "[REDACTED]" in markdown
    for text in (markdown, as_json):
        _no_leak(text, value, other)
