"""The Deck's serving strip has room for each data-parallel engine's row and its warning.

The strip's own CSS grows with its rows (height auto, at most 12); the console's stylesheet
once pinned `#load-strip` to 2 lines, so the engine rows and the "engine 1 idle" warning
were rendered and cut off on the Deck (only `status` showed them).
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.support.console_support import log_file_console
from tui.serving.metrics import compute_metrics, parse_metrics
from widgets.load_strip import LoadStrip


def _dp_page(at_s: float, generated: float) -> str:
    """Two engines as vLLM labels them (vllm/v1/metrics/loggers.py: model_name, engine)."""
    lines = []
    for engine, running, waiting, kv, tokens in (("0", 2, 4, 0.9, generated), ("1", 0, 0, 0.0, 0)):
        labels = f'engine="{engine}",model_name="m"'
        lines += [
            f"vllm:num_requests_running{{{labels}}} {running}",
            f"vllm:num_requests_waiting{{{labels}}} {waiting}",
            f"vllm:kv_cache_usage_perc{{{labels}}} {kv}",
            f"vllm:generation_tokens_total{{{labels}}} {tokens}",
        ]
    return "\n".join(["# TYPE vllm:generation_tokens counter", *lines]) + "\n"


async def test_the_deck_shows_every_engine_row_and_the_idle_warning(tmp_path: Path) -> None:
    before = parse_metrics(_dp_page(0.0, 100.0), at_s=0.0)
    metrics = compute_metrics(parse_metrics(_dp_page(1.0, 180.0), at_s=1.0), before)
    app, _log = log_file_console(tmp_path, "dp")
    async with app.run_test(size=(160, 50)) as pilot:
        strip = app.query_one(LoadStrip)
        app.serving.metrics = metrics  # as a /metrics poll leaves them; the Deck redraws
        deadline = time.monotonic() + 10
        while strip.metrics is not metrics and time.monotonic() < deadline:
            await pilot.pause(0.1)
        await pilot.pause(0.3)
        assert strip.size.height >= 5  # the sum, two engine rows, the warning
        screen = app.export_screenshot()
        await pilot.press("q")
    for shown in ("engine 0", "engine 1", "engine 1 idle while engine 0 has 4 waiting"):
        assert shown.replace(" ", "&#160;") in screen or shown in screen, shown
