"""`servedeck exporter`'s engine families, scraped for real from a simulated vLLM 2026 engine.

A real SimBox with two data-parallel engines (engine 1 starved), three-token speculative
decoding, two LoRA adapters, sleep mode and a decode role whose NIXL transfers fail; the
exporter polls it and its /metrics is parsed by prometheus_client's own parser. Then the
engine is put to sleep through vLLM's /sleep route: asleep at level 1, and not ready.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.test_exporter import scrape
from tests.support.prometheus_fixtures import ExporterThread, wait_for
from tui.exporter.engine_series import ENGINE_METRICS
from tui.sim.box import SimBox, SimServerOptions
from tui.sim.spec import SERVED_MODEL_NAME

Families = dict[str, list[tuple[dict[str, str], float]]]
CONFIG = '{"kv_connector": "NixlConnector", "kv_role": "kv_consumer"}'
OPTIONS = SimServerOptions(
    shards=4,
    decode_step_s=0.02,
    max_batch=2,
    log_interval_s=1.0,
    extra_args=(
        *("--data-parallel-size", "2", "--starve-engine", "1"),
        *("--num-speculative-tokens", "3", "--spec-acceptance", "0.8"),
        "--enable-sleep-mode",
        *("--enable-lora", "--lora-modules", "sql=/adapters/sql", "chat=/adapters/chat"),
        *("--max-loras", "2"),
        *("--kv-transfer-config", CONFIG, "--kv-transfer-fault", "failing"),
    ),
)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SimBox, str]]:
    box = SimBox(tmp_path_factory.mktemp("engines"), seed=3, load_seconds=2.0, options=OPTIONS)
    exporter: ExporterThread | None = None
    try:
        box.start()
        assert box.wait_until_ready(timeout_s=90), box.log_path.read_text()[-3000:]
        exporter = ExporterThread(box, "box-e").start()
        wait_for(lambda: exporter.runner.view().ready, 60, "exporter sees the server ready")
        yield box, f"http://{exporter.target}/metrics"
    finally:
        if exporter is not None:
            exporter.close()
        box.close()


def _by_engine(families: Families, name: str) -> dict[str, float]:
    return {labels["engine"]: value for labels, value in families.get(name, [])}


def _send(box: SimBox, requests: int) -> list[threading.Thread]:
    body = {"model": SERVED_MODEL_NAME, "prompt": "hello there", "max_tokens": 300}

    def post() -> None:
        try:
            httpx.post(f"{box.base_url}/v1/completions", json=body, timeout=60)
        except httpx.HTTPError:
            pass  # the figures were read while it ran; its answer is not the point

    threads = [threading.Thread(target=post, daemon=True) for _ in range(requests)]
    for thread in threads:
        thread.start()
    return threads


def test_engines_spec_adapters_and_transfers_are_exported(exported: tuple[SimBox, str]) -> None:
    box, url = exported
    threads = _send(box, 5)

    def busy() -> Families | None:
        families = scrape(url)
        waiting = _by_engine(families, "servedeck_engine_waiting_requests")
        spec = "servedeck_spec_decode_acceptance_ratio" in families
        failed = _by_engine(families, "servedeck_kv_transfers_failed")
        return families if waiting.get("0", 0) > 0 and spec and any(failed.values()) else None

    families = wait_for(busy, 60, "engine 0 queueing, drafts accepted and transfers failing")
    assert isinstance(families, dict)
    running = _by_engine(families, "servedeck_engine_running_requests")
    assert running == {"0": 2.0, "1": 0.0}  # one row per engine: the sum alone hid engine 1
    assert _by_engine(families, "servedeck_engine_waiting_requests")["1"] == 0
    kv = _by_engine(families, "servedeck_engine_kv_cache_usage_ratio")
    assert set(kv) == {"0", "1"} and kv["1"] == 0 and 0 < kv["0"] <= 1
    acceptance = families["servedeck_spec_decode_acceptance_ratio"][0][1]
    assert 0.5 < acceptance <= 1  # drafted at 0.8 a position
    assert families["servedeck_spec_decode_mean_accepted_length"][0][1] > 1
    assert families["servedeck_lora_adapters_loaded"][0][1] == 2
    assert [(s[0]["role"], s[1]) for s in families["servedeck_kv_role"]] == [("decode", 1.0)]
    assert families["servedeck_asleep"][0][1] == 0
    assert "servedeck_sleep_level" not in families  # awake: no level, rather than 0
    text = httpx.get(url, timeout=5).text
    for name in ENGINE_METRICS:
        if name in families:
            assert f"# HELP {name} {ENGINE_METRICS[name]}" in text, name
    for thread in threads:
        thread.join(60)


def test_a_sleeping_engine_is_asleep_at_its_level_and_not_ready(
    exported: tuple[SimBox, str],
) -> None:
    box, url = exported
    httpx.post(f"{box.base_url}/sleep", params={"level": 1}, timeout=30).raise_for_status()
    try:

        def asleep() -> Families | None:
            families = scrape(url)
            level = families.get("servedeck_sleep_level", [({}, 0.0)])[0][1]
            return families if level == 1 else None

        families = wait_for(asleep, 60, "the exporter reading sleep level 1")
        assert isinstance(families, dict)
        assert families["servedeck_asleep"][0][1] == 1
        assert families["servedeck_ready"][0][1] == 0  # answering /health, serving nothing
    finally:
        httpx.post(f"{box.base_url}/wake_up", timeout=30)


def test_documented_in_the_readme() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for name in ENGINE_METRICS:
        assert f"`{name}" in readme, name
