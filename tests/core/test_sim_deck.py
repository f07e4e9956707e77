"""The demo's Deck answers the Deck's questions from its simulated box; a real Deck from its profile.

No process starts here: the box is created, read and closed without starting its unit.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tui.compose import open_deck
from tui.core.config import ServiceConfig, demo_profile
from tui.deck import Deck
from tui.hosts.local import LocalHost
from tui.sim import spec
from tui.sim.deck import SimDeck
from tui.sim.gpu_source import SimGpuSource
from tui.sim.service import SimService


async def test_the_demo_deck_answers_from_its_box() -> None:
    deck = open_deck(demo_profile())
    assert isinstance(deck, SimDeck)
    box = deck.box
    try:
        assert deck.host_label == "simulator"
        assert deck.base_url == box.base_url and deck.service_port == box.port
        assert deck.systemd_unit is None  # nothing for systemctl to manage
        assert deck.unit_label == spec.UNIT_NAME
        assert not deck.has_kernel_log and deck.probe_unsupported
        assert deck.stated_load_s == box.load_seconds
        assert deck.stated_phase_shares() == spec.LOAD_PHASE_SHARES
        assert deck.checkpoint_dir is None  # no shard folder unless the slow-disk mode made one
        assert deck.log_from_file and deck.log_label() == "(simulator) server.log"
        assert isinstance(deck.service(), SimService)
        source = await deck.gpu_source()
        assert isinstance(source, SimGpuSource)
        snapshot = await source.sample()
        assert snapshot.simulated and snapshot.gpu_count == spec.TENSOR_PARALLEL
        overview = await deck.overview()
        assert overview.simulated and overview.gpu_names
        checkpoint = await deck.checkpoint()
        assert checkpoint.size_bytes == spec.MODEL_WEIGHTS_BYTES
        assert checkpoint.shards == spec.MODEL_SHARDS
        assert (await deck.model_facts()).arch == checkpoint.facts.arch
        assert (await deck.software_versions()).packages["vllm"] == spec.VLLM_VERSION
    finally:
        await deck.close()
    assert not Path(box.state_dir).exists()  # closing the Deck closed the box


async def test_a_real_deck_answers_from_its_profile(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    log.write_text("INFO 01-02 03:04:05 [api_server.py:1] Starting vLLM API server\n")
    base = demo_profile()
    profile = replace(
        base,
        host=replace(base.host, kind="local"),
        service=ServiceConfig(unit="vllm.service", log_file=str(log)),
        model=replace(base.model, path=str(tmp_path / "model")),
    )
    deck = Deck(profile, LocalHost())
    try:
        assert deck.host_label == profile.host.route
        assert deck.base_url == "http://127.0.0.1:8000" and deck.service_port == 8000
        assert deck.systemd_unit == "vllm.service" and deck.unit_label == "vllm.service"
        assert deck.has_kernel_log and deck.probe_unsupported is None
        assert deck.stated_load_s is None and deck.stated_phase_shares() is None
        assert deck.checkpoint_dir == str(tmp_path / "model")
        assert deck.log_from_file and deck.log_label() == str(log)
        lines = deck.replay_log_lines()
        assert lines is not None
        read = [line async for line in lines]
        assert [line.timestamp_s for line in read] == [None]  # a file's read time is no log time
    finally:
        await deck.close()
