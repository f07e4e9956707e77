"""dashboards/: the Grafana dashboard and the Prometheus rules, against the real Prometheus.

`promtool check rules` and `promtool test rules` (unit tests generated here: each rule
fires on the series it is about and stays quiet on their healthy twin; the XID rule is
checked against every XID servedeck's decoder knows). Then one simulated box (the
simulator's vLLM /metrics, its dcgm-exporter-compatible /metrics and a servedeck
exporter) scraped every second by /usr/bin/prometheus with the rules loaded at `for: 0s`:
every dashboard query returns the series it is about, and the stall rule fires when the
simulator's engine spins (POST /_sim/fault {"hang": "spin"}) and resolves when it ends.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.prometheus_fixtures import (
    PROMETHEUS,
    ExporterThread,
    FleetBox,
    PrometheusServer,
    scrape_jobs,
    wait_for,
)
from tests.support.summary_helpers import bench_run
from tui.bench.history import append_result
from tui.core.alert_rules import AlertingConfig, AlertRule
from tui.core.config import Profile, demo_profile
from tui.health.xid.decode import XID_TABLE
from tui.sim.box import SimBox, SimServerOptions
from tui.sim.dcgm import DcgmCollector, DcgmServer

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "dashboards" / "servedeck.json"
RULES = REPO / "dashboards" / "servedeck-rules.yml"
PROMTOOL = "/usr/bin/promtool"
HOST = "gpu-node-7"
LOAD_S = 20.0  # long enough that Prometheus scrapes the load (its ETA and shards)
OPTIONS = SimServerOptions(shards=8, tp=2, decode_step_s=0.02, decode_alpha=0.02)

# Dashboard targets (panel title, refId) that return no series here, and why.
EXPECTED_ABSENT = {
    ("Tensor core activity", "A"): "DCGM_FI_PROF_* needs DCGM's profiling module on a "
    "datacenter GPU; the simulator's dcgm-exporter serves the DCGM_FI_DEV_* fields only",
    ("Last XID", "A"): "no GPU of the simulated box had an XID",
}


def promtool() -> str:
    if not Path(PROMTOOL).exists():
        pytest.skip("needs promtool (Debian package prometheus; .ci/run installs it)")
    return PROMTOOL


def rules_for_tests(source: str, keep_for: bool = True) -> str:
    """The rules file without annotations (promtool's unit tests compare every
    annotation; the live test reads them rendered), and with `for: 0s` unless kept."""
    lines: list[str] = []
    skip_deeper_than: int | None = None
    for line in source.splitlines():
        indent = len(line) - len(line.lstrip())
        if skip_deeper_than is not None:
            if not line.strip() or indent > skip_deeper_than:
                continue
            skip_deeper_than = None
        if line.strip() == "annotations:":
            skip_deeper_than = indent
            continue
        if not keep_for:
            line = re.sub(r"^(\s+)for: \S+$", r"\1for: 0s", line)
        lines.append(line)
    return "\n".join(lines) + "\n"


def critical_xids_in_rules() -> set[int]:
    return {int(n) for n in re.findall(r"DCGM_FI_DEV_XID_ERRORS == (\d+)", RULES.read_text())}


def test_promtool_checks_the_rules() -> None:
    done = subprocess.run(
        [promtool(), "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 9 rules found" in done.stdout


def test_the_xid_rule_names_every_xid_the_decoder_rates_critical() -> None:
    critical = {xid for xid, info in XID_TABLE.items() if info.severity == "crit"}
    assert critical_xids_in_rules() == critical


def _case(
    series: list[tuple[str, str]], alert: str, eval_time: str, labels: list[dict[str, str]]
) -> dict[str, Any]:
    return {
        "interval": "1m",
        "input_series": [{"series": name, "values": values} for name, values in series],
        "alert_rule_test": [
            {
                "eval_time": eval_time,
                "alertname": alert,
                "exp_alerts": [{"exp_labels": x} for x in labels],
            }
        ],
    }


def promtool_cases() -> list[dict[str, Any]]:
    """Each rule firing on its trouble, and quiet on the healthy twin of the same series."""
    box = 'host="a",unit="vllm.service",model="m"'
    who = {"host": "a", "unit": "vllm.service", "model": "m"}
    stalled = f'servedeck_engine_progress{{{box},state="stalled"}}'
    cases = [
        _case(
            [(stalled, "1x5 0x5")],
            "ServedeckEngineStalled",
            "3m",
            [who | {"state": "stalled", "severity": "critical"}],
        ),
        _case([(stalled, "1x5 0x5")], "ServedeckEngineStalled", "1m", []),  # for: 2m
        _case([(stalled, "1x5 0x5")], "ServedeckEngineStalled", "9m", []),  # resolved
    ]
    leftovers = [
        (f"servedeck_leftover_processes{{{box}}}", "2x10"),
        (f'servedeck_unit_state{{{box},state="inactive"}}', "1x10"),
        (f'servedeck_unit_state{{{box},state="active"}}', "0x10"),
    ]
    cases.append(
        _case(leftovers, "ServedeckLeftoversWhileStopped", "6m", [who | {"severity": "warning"}])
    )
    running = [leftovers[0], (leftovers[1][0], "0x10"), (leftovers[2][0], "1x10")]
    cases.append(_case(running, "ServedeckLeftoversWhileStopped", "6m", []))
    cases.append(
        _case(
            [(f"servedeck_load_eta_seconds{{{box}}}", "900-20x15")],
            "ServedeckLoadSlowerThanPredicted",
            "12m",
            [who | {"severity": "warning"}],
        )
    )
    cases.append(
        _case(
            [(f"servedeck_load_eta_seconds{{{box}}}", "900-60x14")],
            "ServedeckLoadSlowerThanPredicted",
            "12m",
            [],
        )
    )
    cases.append(
        _case(
            [(f"servedeck_unit_restarts{{{box}}}", "0 1 2 3 3 3")],
            "ServedeckRestartLoop",
            "4m",
            [who | {"severity": "critical"}],
        )
    )
    cases.append(
        _case([(f"servedeck_unit_restarts{{{box}}}", "5x6")], "ServedeckRestartLoop", "4m", [])
    )
    cases.append(
        _case(
            [(f'servedeck_alert_firing{{{box},alert="hot",severity="critical"}}', "1x3")],
            "ServedeckAlertFiring",
            "2m",
            [who | {"alert": "hot", "severity": "critical"}],
        )
    )
    # Every XID the decoder knows: the critical ones fire, the others do not.
    for xid, info in sorted(XID_TABLE.items()):
        gpu = {"Hostname": "a", "gpu": "3"}
        fired = [gpu | {"severity": "critical"}] if info.severity == "crit" else []
        cases.append(
            _case(
                [('DCGM_FI_DEV_XID_ERRORS{Hostname="a",gpu="3"}', f"{xid}x2")],
                "ServedeckXidCritical",
                "1m",
                fired,
            )
        )
    # TTFT within 2.5 s: half the requests (burns 50x) fires both; all of them fires none.
    vllm = 'host="a",model_name="m",engine="0"'
    for rate_ok, fired in ((50, True), (100, False)):
        series = [
            (f'vllm:time_to_first_token_seconds_bucket{{{vllm},le="2.5"}}', f"0+{rate_ok}x420"),
            (f"vllm:time_to_first_token_seconds_count{{{vllm}}}", "0+100x420"),
        ]
        for alert, severity in (
            ("ServedeckTtftBudgetFastBurn", "critical"),
            ("ServedeckTtftBudgetSlowBurn", "warning"),
        ):
            labels = [{"host": "a", "model_name": "m", "severity": severity}] if fired else []
            cases.append(_case(series, alert, "400m", labels))
    for tokens, fired in (("500x10", True), ("0+300x10", False)):
        series = [
            (f"vllm:num_requests_running{{{vllm}}}", "4x10"),
            (f"vllm:generation_tokens_total{{{vllm}}}", tokens),
        ]
        labels = [{"host": "a", "model_name": "m", "severity": "critical"}] if fired else []
        cases.append(_case(series, "ServedeckVllmNoTokens", "8m", labels))
    return cases  # fmt: skip


def test_promtool_unit_tests_fire_each_rule_and_keep_quiet_when_healthy(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yml"
    rules.write_text(rules_for_tests(RULES.read_text()))
    spec = tmp_path / "rules_test.yml"  # JSON is YAML
    cases = promtool_cases()
    spec.write_text(json.dumps({"rule_files": [str(rules)], "tests": cases}, indent=1))
    done = subprocess.run(
        [promtool(), "test", "rules", str(spec)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    fired = {
        c["alert_rule_test"][0]["alertname"] for c in cases if c["alert_rule_test"][0]["exp_alerts"]
    }
    in_rules = set(re.findall(r"- alert: (\w+)", RULES.read_text()))
    assert fired == in_rules  # every rule is shown to fire


def test_promtool_unit_tests_catch_a_rule_that_does_not_fire(tmp_path: Path) -> None:
    """The generated cases can fail: a rule that misses its trouble fails promtool."""
    broken = RULES.read_text().replace('state="stalled"', 'state="never"')
    rules = tmp_path / "rules.yml"
    rules.write_text(rules_for_tests(broken))
    spec = tmp_path / "rules_test.yml"
    spec.write_text(json.dumps({"rule_files": [str(rules)], "tests": promtool_cases()[:1]}))
    done = subprocess.run(
        [promtool(), "test", "rules", str(spec)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and "ServedeckEngineStalled" in done.stdout + done.stderr


# --- the live box -------------------------------------------------------------------------


@dataclass
class Live:
    fleet_box: FleetBox
    prometheus: PrometheusServer
    started_s: float


def _profile() -> Profile:
    profile = demo_profile()
    # A stall is declared after 3 s (the minimum is 2), and a rule of the profile fires
    # while the GPUs hold memory: the exporter's alert series are then present.
    held = AlertRule("gpu-memory-held", "gpu.memory_used_pct", ">=", 0, 0, "info")
    return replace(
        profile,
        service=replace(profile.service, stall_after_s=3.0),
        alerting=AlertingConfig(rules=(held,), use_defaults=False),
    )


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    if not Path(PROMETHEUS).exists():
        pytest.skip("needs the Debian package prometheus (.ci/run installs it)")
    workdir = tmp_path_factory.mktemp("dashboards")
    box = SimBox(workdir / "box", load_seconds=LOAD_S, options=OPTIONS)
    fleet_box: FleetBox | None = None
    prometheus: PrometheusServer | None = None
    try:
        box.start()
        dcgm = DcgmServer(DcgmCollector(box.snapshot, HOST)).start()
        profile = _profile()
        exporter = ExporterThread(box, HOST, profile)
        # The last benchmark: one complete run of this profile on this configuration.
        run = bench_run("r1", profile, tp=profile.model.tp, ep=profile.model.ep, speed=80.0,
                        when="2026-01-01T10:00:00+00:00")  # fmt: skip
        context = replace(run.context, host=exporter.runner.bench.host)
        append_result(replace(run, context=context), exporter.runner.bench.path)
        exporter.start()
        fleet_box = FleetBox(HOST, box, dcgm, exporter)
        rules = workdir / "rules.yml"
        rules.write_text(rules_for_tests(RULES.read_text(), keep_for=False))
        prometheus = PrometheusServer(
            workdir / "prom", scrape_jobs([fleet_box]), 1.0, None, (rules,)
        )
        prometheus.workdir.mkdir()
        started = time.time()
        prometheus.start()
        assert box.wait_until_ready(120)
        yield Live(fleet_box, prometheus, started)
    finally:
        if prometheus is not None:
            prometheus.stop()
        if fleet_box is not None:
            fleet_box.close()
        else:
            box.close()


def dashboard_targets() -> list[tuple[str, str, str]]:
    """(panel title, refId, expr) of every panel's target."""
    found = []
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel.get("targets", []):
            found.append((panel["title"], target["refId"], target["expr"]))
    return found


