"""The Prometheus fleet behind what large fleets run: tenant header and path, mTLS, OAuth2.

A real Prometheus scrapes one idle simulated box (dcgm-exporter only) on 127.0.0.5;
in front of it a TLS gateway (tests/support/prom_gateway.py) demands a client
certificate its CA signed and the tenant header, and strips the tenant path. OAuth2
client-credentials is tested against a real token server whose tokens expire in 3 s.
VictoriaMetrics single-node (Debian's `victoria-metrics`) is read at its root and at
its `/prometheus` prefix.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from tests.support.prom_gateway import Gateway, Pki, TokenServer, make_pki
from tests.support.prometheus_fixtures import (
    PrometheusServer,
    ScrapeJob,
    prometheus_factory,  # noqa: F401 - a fixture
    wait_for,
)
from tui.core.errors import ServedeckError
from tui.fleet.prom_access import OAuth2Config, PromAccess
from tui.fleet.prom_body import PrometheusError
from tui.fleet.prom_query import PromFleetConfig, config_from_table
from tui.fleet.prometheus import PrometheusFleet
from tui.sim.box import free_port
from tui.sim.dcgm import DcgmCollector, DcgmServer
from tui.sim.gpu_model import SimGpuModel

ADDRESS = "127.0.0.5"
TENANT_ENV = {"PROM_TENANT": "tenant-a"}
SECRET = "cs-0c1d2e3f-very-secret"


@dataclass
class Backend:
    prometheus: PrometheusServer
    gateway: Gateway
    pki: Pki
    dcgm: DcgmServer


@pytest.fixture
def backend(
    tmp_path: Path,
    prometheus_factory: Callable[..., PrometheusServer],  # noqa: F811
) -> Iterator[Backend]:
    model = SimGpuModel(tmp_path / "idle", seed=3)
    dcgm = DcgmServer(DcgmCollector(model.snapshot, "idle"), 0, ADDRESS).start()
    gateway: Gateway | None = None
    try:
        prom = prometheus_factory([ScrapeJob("dcgm", [(f"{ADDRESS}:{dcgm.port}", {})])])
        pki = make_pki(tmp_path / "pki")
        gateway = Gateway(prom.url, pki).start()
        wait_for(lambda: prom.query("DCGM_FI_DEV_FB_USED"), 30, "the first scrape")
        yield Backend(prom, gateway, pki, dcgm)
    finally:
        if gateway is not None:
            gateway.close()
        dcgm.close()


def mtls(pki: Pki, **extra: object) -> PromAccess:
    return PromAccess(
        headers_env=(("X-Scope-OrgID", "PROM_TENANT"),),
        tls_cert=pki.client_cert,
        tls_key=pki.client_key,
        tls_ca=pki.ca,
        **extra,  # type: ignore[arg-type]
    )


def refresh(config: PromFleetConfig, times: int = 1, pause_s: float = 0.0) -> PrometheusFleet:
    source = PrometheusFleet(config)

    async def run() -> None:
        try:
            for index in range(times):
                if index:
                    await asyncio.sleep(pause_s)
                rows = await source.refresh()
                assert [row.host for row in rows] == [ADDRESS], rows
                assert rows[0].gpu_count == 8 and rows[0].reachable
        finally:
            await source.aclose()

    asyncio.run(run())
    return source


def fleet_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", "fleet", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )


def test_mtls_and_the_tenant_header_and_path_through_the_gateway(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    pki, gateway = backend.pki, backend.gateway
    monkeypatch.setenv("PROM_TENANT", "tenant-a")
    refresh(PromFleetConfig(gateway.url, access=mtls(pki)))
    assert gateway.seen[-1] == {"path": "/api/v1/query", "tenant": "tenant-a", "cn": "fleet-reader"}
    # A tenant path (Mimir's, VictoriaMetrics cluster's) is part of the URL.
    refresh(PromFleetConfig(gateway.url + "/select/tenant-a/prometheus", access=mtls(pki)))
    assert gateway.seen[-1]["path"] == "/select/tenant-a/prometheus/api/v1/query"


@pytest.mark.parametrize(
    ("access", "message"),
    [
        ("no-cert", "prometheus https://127.0.0.1:"),
        ("stranger-cert", "prometheus https://127.0.0.1:"),
        ("no-tenant", "HTTP 401"),
        ("no-ca", "CERTIFICATE_VERIFY_FAILED"),
    ],
)
def test_each_missing_credential_is_one_line(
    backend: Backend, monkeypatch: pytest.MonkeyPatch, access: str, message: str
) -> None:
    pki = backend.pki
    monkeypatch.setenv("PROM_TENANT", "tenant-a")
    chosen = {
        "no-cert": replace(mtls(pki), tls_cert=None, tls_key=None),
        "stranger-cert": replace(mtls(pki), tls_cert=pki.stranger_cert, tls_key=pki.stranger_key),
        "no-tenant": replace(mtls(pki), headers_env=()),
        "no-ca": replace(mtls(pki), tls_ca=None),
    }[access]
    with pytest.raises(PrometheusError) as raised:
        refresh(PromFleetConfig(backend.gateway.url, access=chosen))
    text = str(raised.value)
    assert message in text and "\n" not in text, text
    assert not backend.gateway.seen  # nothing reached Prometheus


def test_the_cli_reads_through_mtls_and_a_header_and_names_what_is_missing(
    backend: Backend, tmp_path: Path
) -> None:
    pki, url = backend.pki, backend.gateway.url
    argv = ["--prometheus", url, "--json", "--header", "X-Scope-OrgID=PROM_TENANT"]
    argv += ["--tls-cert", str(pki.client_cert), "--tls-key", str(pki.client_key)]
    argv += ["--tls-ca", str(pki.ca)]
    done = fleet_cli(*argv, env=TENANT_ENV)
    assert done.returncode == 0, done.stderr
    assert [row["host"] for row in json.loads(done.stdout)] == [ADDRESS]
    # The header's variable unset: one line naming it, never its value, exit non-zero.
    unset = fleet_cli(*argv, env={"PROM_TENANT": ""})
    assert unset.returncode != 0 and "PROM_TENANT (header X-Scope-OrgID) is not set" in unset.stderr
    assert "Traceback" not in unset.stderr
    missing = fleet_cli(*argv[:-2], "--tls-ca", str(tmp_path / "nope.pem"), env=TENANT_ENV)
    assert missing.returncode != 0 and "tls_ca" in missing.stderr and "nope.pem" in missing.stderr
    assert "Traceback" not in missing.stderr
    # The same from a fleet file's [fleet] table.
    config = tmp_path / "fleet.toml"
    config.write_text(
        f'[fleet]\nsource = "prometheus"\nurl = "{url}"\n'
        f'tls_cert = "{pki.client_cert}"\ntls_key = "{pki.client_key}"\ntls_ca = "{pki.ca}"\n'
        '[fleet.headers_env]\n"X-Scope-OrgID" = "PROM_TENANT"\n'
    )
    done = fleet_cli("--fleet-config", str(config), "--json", env=TENANT_ENV)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["gpu_count"] == 8


def test_oauth2_token_cached_until_expiry_renewed_on_401_and_its_secret_never_shown(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens = TokenServer("fleet-reader", SECRET, expires_in_s=3.0).start()
    gateway = Gateway(backend.prometheus.url, backend.pki, tokens=tokens).start()
    try:
        monkeypatch.setenv("PROM_TENANT", "tenant-a")
        monkeypatch.setenv("OAUTH_SECRET", SECRET)
        oauth2 = OAuth2Config(tokens.url, "fleet-reader", ("metrics:read", "tenant-a"))
        config = PromFleetConfig(
            gateway.url,
            auth="oauth2",
            auth_env="OAUTH_SECRET",
            access=mtls(backend.pki, oauth2=oauth2),
        )
        # Three refreshes within the token's life: one token.
        source = refresh(config, times=3)
        assert tokens.fetches == ["metrics:read tenant-a"] and source.oauth2 is not None
        assert source.oauth2.fetches == 1
        # Past its life (3 s, renewed 0.3 s early): a new one.
        source = PrometheusFleet(config)

        async def over_time() -> None:
            try:
                await source.refresh()
                await asyncio.sleep(3.2)
                await source.refresh()
                tokens.revoke_all()  # the server forgets it: a 401, one renewal, the answer
                await source.refresh()
            finally:
                await source.aclose()

        before = len(tokens.fetches)
        asyncio.run(over_time())
        assert len(tokens.fetches) - before == 3
        assert gateway.refused == ["token"]
        # A wrong secret: one line naming the endpoint and OAuth2's error, not the secret.
        monkeypatch.setenv("OAUTH_SECRET", "wrong-" + SECRET)
        with pytest.raises(PrometheusError) as raised:
            refresh(config)
        text = str(raised.value)
        assert "OAuth2 token endpoint http://127.0.0.1:" in text and "invalid_client" in text
        assert SECRET not in text
        monkeypatch.delenv("OAUTH_SECRET")
        with pytest.raises(ServedeckError, match=r"OAUTH_SECRET .*not set"):
            refresh(config)
        # The CLI: the same, and the secret appears nowhere in its output.
        argv = ["--prometheus", gateway.url, "--json", "--header", "X-Scope-OrgID=PROM_TENANT"]
        argv += [
            "--tls-cert",
            str(backend.pki.client_cert),
            "--tls-key",
            str(backend.pki.client_key),
        ]
        argv += ["--tls-ca", str(backend.pki.ca), "--auth-env", "OAUTH_SECRET"]
        argv += ["--oauth2-token-url", tokens.url, "--oauth2-client-id", "fleet-reader"]
        done = fleet_cli(*argv, env=TENANT_ENV | {"OAUTH_SECRET": SECRET})
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)[0]["host"] == ADDRESS
        assert SECRET not in done.stdout + done.stderr
        wrong = fleet_cli(*argv, env=TENANT_ENV | {"OAUTH_SECRET": "x" + SECRET})
        assert wrong.returncode == 3 and "invalid_client" in wrong.stderr
        assert SECRET not in wrong.stdout + wrong.stderr and "Traceback" not in wrong.stderr
    finally:
        gateway.close()
        tokens.close()


VICTORIA = "/usr/bin/victoria-metrics"


def test_victoriametrics_single_node_at_its_root_and_prometheus_prefix(tmp_path: Path) -> None:
    if not Path(VICTORIA).exists():
        pytest.skip("needs Debian's victoria-metrics package (apt-get install victoria-metrics)")
    model = SimGpuModel(tmp_path / "idle", seed=4)
    dcgm = DcgmServer(DcgmCollector(model.snapshot, "idle"), 0, ADDRESS).start()
    scrape = tmp_path / "scrape.yml"
    scrape.write_text(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: dcgm\n"
        f"    static_configs:\n      - targets: ['{ADDRESS}:{dcgm.port}']\n"
    )
    port = free_port()
    log = (tmp_path / "vm.log").open("wb")
    proc = subprocess.Popen(
        [
            VICTORIA,
            f"-httpListenAddr=127.0.0.1:{port}",
            f"-storageDataPath={tmp_path / 'vm'}",
            f"-promscrape.config={scrape}",
            "-search.latencyOffset=0s",
            "-loggerLevel=WARN",
        ],
        stdout=log,
        stderr=log,
    )
    try:
        url = f"http://127.0.0.1:{port}"

        def rows(base: str) -> object:
            source = PrometheusFleet(PromFleetConfig(base))

            async def run() -> list[object]:
                try:
                    return list(await source.refresh())
                finally:
                    await source.aclose()

            found = asyncio.run(run())
            return found if found and getattr(found[0], "gpu_count", None) == 8 else None

        for base in (url, url + "/prometheus"):
            found = wait_for(lambda base=base: rows(base), 60, f"the box through {base}")
            assert isinstance(found, list) and found[0].host == ADDRESS
    finally:
        proc.terminate()
        proc.wait(20)
        log.close()
        dcgm.close()
        if proc.returncode not in (0, -15):
            print((tmp_path / "vm.log").read_text()[-2000:])


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"headers_env": "X-Scope-OrgID"}, r"\[fleet\]\.headers_env: expected a table"),
        ({"headers_env": {"X Scope": "T"}}, r"\[fleet\]\.headers_env: 'X Scope' is no header name"),
        ({"headers_env": {"X-Scope-OrgID": 3}}, r"headers_env\.X-Scope-OrgID: expected an env"),
        ({"tls_key": "/k.pem"}, r"\[fleet\]\.tls_key: needs tls_cert"),
        ({"tls_ca": ""}, r"\[fleet\]\.tls_ca: expected a non-empty string"),
        ({"auth": "oauth2", "auth_env": "S"}, r"\[fleet\]\.oauth2_token_url: expected"),
        (
            {"auth": "oauth2", "auth_env": "S", "oauth2_token_url": "https://idp/t"},
            r"\[fleet\]\.oauth2_client_id: missing",
        ),
        ({"oauth2_client_id": "c"}, r'\[fleet\]\.auth: the oauth2_\* keys need auth = "oauth2"'),
        ({"oauth2_scopes": "a b"}, r"\[fleet\]\.oauth2_scopes: expected a list"),
    ],
)
def test_bad_access_keys_are_one_line_naming_the_field(
    table: dict[str, object], message: str
) -> None:
    with pytest.raises(ServedeckError, match=message):
        config_from_table({"url": "https://prom:9090", **table})
