"""Health counters through NVML: the mapping from NVML's answers to HealthCounters.

NVML cannot run on this machine (no NVIDIA GPU or driver, as on CI), so these tests
replace pynvml's functions with the stand-in of tests/support/fake_nvml.py, extended here with
the health calls (names and return shapes as nvidia-ml-py has them). The real library
is read by tests/perf/h200_health.py on an H200 box.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pynvml
import pytest

from tests.support.fake_nvml import FakeGpu, FakeNvml, h200_box
from tui.gpu.nvml_calls import NvmlUnavailable
from tui.health.badge import badges
from tui.health.health_run import read_counters
from tui.health.nvml_counters import read_nvml_counters
from tui.health.report import build_report
from tui.hosts.local import LocalHost

HEALTH_CALLS = (
    "nvmlDeviceGetRemappedRows",
    "nvmlDeviceGetRetiredPagesPendingStatus",
    "nvmlDeviceGetRetiredPages",
    "nvmlDeviceGetTotalEccErrors",
    "nvmlDeviceGetCurrentClocksThrottleReasons",
    "nvmlDeviceGetViolationStatus",
    "nvmlDeviceGetPcieReplayCounter",
    "nvmlDeviceGetNvLinkState",
    "nvmlDeviceGetNvLinkErrorCounter",
)


class HealthNvml(FakeNvml):
    """The stand-in plus the health calls; `faults[index]` sets one GPU's answers."""

    def __init__(self, gpus: list[FakeGpu], faults: dict[int, dict[str, Any]], **kw: Any) -> None:
        super().__init__(gpus, **kw)
        self.faults = faults

    def _fault(self, gpu: FakeGpu, key: str, default: Any) -> Any:
        return self.faults.get(gpu.index, {}).get(key, default)

    def functions(self) -> dict[str, Callable[..., Any]]:
        bodies: dict[str, Callable[..., Any]] = {
            "nvmlDeviceGetRemappedRows": lambda g: self._fault(g, "rows", (0, 0, 0, 0)),
            "nvmlDeviceGetRetiredPagesPendingStatus": lambda g: pynvml.NVML_FEATURE_DISABLED,
            "nvmlDeviceGetRetiredPages": lambda g, cause: [],
            "nvmlDeviceGetTotalEccErrors": lambda g, kind, counter: self._fault(g, "ecc", {}).get(
                (kind, counter), 0
            ),
            "nvmlDeviceGetCurrentClocksThrottleReasons": lambda g: self._fault(g, "reasons", 0),
            "nvmlDeviceGetViolationStatus": lambda g, policy: SimpleNamespace(
                referenceTime=0, violationTime=self._fault(g, "violation_ns", 0)
            ),
            "nvmlDeviceGetPcieReplayCounter": lambda g: self._fault(g, "replays", 0),
            "nvmlDeviceGetNvLinkErrorCounter": lambda g, link, counter: self._fault(
                g, "nvlink", {}
            ).get((link, counter), 0),
        }
        wrapped = {name: self._wrap(name, body) for name, body in bodies.items()}
        return super().functions() | wrapped


def _install(monkeypatch: pytest.MonkeyPatch, nvml: FakeNvml) -> None:
    nvml.install(monkeypatch.setattr)


