"""Unit lint against real unit files (tests/support/fixtures/units), checked by systemd-analyze.

The .service fixtures verify with `systemd-analyze verify` where it exists; the
.cat fixture is `systemctl cat` output with a drop-in. Applying every finding's
exact line to the seed's unit gives a unit that verifies and lints clean.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tui.cli import main
from tui.serving.unit.lint import (
    lint_unit,
    observed_stop_s,
    parse_limit,
    parse_timespan_s,
    parse_unit,
)

UNITS = Path(__file__).parents[1] / "support" / "fixtures" / "units"
SEED = UNITS / "vllm-kimi-k25-int4.service"
HARDENED = UNITS / "vllm-hardened.service"
DROP_IN = UNITS / "vllm-minimax-killmode-process.cat"
ANALYZE = shutil.which("systemd-analyze")


def keys(findings) -> set[str]:  # type: ignore[no-untyped-def]
    return {finding.key for finding in findings}


def verify(path: Path) -> subprocess.CompletedProcess[str]:
    assert ANALYZE is not None
    return subprocess.run(
        [ANALYZE, "verify", "--man=no", str(path)], capture_output=True, text=True, timeout=60
    )


def test_the_seeds_unit_shape() -> None:
    unit = parse_unit(SEED.name, SEED.read_text())
    assert unit.get(
        "Service",
        "ExecStart",
    ).endswith("--port 8000")  # continuation joined
    found = lint_unit(unit)
    assert keys(found) == {"StartLimitBurst", "LimitMEMLOCK", "LimitNOFILE"}
    fixes = {f.key: (f.section, f.fix) for f in found}
    assert fixes["StartLimitBurst"] == ("Unit", "StartLimitIntervalSec=1800\nStartLimitBurst=3")
    assert fixes["LimitMEMLOCK"] == ("Service", "LimitMEMLOCK=infinity")
    # A stop slower than the default 90 s is flagged with a longer timeout.
    slow = {f.key: f for f in lint_unit(unit, observed_stop_s=120.0)}
    assert slow["TimeoutStopSec"].fix == "TimeoutStopSec=180"
    assert "no TimeoutStopSec (90 s)" in slow["TimeoutStopSec"].problem
    # Expected variables: CUDA_HOME is set; the others may hide in the EnvironmentFile.
    env = {f.key: f for f in lint_unit(unit, expected_env=("CUDA_HOME", "NCCL_P2P_DISABLE"))}
    assert env["Environment"].severity == "warn"
    assert env["Environment"].fix == "Environment=NCCL_P2P_DISABLE=..."
    assert "/etc/vllm/kimi.env" in env["Environment"].problem


def test_the_hardened_unit_is_clean() -> None:
    unit = parse_unit(HARDENED.name, HARDENED.read_text())
    expected = ("CUDA_HOME", "NCCL_P2P_DISABLE", "NCCL_IB_DISABLE")
    assert lint_unit(unit, expected_env=expected, observed_stop_s=100.0) == []


def test_systemctl_cat_with_a_drop_in() -> None:
    unit = parse_unit("vllm-minimax-m25.service", DROP_IN.read_text())
    assert unit.sources == (
        "/etc/systemd/system/vllm-minimax-m25.service",
        "/etc/systemd/system/vllm-minimax-m25.service.d/override.conf",
    )
    found = {f.key: f for f in lint_unit(unit, observed_stop_s=40.0, expected_env=("CUDA_HOME",))}
    assert found["KillMode"].severity == "fail"
    assert found["KillMode"].fix == "KillMode=control-group"
    assert found["TimeoutStopSec"].fix == "TimeoutStopSec=60"
    assert "TimeoutStopSec=15s" in found["TimeoutStopSec"].problem
    assert found["RestartSec"].fix == "RestartSec=30"
    assert "ExecStopPost" not in found  # no cleanup by name asked for: KillMode is the fix
    assert found["LimitMEMLOCK"].problem.startswith("LimitMEMLOCK=64M")
    assert found["LimitNOFILE"].problem.startswith("LimitNOFILE=4096")
    assert found["Environment"].severity == "fail"  # no EnvironmentFile could set it
    assert found["Environment"].fix == "Environment=CUDA_HOME=..."


def apply_fixes(text: str, findings) -> str:  # type: ignore[no-untyped-def]
    """Put each finding's line at the end of its section, replacing the key if present."""
    lines = text.splitlines()
    for finding in findings:
        for fix in finding.fix.splitlines():
            key = fix.split("=", 1)[0]
            fix = fix.replace("=...", "=1")
            if key != "Environment":  # Environment= accumulates; the others replace
                lines = [line for line in lines if not line.startswith(key + "=")]
            start = lines.index(f"[{finding.section}]")
            end = next(
                (i for i in range(start + 1, len(lines)) if lines[i].startswith("[")), len(lines)
            )
            while end > start + 1 and not lines[end - 1].strip():
                end -= 1
            lines.insert(end, fix)
    return "\n".join(lines) + "\n"


