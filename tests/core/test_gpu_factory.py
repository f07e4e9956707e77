"""gpu_source_for: which source a host gets.

NVML is replaced by tests/support/fake_nvml.py and nvidia-smi by a fake script on PATH,
because this machine has no NVIDIA driver; the choice logic is what is tested.
"""

from __future__ import annotations

from pathlib import Path

import pynvml
import pytest

from tests.support.fake_nvml import FakeNvml, h200_box
from tui.gpu.factory import NoGpuSource, gpu_source_for
from tui.gpu.nvml import NvmlGpuSource
from tui.gpu.smi import SmiGpuSource
from tui.hosts.local import LocalHost


class RemoteLookingHost(LocalHost):
    """A LocalHost that claims to be remote, so the nvidia-smi path is taken."""

    is_local = False


async def test_local_with_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    FakeNvml(h200_box(2)).install(monkeypatch.setattr)
    source = await gpu_source_for(LocalHost())
    try:
        assert isinstance(source, NvmlGpuSource)
        assert (await source.sample()).gpu_count == 2
    finally:
        await source.aclose()


async def test_local_without_nvml_uses_nvidia_smi(
    monkeypatch: pytest.MonkeyPatch, fake_smi: Path
) -> None:
    FakeNvml([], init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND).install(monkeypatch.setattr)
    source = await gpu_source_for(LocalHost())
    try:
        assert isinstance(source, SmiGpuSource)
    finally:
        await source.aclose()


async def test_local_with_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    FakeNvml([], init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED).install(monkeypatch.setattr)
    monkeypatch.setenv("PATH", str(tmp_path))
    source = await gpu_source_for(LocalHost())
    assert isinstance(source, NoGpuSource)
    snapshot = await source.sample()
    assert not snapshot.available and snapshot.error == "no NVIDIA driver (driver not loaded)"


async def test_remote_host(monkeypatch: pytest.MonkeyPatch, fake_smi: Path, tmp_path: Path) -> None:
    FakeNvml(h200_box(2)).install(monkeypatch.setattr)  # never used for a remote host
    source = await gpu_source_for(RemoteLookingHost("box"))
    try:
        assert isinstance(source, SmiGpuSource)
    finally:
        await source.aclose()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    source = await gpu_source_for(RemoteLookingHost("box"))
    assert isinstance(source, NoGpuSource)
    assert source.error == "box: no NVIDIA driver (nvidia-smi not found)"
