"""The summary of a real vLLM 0.32.0 CPU server: versions from its venv, the tiny model, its load.

Uses the real-vLLM harness's session server (base_url, model, log_path, python) and
`tiny_model_dir`: reading the summary changes nothing on the server.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.summary_helpers import table_shapes
from tests.support.vllm_harness import VllmServer
from tui.core.config import HandoffNotes, ModelConfig, Profile, ServiceConfig
from tui.deck import Deck
from tui.hosts.local import LocalHost
from tui.summary import collect_summary, render_markdown

pytestmark = pytest.mark.real_vllm


async def test_summary_names_vllm_the_tiny_model_and_its_load(
    real_vllm_server: VllmServer, tiny_model_dir: Path
) -> None:
    server, model_dir = real_vllm_server, tiny_model_dir
    profile = Profile(
        name="real-vllm",
        service=ServiceConfig(
            base_url=server.base_url, log_file=str(server.log_path), python=str(server.python)
        ),
        model=ModelConfig(name=str(server.model), path=str(model_dir), tp=1),
        handoff=HandoffNotes(goal="tiny model on the CPU build"),
    )
    deck = Deck(profile, LocalHost())
    try:
        inputs = await collect_summary(deck)
    finally:
        await deck.close()
    config = json.loads((model_dir / "config.json").read_text())
    assert inputs.software is not None
    # the CPU build reports a local version label: 0.32.0+cpu
    assert inputs.software.packages.get("vllm", "").split("+")[0] == "0.32.0", inputs.software
    assert inputs.model is not None and inputs.model.arch is not None
    assert inputs.model.arch.num_layers == config["num_hidden_layers"]
    assert inputs.model.arch.hidden_size == config["hidden_size"]
    assert inputs.model.shard_count and inputs.model.shard_count >= 1
    assert inputs.load is not None and inputs.load.facts.version == "0.32.0"
    phases = [span.phase for span in inputs.load.timeline]
    assert phases[0] == "starting" and "weights" in phases and phases[-1] == "serving"
    assert inputs.metrics is not None
    text = render_markdown(inputs)
    assert "| vllm | 0.32.0" in text and "Engine: vllm 0.32.0" in text
    assert f"| layers | {config['num_hidden_layers']} |" in text
    assert "### Load timeline" in text and "| serving |" in text
    assert all(all(n == header for n in rows) for header, rows in table_shapes(text))