def test_the_exact_lines_fix_the_seeds_unit(tmp_path: Path) -> None:
    expected = ("CUDA_HOME", "NCCL_P2P_DISABLE")
    unit = parse_unit(SEED.name, SEED.read_text())
    findings = lint_unit(unit, expected_env=expected, observed_stop_s=120.0)
    fixed_text = apply_fixes(SEED.read_text(), findings)
    fixed = parse_unit(SEED.name, fixed_text)
    assert lint_unit(fixed, expected_env=expected, observed_stop_s=120.0) == []
    if ANALYZE is not None:
        path = tmp_path / SEED.name
        path.write_text(fixed_text)
        result = verify(path)
        assert result.returncode == 0, result.stderr


@pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")
@pytest.mark.parametrize("path", [SEED, HARDENED], ids=lambda p: p.name)
def test_fixtures_are_real_units(path: Path) -> None:
    result = verify(path)
    assert result.returncode == 0, result.stderr


def test_time_spans_and_limits() -> None:
    assert parse_timespan_s("90") == 90.0
    assert parse_timespan_s("2min 30s") == 150.0
    assert parse_timespan_s("500ms") == 0.5
    assert parse_timespan_s("infinity") == float("inf")
    assert parse_timespan_s("soon") is None
    assert parse_limit("infinity") == float("inf")
    assert parse_limit("64M") == 64 * 1024**2
    assert parse_limit("1024:524288") == 1024
    assert parse_limit("lots") is None


def test_observed_stop_from_the_journal() -> None:
    journal = "\n".join(
        [
            "1764500000.100000 box systemd[1]: Started vllm.service - vLLM.",
            "1764500100.000000 box systemd[1]: Stopping vllm.service - vLLM...",
            "1764500142.500000 box systemd[1]: vllm.service: Deactivated successfully.",
            "1764500142.600000 box systemd[1]: Stopped vllm.service - vLLM.",
            "1764500200.000000 box systemd[1]: Stopping vllm.service - vLLM...",
            "1764500212.000000 box systemd[1]: Stopped vllm.service - vLLM.",
        ]
    )
    assert observed_stop_s(journal) == 12.0
    assert observed_stop_s("garbage\n\n") is None


def test_cli_doctor_unit_demo_json(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["doctor", "--unit", "--demo", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["unit"] == "vllm-kimi-k25-int4.service"
    assert {f["key"] for f in report["findings"]} >= {"StartLimitBurst"}
    assert not any("--yes" in f["fix"] for f in report["findings"])
    for finding in report["findings"]:
        assert set(finding) == {"key", "severity", "problem", "section", "fix"}
    assert main(["doctor", "--unit", "--demo"]) == 0
    out = capsys.readouterr().out
    assert "[Service] LimitMEMLOCK=infinity" in out


def test_cli_doctor_unit_errors_are_one_line(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    no_unit = tmp_path / "no-unit.toml"
    no_unit.write_text('[service]\nengine = "vllm"\n')
    assert main(["--profile", str(no_unit), "doctor", "--unit"]) == 1
    err = capsys.readouterr().err
    assert "unit is not set" in err and len(err.strip().splitlines()) == 1
    missing = tmp_path / "missing.toml"
    missing.write_text('[service]\nunit = "servedeck-no-such-unit.service"\n')
    assert main(["--profile", str(missing), "doctor", "--unit"]) == 1
    err = capsys.readouterr().err
    assert "systemctl cat servedeck-no-such-unit.service failed" in err
    assert len(err.strip().splitlines()) == 1


def test_no_advice_to_kill_by_name_at_every_stop(tmp_path: Path) -> None:
    """doctor --unit recommended ExecStopPost=-servedeck kill --leftovers --yes, which ends
    whatever matches a name at every stop, unconfirmed. Now such a line is flagged, and the
    fix (reset ExecStopPost, KillMode=control-group) leaves a unit that lints clean."""
    seed = parse_unit(SEED.name, SEED.read_text())
    assert not any("kill" in f.fix for f in lint_unit(seed))
    text = SEED.read_text().replace(
        "[Service]\n",
        "[Service]\nExecStopPost=-/usr/bin/env servedeck --profile gpu-box kill --leftovers --yes\n",
    )
    found = {f.key: f for f in lint_unit(parse_unit(SEED.name, text))}
    assert found["ExecStopPost"].fix == "ExecStopPost=\nKillMode=control-group"
    assert "ends processes by name at every stop" in found["ExecStopPost"].problem
    fixed = apply_fixes(text, [found["ExecStopPost"]])
    assert "ExecStopPost" not in keys(lint_unit(parse_unit(SEED.name, fixed)))
    pkill = text.replace("servedeck --profile gpu-box kill --leftovers --yes", "pkill -f VLLM")
    assert "ExecStopPost" in keys(lint_unit(parse_unit(SEED.name, pkill)))
    benign = text.replace("servedeck --profile gpu-box kill --leftovers --yes", "true")
    assert "ExecStopPost" not in keys(lint_unit(parse_unit(SEED.name, benign)))
    no_sigkill = text.replace("[Service]\n", "[Service]\nSendSIGKILL=no\n")
    assert found_fix(no_sigkill, "SendSIGKILL") == "SendSIGKILL=yes"
    if ANALYZE is not None:
        path = tmp_path / SEED.name
        path.write_text(fixed)
        assert verify(path).returncode == 0


def found_fix(text: str, key: str) -> str:
    return {f.key: f.fix for f in lint_unit(parse_unit(SEED.name, text))}[key]
