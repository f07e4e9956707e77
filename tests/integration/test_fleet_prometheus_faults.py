"""Faults of the Prometheus fleet source: auth, a dead server, bad input, a wrong query."""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.prometheus_fixtures import (
    PrometheusServer,
    ScrapeJob,
    prometheus_factory,  # noqa: F401 - a fixture
    wait_for,
)
from tui.core.errors import ServedeckError
from tui.fleet.prom_query import Column, PromFleetConfig, config_from_table
from tui.fleet.prometheus import PrometheusError, PrometheusFleet, rows_from_vector
from tui.sim.box import free_port
from tui.sim.dcgm import DcgmCollector, DcgmServer
from tui.sim.gpu_model import SimGpuModel

# bcrypt (cost 4) of "s3cret", as Prometheus's web config wants it; made with libxcrypt:
# python3 -c "import crypt; print(crypt.crypt('s3cret', crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))"
S3CRET_BCRYPT = "$2b$04$zHNtGk.qeqXVIDSc.jifNuCT7/Py4uE6gV2MwJvVhP1aY4V7l2MIu"


def fleet_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "tui", "fleet", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_basic_auth_from_the_named_env_var_against_a_protected_prometheus(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    prometheus_factory: Callable[..., PrometheusServer],  # noqa: F811
) -> None:
    model = SimGpuModel(tmp_path / "idle", seed=1)
    dcgm = DcgmServer(DcgmCollector(model.snapshot, "idle"), 0, "127.0.0.4").start()
    try:
        jobs = [ScrapeJob("dcgm", [(f"127.0.0.4:{dcgm.port}", {})])]
        prom = prometheus_factory(jobs, basic_auth=("fleet", "s3cret", S3CRET_BCRYPT))
        refused = fleet_cli("--prometheus", prom.url, "--json")
        assert refused.returncode == 3
        assert "HTTP 401" in refused.stderr and "Traceback" not in refused.stderr

        def rows() -> list[dict[str, object]] | None:
            done = fleet_cli(
                "--prometheus", prom.url, "--json", "--auth-env", "PROM_AUTH", "--basic",
                env={"PROM_AUTH": "fleet:s3cret"},
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            found = json.loads(done.stdout)
            return found if found and found[0]["gpu_count"] == 8 else None

        found = wait_for(rows, 60, "the idle box through basic auth")
        assert isinstance(found, list)
        assert found[0]["host"] == "127.0.0.4" and found[0]["gpu_mem_used_bytes"] == 0
        # The same through a fleet file's [fleet] table.
        config = tmp_path / "fleet.toml"
        config.write_text(
            f'[fleet]\nsource = "prometheus"\nurl = "{prom.url}"\n'
            'auth = "basic"\nauth_env = "PROM_AUTH"\n'
        )
        done = fleet_cli("--fleet-config", str(config), "--json", env={"PROM_AUTH": "fleet:s3cret"})
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)[0]["gpu_count"] == 8
        text = fleet_cli("--fleet-config", str(config), env={"PROM_AUTH": "fleet:s3cret"})
        assert text.returncode == 0, text.stderr
        assert text.stdout.startswith("127.0.0.4") and "8 GPUs 0/765 GiB" in text.stdout
        assert "unit n/a" in text.stdout  # no servedeck exporter there: unknown, not a state
        # A sparkline's history for one host, from query_range (through the same auth).
        monkeypatch.setenv("PROM_AUTH", "fleet:s3cret")
        source = PrometheusFleet(PromFleetConfig(prom.url, auth="basic", auth_env="PROM_AUTH"))

        async def history() -> list[tuple[float, float]]:
            try:
                return await source.history("127.0.0.4", "gpu_count", seconds=30, step_s=1)
            finally:
                await source.aclose()

        points = asyncio.run(history())
        assert points and {value for _, value in points} == {8.0}
        assert all(a[0] < b[0] for a, b in itertools.pairwise(points))
        missing = fleet_cli("--prometheus", prom.url, "--auth-env", "PROM_AUTH_UNSET")
        assert missing.returncode == 1
        assert "PROM_AUTH_UNSET" in missing.stderr and "not set" in missing.stderr
        assert "s3cret" not in refused.stderr + missing.stderr
    finally:
        dcgm.close()