def grafana_expr(expr: str, host: str, range_s: float) -> str:
    """What Grafana sends for the dashboard's variables: one host picked, the window."""
    assert re.fullmatch(r"[\w.-]+", host)  # no regex escaping needed
    expr = expr.replace("$host", host).replace("$__rate_interval", "15s")
    leftover = re.findall(r"\$\w+", expr.replace("$__range", ""))
    assert not leftover, (expr, leftover)
    return expr.replace("$__range", f"{round(range_s)}s")


def query_range(url: str, expr: str, start_s: float, end_s: float) -> list[dict[str, Any]]:
    form = {"query": expr, "start": f"{start_s:.3f}", "end": f"{end_s:.3f}", "step": "1"}
    body = httpx.post(f"{url}/api/v1/query_range", data=form, timeout=10).json()
    assert body["status"] == "success", (expr, body)
    return body["data"]["result"]


@contextlib.contextmanager
def traffic(base_url: str, users: int = 3) -> Iterator[None]:
    """Users streaming long completions back to back (requests always in flight)."""
    stop = threading.Event()

    def user() -> None:
        body = {"model": "kimi-k2.5-int4", "prompt": "hi", "max_tokens": 300, "stream": True}
        with httpx.Client(base_url=base_url, timeout=60) as client:
            while not stop.is_set():
                with contextlib.suppress(httpx.HTTPError):
                    with client.stream("POST", "/v1/completions", json=body) as answer:
                        for _ in answer.iter_bytes():
                            if stop.is_set():
                                break

    threads = [threading.Thread(target=user, daemon=True) for _ in range(users)]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)


