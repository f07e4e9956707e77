"""Local profiles each get their own recording and their own last benchmark.

Every local profile is host `local`; keyed by host alone, two of them shared
`recordings/local.sqlite` (the second recorder was refused, timelines mixed their
services) and the exporter showed one's benchmark for the other."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.summary_helpers import bench_run
from tui.bench.context import config_hash
from tui.bench.history import append_result
from tui.core.profile_store import load_profile
from tui.exporter.runner import _BenchCache
from tui.record.model import Event
from tui.record.query import RecordingReader
from tui.record.where import recording_path
from tui.record.writer import Recorder

PROFILE = """name = "{name}"
[host]
kind = "local"
[service]
log_file = "{folder}/{name}.log"
base_url = "http://127.0.0.1:9"
"""


@pytest.fixture
def local_profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    data = tmp_path / "data"
    monkeypatch.setenv("SERVEDECK_DATA_DIR", str(data))
    monkeypatch.setenv("SERVEDECK_LOG_DIR", str(tmp_path / "log"))
    paths = []
    for name in ("alpha", "beta"):
        path = tmp_path / f"{name}.toml"
        path.write_text(PROFILE.format(name=name, folder=tmp_path))
        paths.append(path)
    return paths[0], paths[1], data


def test_two_local_profiles_record_at_once_to_two_files(
    local_profiles: tuple[Path, Path, Path],
) -> None:
    """Failed before: the second recorder was refused (`already being recorded by`)."""
    alpha, beta, data = local_profiles
    argv = [sys.executable, "-m", "tui", "record", "--seconds", "3", "-p"]
    first = subprocess.Popen([*argv, str(alpha)], stderr=subprocess.PIPE, text=True)
    second = subprocess.run([*argv, str(beta)], capture_output=True, text=True, timeout=120)
    _, first_err = first.communicate(timeout=120)
    assert first.returncode == 0, first_err
    assert second.returncode == 0, second.stderr
    files = sorted(p.name for p in (data / "recordings").glob("*.sqlite"))
    assert files == ["local-alpha.sqlite", "local-beta.sqlite"]
    assert os.environ["SERVEDECK_DATA_DIR"] == str(data)
    assert recording_path(load_profile(str(alpha))) == data / "recordings" / "local-alpha.sqlite"


def test_an_older_local_recording_moves_to_the_first_profile(
    local_profiles: tuple[Path, Path, Path],
) -> None:
    """The `local.sqlite` of earlier versions is not lost: the first local profile that
    opens its recording takes it over (with its -wal), and reads its events."""
    alpha, beta, data = local_profiles
    legacy = data / "recordings" / "local.sqlite"
    recorder = Recorder(legacy, host_label="local").start()
    recorder.add_event(Event(time.time() - 60, "service", "unit", "from before"))
    recorder.close()
    path = recording_path(load_profile(str(alpha)))
    assert path.name == "local-alpha.sqlite" and not legacy.exists()
    with RecordingReader(path) as reader:
        assert [event.text for event in reader.events()] == ["from before"]
    assert recording_path(load_profile(str(beta))).name == "local-beta.sqlite"
    assert not (data / "recordings" / "local-beta.sqlite").exists()  # nothing to take over


def test_exporter_last_benchmark_is_the_profiles_own(
    local_profiles: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """Failed before: the newest run of any local profile was reported."""
    alpha_path, beta_path, _data = local_profiles
    alpha, beta = load_profile(str(alpha_path)), load_profile(str(beta_path))
    history = tmp_path / "history.jsonl"
    older = bench_run("a1", alpha, tp=1, ep=False, speed=40.0, when="2026-01-01T10:00:00+00:00")
    newer = bench_run("b1", beta, tp=1, ep=False, speed=90.0, when="2026-01-02T10:00:00+00:00")
    append_result(older, history)
    append_result(newer, history)
    host = older.context.host
    assert host == newer.context.host == "local"
    (alpha_series,) = _BenchCache(host, config_hash(alpha), history, alpha.name).read()
    assert alpha_series.started_s == 1767261600.0
    assert alpha_series.single_stream_tok_s == older.single_stream_tok_s
    (beta_series,) = _BenchCache(host, config_hash(beta), history, beta.name).read()
    assert beta_series.started_s == 1767348000.0
