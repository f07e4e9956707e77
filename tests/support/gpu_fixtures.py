"""GPU test fixtures: a fake `nvidia-smi` on PATH.

The fake is a shell script replaying captured output, a stand-in because this
machine has no NVIDIA GPU or driver.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

NVIDIA_SMI_FIXTURES = Path(__file__).parent / "fixtures" / "nvidia_smi"

FAKE_SMI = """#!/bin/sh
# Stand-in for nvidia-smi (no NVIDIA GPU on this machine): replays fixture output.
echo "$*" >> "$FAKE_SMI_DIR/calls.log"
case "$*" in
  *--query-gpu*)
    case " $* " in *" -lms "*) ;; *) NO_LOOP=1 ;; esac  # no -lms: one answer, as the real one
    if [ -n "$FAKE_SMI_STREAM_ONCE$NO_LOOP" ]; then
      cat "$FAKE_SMI_DIR/handmade_8x_h200_query_gpu.csv" | head -n 8
      exit 0
    fi
    if [ -n "$FAKE_SMI_LINE_DELAY" ]; then  # one GPU line at a time, as a slow driver prints
      while true; do
        head -n 8 "$FAKE_SMI_DIR/handmade_8x_h200_query_gpu.csv" | while read -r line; do
          echo "$line" || exit 1; sleep "$FAKE_SMI_LINE_DELAY"
        done || exit 0
      done
    fi
    # A closed pipe ends it, as it ends the real nvidia-smi (no shim left looping).
    while true; do head -n 8 "$FAKE_SMI_DIR/handmade_8x_h200_query_gpu.csv" || exit 0; sleep 0.2; done ;;
  *--query-compute-apps*) cat "$FAKE_SMI_DIR/handmade_8x_h200_compute_apps.csv" ;;
  "topo -m") cat "$FAKE_SMI_DIR/handmade_8x_h200_topo_m.txt" ;;
  -L) echo "GPU 0: NVIDIA H200 (UUID: GPU-3c8a1f52-9d1e-7b2a-51c4-0e6f8d2a9b11)" ;;
  --version) cat "$FAKE_SMI_DIR/handmade_8x_h200_version.txt" ;;
  *) echo "unexpected arguments: $*" >&2; exit 2 ;;
esac
"""


@pytest.fixture
def fake_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "nvidia-smi"
    script.write_text(FAKE_SMI)
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    for fixture in NVIDIA_SMI_FIXTURES.glob("handmade_8x_h200_*"):
        (tmp_path / fixture.name).write_bytes(fixture.read_bytes())
    monkeypatch.setenv("FAKE_SMI_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return tmp_path
