"""Secrets through the real outputs: bench results and history, the audit log, `logs`
and `status` (issue 16). Each fails on the code before structured redaction.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.integration.test_bench_broken_sse import _spec, _start
from tui.bench.driver import run_bench
from tui.bench.history import append_result
from tui.cli import main
from tui.core.audit import append_audit

KEY_ENV = "SERVEDECK_TEST_OUTPUT_KEY"
KEY = "plainKeyNoShape4242"  # no known shape: only the exact-value rule can catch it


async def test_a_server_echoing_the_api_key_never_reaches_results_or_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    process, url = _start("echo-key", 3)
    try:
        spec = _spec(url, api_key_env=KEY_ENV)
        result = await asyncio.wait_for(run_bench(spec), timeout=120)
    finally:
        process.terminate()
        process.wait(timeout=10)
    (level,) = result.levels
    assert level.failed == 1
    assert any("rejected [REDACTED] here" in error for error in level.errors), level.errors
    history = append_result(result, tmp_path / "history.jsonl")
    for text in (json.dumps(result.to_dict()), history.read_text()):
        assert KEY not in text


def test_audit_records_are_redacted_at_any_depth(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    append_audit(
        "kill-request",
        "box",
        {
            "targets": [
                {"command": "vllm serve m --api-key first-111 --api-key second-222"},
                {"command": "python3 x.py", "env": {"AWS_SECRET_ACCESS_KEY": "aws-333"}},
            ],
            "headers": {"Authorization": "Basic dXNlcjpw444"},
        },
        path=path,
    )
    text = path.read_text()
    json.loads(text)
    for secret in ("first-111", "second-222", "aws-333", "dXNlcjpw444"):
        assert secret not in text


def _profile_with_log(tmp_path: Path, lines: list[str]) -> Path:
    log = tmp_path / "vllm.log"
    log.write_text("\n".join(lines) + "\n")
    profile = tmp_path / "box.toml"
    profile.write_text(
        f'[service]\nlog_file = "{log}"\napi_key_env = "{KEY_ENV}"\n'
        'base_url = "http://127.0.0.1:9"\n'
    )
    return profile


LEAKY_LOG = [
    "(APIServer pid=1) INFO 11-29 09:59:59 [api.py:1] vLLM server version 0.33.0, serving model m",
    "(APIServer pid=1) INFO 11-29 10:00:00 [utils.py:1] non-default args: "
    "{'model': 'm', 'api_key': ['listed-555'], 'port': 8000}",
    f"(APIServer pid=1) INFO 11-29 10:00:01 [api.py:2] client sent {KEY}",
    "(APIServer pid=1) ERROR 11-29 10:00:02 [api.py:3] Traceback (most recent call last):",
    "RuntimeError: bad --secret-key kept-666 --password 'p w 777'",
]


def test_logs_command_redacts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    profile = _profile_with_log(tmp_path, LEAKY_LOG)
    assert main(["logs", "-p", str(profile), "-n", "10"]) == 0
    out = capsys.readouterr().out
    assert "non-default args" in out
    for secret in ("listed-555", KEY, "kept-666", "p w 777"):
        assert secret not in out


@pytest.mark.parametrize("as_json", [False, True])
def test_status_redacts(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    as_json: bool,
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    profile = _profile_with_log(tmp_path, LEAKY_LOG)
    main(["status", "-p", str(profile), *(["--json"] if as_json else [])])
    out = capsys.readouterr().out
    if as_json:
        json.loads(out)
    assert "failure" in out
    for secret in ("listed-555", KEY, "kept-666", "p w 777"):
        assert secret not in out


def test_the_deck_api_key_is_redacted_from_the_audit_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A known secret in a form no rule knows (a bare argv word) still goes."""
    from tui.core.config import load_profile_file
    from tui.deck import Deck
    from tui.hosts.local import LocalHost

    bare = "bareDeckKey9090"
    monkeypatch.setenv(KEY_ENV, bare)
    Deck(load_profile_file(_profile_with_log(tmp_path, [])), LocalHost())
    path = tmp_path / "audit.jsonl"
    append_audit("kill-request", "box", {"targets": [{"command": f"serve m {bare}"}]}, path=path)
    assert bare not in path.read_text()
