"""The console shows no secret its service log printed (issue 36): a visitor of the
browser view or the terminal saw `HF_TOKEN=...`, `Bearer ...`, `Namespace(api_key=...)`
in the log pane and in the Deck's FAILED line while `logs` and `status` redacted them.
Every generated form, through a real log file and the real console; failed before the
log was redacted where it enters servedeck."""

from __future__ import annotations

import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from tests.support.console_support import append_once_following, log_file_console
from tests.support.secret_forms import all_forms, leaked, planted, secret_values
from widgets.load_strip import LoadStrip
from widgets.log_pane import LogPane

HEAD = (
    "(APIServer pid=1) INFO 11-29 09:59:59 [api.py:1] vLLM server version 0.33.0, serving model m"
)


@settings(
    max_examples=2,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(value=secret_values, other=secret_values)
async def test_log_pane_and_failed_line_show_no_planted_byte(
    tmp_path: Path, value: str, other: str
) -> None:
    forms = all_forms(value, other)
    failure = f"RuntimeError: bad {forms[0]} {forms[-1]}"
    texts = [HEAD, *forms, "Traceback (most recent call last):", failure]
    folder = tmp_path / f"c{abs(hash((value, other)))}"
    folder.mkdir()
    app, log = log_file_console(folder, "redact")
    async with app.run_test(size=(200, 50)) as pilot:
        pane = app.query_one(LogPane)
        await append_once_following(pilot, app, log, "\n".join(texts) + "\n")
        deadline = time.monotonic() + 60
        while len(pane.buffer) < len(texts) and time.monotonic() < deadline:
            await pilot.pause(0.05)
        await pilot.pause(0.3)
        assert len(pane.buffer) == len(texts)
        assert app.progress is not None and app.progress.phase == "failed"
        shown = [
            *(line.text for line in pane.buffer),
            *pane.log_view.lines,
            *pane.export_texts(),
            app.progress.failure_line or "",
            str(app.query_one(LoadStrip).render()),
            app.export_screenshot(),
        ]
        await pilot.press("q")
    assert "[REDACTED]" in app.progress.failure_line
    found = leaked("\n".join(shown), planted(value, other))
    assert found == [], found