def test_a_dead_prometheus_is_one_line_and_exit_3() -> None:
    done = fleet_cli("--prometheus", f"http://reader:pw-123@127.0.0.1:{free_port()}", "--json")
    assert done.returncode == 3
    assert "pw-123" not in done.stderr and "reader" not in done.stderr
    assert done.stderr.count("\n") == 1 and "ConnectError" in done.stderr
    assert done.stdout == ""


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    done = fleet_cli("--prometheus", "prom.example:9090")
    assert done.returncode == 2 and "http(s)://" in done.stderr
    done = fleet_cli()
    assert done.returncode == 2 and "--prometheus" in done.stderr
    config = tmp_path / "fleet.toml"
    config.write_text('[fleet]\nurl = "http://prom:9090"\nhost_lable = "Hostname"\n')
    done = fleet_cli("--fleet-config", str(config))
    assert done.returncode == 1 and f"{config}: [fleet].host_lable: unknown key" in done.stderr
    assert done.stderr.count("\n") == 1
    with pytest.raises(
        ServedeckError, match=r"\[fleet\]\.auth: expected none, bearer, basic or oauth2"
    ):
        config_from_table({"url": "https://prom:9090", "auth": "digest"})
    with pytest.raises(ServedeckError, match=r"\[fleet\]\.auth_env"):
        config_from_table({"url": "https://prom:9090", "auth": "bearer"})
    with pytest.raises(ServedeckError, match=r"\[fleet\]\.queries\.x"):
        config_from_table({"url": "https://prom:9090", "queries": {"x": "DCGM_FI_DEV_GPU_UTIL"}})
    config = config_from_table(
        {"url": "https://prom:9090", "host_label": "Hostname", "queries": {"power_w": "max:x"}}
    )
    assert config.verify_tls is True and config.host_label == "Hostname"
    assert config.effective_columns()["power_w"] == Column("max", "x")


def test_a_query_prometheus_rejects_is_an_error_not_an_empty_fleet(
    tmp_path: Path,
    prometheus_factory: Callable[..., PrometheusServer],  # noqa: F811
) -> None:
    prom = prometheus_factory([])
    bad = PromFleetConfig(prom.url, columns={"power_w": Column("sum", "rate(up[")})
    source = PrometheusFleet(bad)

    async def refresh() -> None:
        try:
            await source.refresh()
        finally:
            await source.aclose()

    with pytest.raises(PrometheusError, match=r"HTTP 400: .*parse error"):
        asyncio.run(refresh())


def test_rows_keep_unknown_as_none_and_name_the_failing_scrape() -> None:
    """The vector-to-rows step alone: NaN and missing values are None, a down job is named."""

    def sample(column: str, value: str, **labels: str) -> dict[str, object]:
        metric = {"servedeck_host": "h1", "servedeck_column": column, **labels}
        return {"metric": metric, "value": [0, value]}

    rows = rows_from_vector(
        [
            sample("up", "1", job="vllm"),
            sample("up", "0", job="dcgm"),
            sample("age_s", "2.5", job="vllm"),
            sample("age_s", "42", job="dcgm"),
            sample("running", "0"),
            sample("kv_pct", "NaN"),
            sample("xid", "79", gpu="5"),
            {"metric": {"servedeck_column": "running"}, "value": [0, "3"]},  # no host: skipped
        ],
        now_s=100.0,
    )
    assert len(rows) == 1
    row = rows[0]
    assert row.reachable is True and row.running == 0
    assert row.kv_pct is None and row.gpu_count is None and row.unit_state is None
    assert row.sample_age_s == 42 and row.alerts == ("xid-79:gpu5",)
    assert row.error == "stale: scrape of dcgm failing (last good scrape 42 s ago)"