def firing(url: str) -> dict[str, dict[str, Any]]:
    alerts = httpx.get(f"{url}/api/v1/alerts", timeout=5).json()["data"]["alerts"]
    return {a["labels"]["alertname"]: a for a in alerts if a["state"] == "firing"}


def test_every_dashboard_query_returns_its_series(live: Live) -> None:
    prom = live.prometheus
    with traffic(live.fleet_box.box.base_url):
        time.sleep(20)  # TTFT and token rates over the dashboard's 15 s rate window
        end = time.time()
        targets = dashboard_targets()
        # The host variable's own query lists the box.
        hosts = httpx.get(
            f"{prom.url}/api/v1/label/host/values",
            params={"match[]": "servedeck_exporter_info"},
            timeout=5,
        ).json()["data"]
        assert hosts == [HOST]
        missing = []
        for title, ref, expr in targets:
            result = query_range(prom.url, grafana_expr(expr, HOST, end - live.started_s),
                                 live.started_s, end)  # fmt: skip
            why_absent = EXPECTED_ABSENT.get((title, ref))
            if why_absent:
                assert result == [], (title, why_absent, result)
                continue
            if not result:
                missing.append((title, ref, expr))
                continue
            for series in result:  # each is the picked host's, never another's
                labels = series["metric"]
                assert HOST in (labels.get("host"), labels.get("Hostname")), (title, labels)
        assert not missing, missing
    assert len(targets) >= 25