def test_counters_map_from_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = h200_box(count=2)
    unc, cor = pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED
    vol, agg = pynvml.NVML_VOLATILE_ECC, pynvml.NVML_AGGREGATE_ECC
    faults = {
        1: {
            "rows": (3, 1, 1, 0),  # correctable, uncorrectable, pending, failure
            "ecc": {(unc, vol): 1, (cor, vol): 4, (unc, agg): 2, (cor, agg): 40},
            "reasons": 0x40 | 0x4 | 0x1,  # HW thermal, SW power cap, idle (not shown)
            "violation_ns": 15_460_893_000,
            "replays": 12,
            "nvlink": {
                (0, pynvml.NVML_NVLINK_ERROR_DL_REPLAY): 2,
                (5, pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT): 7,
                (17, pynvml.NVML_NVLINK_ERROR_DL_RECOVERY): 1,
            },
        }
    }
    _install(monkeypatch, HealthNvml(gpus, faults))
    clean, faulty = read_nvml_counters()
    assert (clean.index, clean.bus_id, clean.source) == (0, "0000:18:00.0", "nvml")
    assert clean.remapped_rows_pending is False and clean.nvlink_errors == 0
    assert clean.ecc_volatile_uncorrected == 0 and clean.clock_event_reasons == ()
    assert faulty.remapped_rows_correctable == 3 and faulty.remapped_rows_uncorrectable == 1
    assert faulty.remapped_rows_pending is True and faulty.remapped_rows_failure is False
    assert (faulty.ecc_volatile_uncorrected, faulty.ecc_volatile_corrected) == (1, 4)
    assert (faulty.ecc_aggregate_uncorrected, faulty.ecc_aggregate_corrected) == (2, 40)
    assert faulty.clock_event_reasons == ("SW Power Cap", "HW Thermal Slowdown")
    assert dict(faulty.violation_us) == {"Power": 15_460_893, "Thermal": 15_460_893}
    assert faulty.pcie_replays == 12 and faulty.retired_pages_pending is False
    assert (faulty.nvlink_replay_errors, faulty.nvlink_crc_flit_errors) == (2, 7)
    assert faulty.nvlink_recovery_errors == 1 and faulty.nvlink_errors == 10
    assert faulty.unavailable == ()
    marks = badges(build_report([clean, faulty], [], "journal"))
    assert (marks[0].codes, marks[1].codes, marks[1].severity) == ("", "RELT", "warn")


def test_each_refused_call_is_na_never_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = h200_box(count=3)
    gpus[0].unsupported = set(HEALTH_CALLS)  # e.g. a GPU without ECC, row remap or NVLink
    gpus[1].nvlinks = 0  # PCIe only: no NVLink counters at all
    gpus[2].lost = True  # fell off the bus
    _install(monkeypatch, HealthNvml(gpus, {}, missing={"nvmlDeviceGetPcieReplayCounter"}))
    none, pcie_only, lost = read_nvml_counters()
    for field in (
        "remapped_rows_pending",
        "ecc_volatile_uncorrected",
        "ecc_aggregate_corrected",
        "retired_pages_sbe",
        "pcie_replays",
        "nvlink_crc_data_errors",
    ):
        assert getattr(none, field) is None, field
    assert none.nvlink_errors is None and none.clock_event_reasons == ()
    refused = "\n".join(none.unavailable)
    assert "nvmlDeviceGetRemappedRows: Not Supported" in refused
    assert "ecc(volatile, uncorrected): Not Supported" in refused
    assert "nvmlDeviceGetNvLinkState: Not Supported" in refused
    assert "nvmlDeviceGetPcieReplayCounter: Function Not Found" in refused
    assert pcie_only.nvlink_errors is None and pcie_only.remapped_rows_pending is False
    assert lost.bus_id == "" and lost.remapped_rows_pending is None
    assert any("lost" in why for why in lost.unavailable)
    assert lost.as_dict()["nvlink_errors"] is None  # the JSON says null, the pane n/a


def test_without_nvml_the_health_source_uses_nvidia_smi(monkeypatch: pytest.MonkeyPatch) -> None:
    _install(monkeypatch, HealthNvml([], {}, init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND))
    with pytest.raises(NvmlUnavailable, match="NVML unavailable"):
        read_nvml_counters()


async def test_read_counters_prefers_nvml_on_this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    _install(monkeypatch, HealthNvml(h200_box(count=2), {1: {"rows": (0, 0, 1, 0)}}))
    counters, buses, why = await read_counters(LocalHost())
    assert why is None and [c.source for c in counters] == ["nvml", "nvml"]
    assert buses == {"0000:18:00.0": 0, "0000:28:00.0": 1}
    assert counters[1].remapped_rows_pending is True
