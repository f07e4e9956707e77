"""`servedeck exporter`: the servedeck_* metrics of a simulated box, its unit file, its faults."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.support.prometheus_fixtures import ExporterThread, wait_for
from tests.support.sim_fixtures import SIM_LOAD_SECONDS
from tests.support.summary_helpers import bench_run
from tui.bench.history import append_result
from tui.core.alert_rules import AlertingConfig, AlertRule
from tui.core.config import demo_profile
from tui.core.paths import demo_records
from tui.exporter.engine_series import ENGINE_METRICS
from tui.exporter.metrics import METRICS
from tui.sim.box import SimBox, SimServerOptions, free_port

REPO = Path(__file__).resolve().parents[2]
EXPORTER = (sys.executable, "-m", "tui", "exporter")
OPTIONS = SimServerOptions(shards=8, tp=2, log_interval_s=1.0)


def scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """{family name: [(labels, value)]} parsed by prometheus_client's own parser."""
    families: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(httpx.get(url, timeout=5).text):
        families[family.name] = [(dict(s.labels), s.value) for s in family.samples]
    return families


def one(families: dict[str, list[tuple[dict[str, str], float]]], name: str) -> float:
    samples = families[name]
    assert len(samples) == 1, samples
    return samples[0][1]


def test_demo_exporter_cli_serves_documented_metrics_and_the_simulated_dcgm(
    tmp_path: Path,
) -> None:
    profile = demo_profile()
    with demo_records():  # the demo keeps its benchmark history apart
        append_result(
            bench_run("r1", profile, tp=8, ep=False, speed=82.0, when="2026-01-01T10:00:00+00:00")
        )
    port, dcgm_port = free_port(), free_port()
    argv = [sys.executable, "-m", "tui", "exporter", "--demo", "--address", "127.0.0.1"]
    argv += ["--port", str(port), "--dcgm-port", str(dcgm_port), "--host-label", "gpu-node-1"]
    proc = subprocess.Popen(
        argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    url = f"http://127.0.0.1:{port}/metrics"
    try:

        def serving() -> dict[str, list[tuple[dict[str, str], float]]] | None:
            families = scrape(url)
            phases = {s[0]["phase"]: s[1] for s in families.get("servedeck_load_phase", [])}
            states = {s[0]["state"]: s[1] for s in families.get("servedeck_unit_state", [])}
            ready = families.get("servedeck_ready", [({}, 0.0)])[0][1]
            serving = phases.get("serving") == 1 and states.get("active") == 1
            return families if serving and ready == 1 else None

        families = wait_for(serving, 120, "the demo exporter serving")
        assert isinstance(families, dict)
        text = httpx.get(url, timeout=5).text
        # Every documented family, with its HELP text (the ETA only exists during a load).
        # The engine families exist only where the server exposes what they come from.
        assert set(METRICS) - {"servedeck_load_eta_seconds"} - set(ENGINE_METRICS) <= set(families)
        for name in families:
            assert f"# HELP {name} {METRICS[name]}" in text, name
        info = families["servedeck_exporter_info"][0][0]
        assert info["host"] == "gpu-node-1"
        assert info["unit"] == "vllm-kimi-k25-int4.service"
        assert info["model"] == "moonshotai/Kimi-K2.5"
        states = {s[0]["state"]: s[1] for s in families["servedeck_unit_state"]}
        assert states["active"] == 1 and sum(states.values()) == 1
        assert one(families, "servedeck_load_shards_done") == one(
            families, "servedeck_load_shards_total"
        )
        assert one(families, "servedeck_bench_single_stream_tokens_per_second") > 0
        assert one(families, "servedeck_bench_timestamp_seconds") == 1767261600.0
        assert one(families, "servedeck_alerts_firing") == 0
        # Only host/unit/model and the documented dimension labels, never a URL or a path.
        allowed = {
            "host",
            "unit",
            "model",
            "state",
            "phase",
            "alert",
            "severity",
            "source",
            "preset",
            "engine",  # vLLM's data-parallel rank (a number)
            "role",  # prefill, decode, prefill+decode
        }
        for name, samples in families.items():
            for labels, _ in samples:
                extra = set(labels) - allowed - {"version"}
                assert not extra, (name, extra)
                assert not any("://" in value or value[:1] == "/" for value in labels.values())
        dcgm = scrape(f"http://127.0.0.1:{dcgm_port}/metrics")
        used = dcgm["DCGM_FI_DEV_FB_USED"]
        assert len(used) == 8 and {s[0]["Hostname"] for s in used} == {"gpu-node-1"}
        assert sum(value for _, value in used) > 0  # the demo's model is loaded
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def test_leftovers_their_memory_and_the_alert_after_a_stop(tmp_path: Path) -> None:
    """A stop that leaves 2 workers behind: the exporter counts them and the GPU memory they
    hold, the unit reads inactive, and the profile's leftovers rule fires."""
    os.environ["SERVEDECK_TEST_API_KEY"] = "sk-exporter-secret-123"
    rule = AlertRule("leftovers", "procs.leftovers_while_inactive", ">=", 1, 0, "critical")
    profile = demo_profile()
    profile = replace(
        profile,
        service=replace(profile.service, api_key_env="SERVEDECK_TEST_API_KEY"),
        alerting=AlertingConfig(rules=(rule,), use_defaults=False),
    )
    box = SimBox(
        tmp_path / "box",
        load_seconds=SIM_LOAD_SECONDS,
        options=replace(OPTIONS, orphans_on_stop=2),
    )
    exporter: ExporterThread | None = None
    try:
        box.start()
        assert box.wait_until_active(timeout_s=120) == "active"
        exporter = ExporterThread(box, "box-a", profile).start()
        url = f"http://{exporter.target}/metrics"
        wait_for(lambda: exporter.runner.view().ready, 60, "exporter sees the server ready")
        box.stop()
        box.unit.wait_for_state(("inactive", "failed"), 30)
        # After the stop, every process still on this box's GPUs is a leftover worker.
        held = sum(p.used_memory_bytes or 0 for p in box.snapshot().processes())
        assert held > 0

        def left() -> bool:
            view = exporter.runner.view()  # type: ignore[union-attr]
            counted = (view.leftovers or 0) >= 2 and (view.leftover_bytes or 0) >= held
            return counted and bool(view.alerts)

        wait_for(left, 90, "leftovers counted and the alert firing")
        families = scrape(url)
        # >=: leftovers of other simulated boxes on this shared machine count too (no memory).
        assert one(families, "servedeck_leftover_processes") >= 2
        assert one(families, "servedeck_leftover_gpu_memory_bytes") >= held
        states = {s[0]["state"]: s[1] for s in families["servedeck_unit_state"]}
        assert states["inactive"] == 1
        assert one(families, "servedeck_ready") == 0
        firing = families["servedeck_alert_firing"]
        assert [(s[0]["alert"], s[0]["severity"]) for s in firing] == [("leftovers", "critical")]
        assert "sk-exporter-secret-123" not in httpx.get(url, timeout=5).text
    finally:
        os.environ.pop("SERVEDECK_TEST_API_KEY", None)
        if exporter is not None:
            exporter.close()
        box.close()


def test_install_unit_writes_and_prints_a_unit_it_does_not_enable(tmp_path: Path) -> None:
    unit_dir = tmp_path / "units"
    done = subprocess.run(
        [*EXPORTER, "--demo", "--install-unit", "--unit-dir", str(unit_dir), "--port", "9555"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    files = list(unit_dir.iterdir())
    assert [f.name for f in files] == ["servedeck-exporter-demo.service"]
    text = files[0].read_text()
    assert text in done.stdout and "not enabled" in done.stdout
    exec_line = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    assert " -m tui exporter --demo --port 9555 " in exec_line + " "
    assert "[Install]" in text and "WantedBy=multi-user.target" in text
    assert not list(tmp_path.rglob("*.wants"))  # nothing enabled


def test_exporter_refuses_a_taken_port_in_one_line(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*EXPORTER, "--demo", "--address", "127.0.0.1", "--port", str(port)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1
    assert "cannot listen on 127.0.0.1" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_unreachable_host_is_sources_down_not_a_stopped_service(tmp_path: Path) -> None:
    """The box behind the profile cannot be reached: the exporter keeps serving, says which
    sources are down, and leaves the unit state and load phase out (unknown, not stopped)."""
    profile = tmp_path / "far.toml"
    profile.write_text(
        'name = "far-box"\n[host]\nkind = "ssh"\nhostname = "127.0.0.1"\n'
        f'port = {free_port()}\nuser = "nobody"\nconnect_timeout_s = 2\n'
        '[service]\nunit = "vllm.service"\n[model]\nname = "some/model"\n'
    )
    port = free_port()
    proc = subprocess.Popen(
        [*EXPORTER, "-p", str(profile), "--address", "127.0.0.1", "--port", str(port)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/metrics"
    try:

        def sources() -> dict[str, list[tuple[dict[str, str], float]]] | None:
            families = scrape(url)
            up = {s[0]["source"]: s[1] for s in families.get("servedeck_source_up", [])}
            return families if up.get("service") == 0 and up.get("gpu") == 0 else None

        families = wait_for(sources, 90, "both sources reported down")
        assert isinstance(families, dict)
        assert "servedeck_unit_state" not in families
        assert "servedeck_load_phase" not in families
        assert families["servedeck_exporter_info"][0][0]["host"] == "127.0.0.1"
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