def test_the_stall_rule_fires_when_the_engine_spins_and_resolves_when_it_ends(live: Live) -> None:
    prom, box = live.prometheus, live.fleet_box.box
    # (ServedeckVllmNoTokens needs 2 min without a token: promtool's cases show it.)
    stall_rules = {"ServedeckEngineStalled"}
    with traffic(box.base_url):
        wait_for(lambda: not stall_rules & set(firing(prom.url)), 60, "no stall before the fault")
        answer = httpx.post(f"{box.base_url}/_sim/fault", json={"hang": "spin"}, timeout=5)
        assert answer.status_code == 200, answer.text
        try:

            def stalled_firing() -> dict[str, dict[str, Any]] | None:
                now = firing(prom.url)
                return now if stall_rules <= set(now) else None

            fired = wait_for(stalled_firing, 90, "the stall rule firing")
            assert isinstance(fired, dict)
            stalled = fired["ServedeckEngineStalled"]
            assert stalled["labels"]["host"] == HOST
            assert stalled["labels"]["severity"] == "critical"
        finally:
            httpx.post(f"{box.base_url}/_sim/fault", json={"hang": ""}, timeout=5)
        wait_for(lambda: not stall_rules & set(firing(prom.url)), 90, "the stall rule resolved")
    assert critical_xids_in_rules()  # the live box had no XID: that rule stays quiet
    assert "ServedeckXidCritical" not in firing(prom.url)
