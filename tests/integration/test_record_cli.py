"""`servedeck record` on the simulator and `servedeck timeline` over what it wrote (real processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.record_support import count, wait_for

SERVEDECK = [sys.executable, "-m", "tui"]


def _run(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SERVEDECK, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env or os.environ.copy(),
    )


def test_record_demo_then_timeline_json_in_order(tmp_path: Path) -> None:
    db = tmp_path / "night.sqlite"
    recorder = subprocess.Popen(
        [*SERVEDECK, "record", "--demo", "--seconds", "60", "--db", str(db)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The demo loads in a few seconds; wait until it served and GPUs were recorded.
        wait_for(lambda: count(db, "events", "text LIKE 'ready:%'"), timeout_s=90, step_s=0.5)
        wait_for(lambda: count(db, "gpu_ticks") >= 3, timeout_s=30)
        second = _run("record", "--demo", "--seconds", "1", "--db", str(db))
        assert second.returncode != 0
        assert f"already being recorded by pid {recorder.pid}" in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        recorder.terminate()  # SIGTERM: flush and release, like Ctrl-C
        _, err = recorder.communicate(timeout=60)
    assert recorder.returncode == 0, err
    assert "recorded" in err
    out = _run("timeline", "--db", str(db), "--json")
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    assert all(set(event) == {"ts", "kind", "source", "text", "gpu"} for event in events)
    stamps = [event["ts"] for event in events]
    assert stamps == sorted(stamps)
    texts = [event["text"] for event in events]
    # (the recorder may first note the service as stopped, if it looked before the start)
    phases = [text for text in texts if text.startswith("load phase:")]
    phases = phases[1:] if phases[0] == "load phase: stopped" else phases
    assert (
        phases[0].startswith(("load phase: starting", "load phase: weights"))
        and phases[-1] == "load phase: serving"
    )
    assert any(text.startswith("ready: ") for text in texts)
    assert len(texts) == len(set(zip(stamps, texts, strict=True)))  # nothing twice
    engine_only = _run("timeline", "--db", str(db), "--kind", "engine", "--json")
    kinds = {json.loads(line)["kind"] for line in engine_only.stdout.splitlines()}
    assert kinds == {"engine"}


def test_timeline_errors_are_one_line(tmp_path: Path) -> None:
    missing = _run("timeline", "--db", str(tmp_path / "none.sqlite"))
    assert missing.returncode != 0 and "no recording here" in missing.stderr
    assert "Traceback" not in missing.stderr
    bad_time = _run("timeline", "--db", str(tmp_path / "none.sqlite"), "--since", "yesterday-ish")
    assert bad_time.returncode != 0 and "--since: cannot read 'yesterday-ish'" in bad_time.stderr
    no_target = _run("timeline")
    assert no_target.returncode != 0 and "give --profile" in no_target.stderr


def test_install_unit_writes_and_prints_but_never_enables(tmp_path: Path) -> None:
    env = os.environ.copy()
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    env["PATH"] = str(tmp_path / "nobin")  # no systemctl reachable: it must not be called
    result = _run("record", "--demo", "--install-unit", env=env)
    assert result.returncode == 0, result.stderr
    unit = tmp_path / "xdg" / "systemd" / "user" / "servedeck-record-demo.service"
    text = unit.read_text()
    assert "ExecStart=" in text and " record --demo" in text
    assert "WantedBy=default.target" in text
    assert text in result.stdout and "not enabled" in result.stdout
    assert not (tmp_path / "xdg" / "systemd" / "user" / "default.target.wants").exists()
