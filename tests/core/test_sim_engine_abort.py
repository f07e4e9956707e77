"""The simulated engine frees an aborted request's slot at once, as vLLM's abort does.

The real engine (its own asyncio task and steps), without the HTTP server: a client
that goes away must not hold a batch slot, KV cache or step time for one more step.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tui.sim.engine import SimEngine
from tui.sim.spec import ServerSettings

STEP_S = 0.05


async def test_abort_of_a_running_request_frees_its_slot_before_the_next_step(
    tmp_path: Path,
) -> None:
    settings = ServerSettings(str(tmp_path), 0, decode_step_s=STEP_S, prefill_tok_s=1e6)
    engine = SimEngine(settings)
    engine.start()
    try:
        kept, left = engine.submit(8, 50), engine.submit(8, 50)
        while left.emitted < 2:  # both decoding
            await asyncio.sleep(0.01)
        usage_before = engine.kv_usage()
        engine.abort(left)
        assert engine.running == [kept]
        assert engine.kv_usage() < usage_before
        assert left.finished and engine.success["abort"] == 1
        tokens_at_abort = left.emitted
        emitted = kept.emitted
        while kept.emitted < emitted + 2:  # the step under way, then one planned without it
            await asyncio.sleep(0.01)
        assert engine.running == [kept]
        assert left.emitted == tokens_at_abort  # the step under way dropped its token
    finally:
        await engine.stop()
    records = [json.loads(line) for line in (tmp_path / "truth.jsonl").read_text().splitlines()]
    assert [r["finish_reason"] for r in records] == ["abort"]
    assert records[0]["output_tokens"] == tokens_at_abort
