"""Planted secrets in every source a summary reads: none may reach the Markdown or the JSON."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.summary_helpers import demo_deck, seed_history
from tui.core.audit import append_audit
from tui.core.config import HandoffNotes, demo_profile
from tui.serving.unit.service import ServiceController, UnitState, parse_systemctl_show
from tui.sim.box import SimBox, SimServerOptions
from tui.sim.deck import SimDeck
from tui.summary import (
    collect_summary,
    export_summary,
    render_json,
    render_markdown,
    summary_secrets,
)

Factory = Callable[..., SimBox]
API_KEY_ENV = "SERVEDECK_SUMMARY_TEST_KEY"
API_KEY = "plain-value-no-pattern-7Q2"  # matches no pattern: only the env lookup can catch it
SECRETS = {
    "cmdline": "sk-cmdlineSECRET0123456789abcd",
    "log bearer": "eyLogBearerTokenValue0123",
    "log env": "hf_LogEnvTokenValue0123456789ab",
    "profile": "ghp_ProfileNoteToken0123456789abcd",
    "audit": "sk-auditCommandSECRET0123456789",
    "password": "hunter2-db-Pw!",
    "api key value": API_KEY,
}


class _ProcessAsMainPid:
    """A unit whose MainPID is a real process started with secrets in its argv.

    Stands in for systemd (there is no systemd here); the process and the
    /proc/PID/cmdline read are real.
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid

    async def state(self) -> UnitState:
        return parse_systemctl_show(
            "vllm.service",
            f"Id=vllm.service\nActiveState=active\nSubState=running\nMainPID={self.pid}\nLoadState=loaded\n",
        )


class _Deck(SimDeck):
    def service(self) -> ServiceController | None:  # type: ignore[override]
        return self._controller  # type: ignore[attr-defined,return-value]


@pytest.fixture
def secret_process() -> subprocess.Popen[bytes]:
    argv = [
        sys.executable, "-c", "import time; time.sleep(120)", "vllm", "serve", "/models/m",
        "--api-key", SECRETS["cmdline"], f"--db-url=postgres://app:{SECRETS['password']}@db/x",
        API_KEY,
    ]  # fmt: skip
    proc = subprocess.Popen(argv)
    yield proc
    proc.kill()
    proc.wait(timeout=10)


async def test_no_planted_secret_reaches_the_summary(
    sim_box_factory: Factory,
    secret_process: subprocess.Popen[bytes],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    box = sim_box_factory(SimServerOptions(log_interval_s=30.0), load_seconds=2.0)
    box.start()
    assert box.wait_until_active(timeout_s=90) == "active"
    with box.log_path.open("a") as log:
        log.write(
            f"(APIServer pid=1) INFO 01-01 00:00:00 [x.py:1] Authorization: Bearer {SECRETS['log bearer']}\n"
        )
        log.write(
            f"(APIServer pid=1) ERROR 01-01 00:00:00 [x.py:1] env HF_TOKEN={SECRETS['log env']} key {API_KEY}\n"
        )
    profile = demo_profile()
    profile = replace(
        profile,
        description=f"box; token {SECRETS['profile']}",
        service=replace(profile.service, api_key_env=API_KEY_ENV),
        handoff=HandoffNotes(
            goal=f"serve with --api-key {API_KEY}",
            instructions=f"export HF_TOKEN={SECRETS['log env']}",
            lessons=(
                f"the password: {SECRETS['password']}",
                # quoted inside a JSON string: a regex over JSON text broke the escaping
                f'export HF_TOKEN="{SECRETS["log env"]}" now',
            ),
            next_steps=(f"rotate {SECRETS['profile']}",),
        ),
    )
    seed_history(profile)
    append_audit(
        "kill-request",
        "simulator",
        {
            "targets": [
                {
                    "pid": 7,
                    "class": "leftover",
                    "command": f"vllm serve --api-key {SECRETS['audit']}",
                }
            ]
        },
    )
    base = demo_deck(box, profile)
    deck = _Deck(base.profile, base.host, box)
    deck._controller = _ProcessAsMainPid(secret_process.pid)  # type: ignore[attr-defined]
    await asyncio.sleep(0.2)  # the child has exec'd
    try:
        inputs = await collect_summary(deck)
        secrets = summary_secrets(deck)
    finally:
        await deck.close()
    assert secrets == (API_KEY,)
    assert inputs.service is not None and inputs.service.main_cmdline
    markdown = render_markdown(inputs, secrets)
    as_json = render_json(inputs, secrets)
    written = export_summary(markdown, profile.name, folder=tmp_path).read_text()
    json.loads(as_json)  # redacted as data before serialising: still valid JSON
    for text in (markdown, as_json, written):
        leaked = [name for name, value in SECRETS.items() if value in text]
        assert leaked == [], leaked
        assert "[REDACTED]" in text
    assert "vllm serve /models/m --api-key [REDACTED]" in markdown
    # the planted log line really was read, redacted where the log enters servedeck
    assert inputs.load is not None
    assert "env HF_TOKEN=[REDACTED]" in (inputs.load.last_error_line or "")
    assert "Last error: `env HF_TOKEN=[REDACTED] key [REDACTED]`" in markdown
    # the audit log itself is written redacted now (nested records too); the incident is read
    assert any("--api-key [REDACTED]" in i.text for i in inputs.incidents)


def test_colon_form_keeps_short_prose_and_redacts_values() -> None:
    """`name: value` redaction needs a 6+ character value: plan prose stays readable."""
    from tui.core.redact import redact_text

    assert redact_text("KV per token: MLA latent") == "KV per token: MLA latent"
    assert redact_text("token: abc123xyz") == "token: [REDACTED]"
    assert redact_text("password: hunter22") == "password: [REDACTED]"
