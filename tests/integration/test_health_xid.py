"""XID events: decoding every kernel format, and following a real kernel journal over a
real sshd, each event on the right GPU within 2 s of being logged; garbage and unknown XIDs.
"""

from __future__ import annotations

import asyncio
import re
import struct
import time
from pathlib import Path

import pytest

from tests.support.journal_fixtures import BOOT_ID, JournalWriter
from tests.support.sshd_fixtures import SshdPair
from tui.health.counters import parse_counters
from tui.health.findings import CRIT, INFO, WARN
from tui.health.health_run import collect_health
from tui.health.report import build_report, gpu_badge, replay_rate
from tui.health.xid.decode import RESET_GPU, RESTART_ENGINE, XID_TABLE, decode_xid
from tui.health.xid.kernel_log import KernelLogFollower
from tui.hosts.local import LocalHost
from tui.hosts.ssh import SSHHost

# An 8-GPU box; bus ids as nvidia-smi prints them, mapped the way the health source does.
BUSES = {f"0000:{bus:02x}:00.0": i for i, bus in enumerate((1, 33, 65, 97, 129, 161, 193, 225))}
FIXTURE_Q = (
    Path(__file__).parents[1] / "support" / "fixtures" / "health" / "nvidia_smi_q_2x_h200.txt"
)

# (kernel line, xid, gpu) in the formats drivers print them.
LINES = [
    ("NVRM: Xid (PCI:0000:41:00): 79, pid=4181, name=VLLM::Worker_TP2, GPU has fallen off the bus.", 79, 2),
    ("NVRM: Xid (PCI:0000:01:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address", 13, 0),
    ("NVRM: Xid (PCI:0000:21:00): 31, pid=4182, name=python3, Ch 00000008, intr 10000000. MMU Fault: ENGINE GRAPHICS GPC0 faulted @ 0x7f2a_00000000.", 31, 1),
    ("NVRM: Xid (PCI:0000:61:00): 43, pid=4183, name=VLLM::Worker_TP3, Ch 00000010", 43, 3),
    ("NVRM: Xid (PCI:0000:81:00): 48, pid=4184, name=python3, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.", 48, 4),
    ("NVRM: Xid (PCI:0000:a1:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row marked for remapping, reset gpu to activate.", 63, 5),
    ("NVRM: Xid (PCI:0000:c1:00): 64, pid='<unknown>', name=<unknown>, Row Remapper: Failed to mark row for remapping.", 64, 6),
    ("NVRM: Xid (PCI:0000:e1:00): 74, pid=4187, name=python3, NVLink: fatal error detected on link 3(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)", 74, 7),
    ("NVRM: Xid (PCI:0000:01:00): 92, pid='<unknown>', name=<unknown>, High single-bit ECC error rate", 92, 0),
    ("NVRM: Xid (PCI:0000:21:00): 94, pid=4182, name=python3, Contained: SM (0x1). RST: No, D-RST: No", 94, 1),
    ("NVRM: Xid (PCI:0000:41:00): 95, pid=4181, name=python3, Uncontained: FBHUB. RST: Yes, D-RST: No", 95, 2),
    ("NVRM: Xid (PCI:0000:61:00): 119, pid=4183, name=python3, Timeout after 6s of waiting for RPC response from GPU3 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).", 119, 3),
    ("NVRM: Xid (PCI:0000:81:00): 154, pid='<unknown>', name=<unknown>, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)", 154, 4),
]  # fmt: skip
GARBAGE = [
    "NVRM: Xid (PCI:0000:zz:00): 79, pid=1, name=x, nonsense bus",
    "NVRM: Xid (PCI:0000:41:00): notanumber, pid=1",
    "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.95.05",
    "",
    "\x1b[31m\xff garbage",
]
UNKNOWN = "NVRM: Xid (PCI:0000:e1:00): 999, pid=1, name=python3, something new"


@pytest.mark.parametrize(("line", "xid", "gpu"), LINES, ids=[str(x) for _, x, _ in LINES])
def test_each_xid_is_decoded_onto_its_gpu(line: str, xid: int, gpu: int) -> None:
    event = decode_xid(line, BUSES)
    assert event is not None and (event.xid, event.gpu_index) == (xid, gpu)
    assert event.name == XID_TABLE[xid].name
    assert event.detail and "pid=" not in event.detail and "name=" not in event.detail


def test_decoded_fields_and_actions() -> None:
    e79 = decode_xid(f"[ 8812.551203] {LINES[0][0]}", BUSES)  # dmesg's timestamp prefix
    assert e79 is not None and e79.pid == 4181 and e79.process_name == "VLLM::Worker_TP2"
    assert e79.severity == CRIT and "reboot" in e79.action and "RMA" in e79.action
    e13 = decode_xid(LINES[1][0], BUSES)
    assert e13 is not None and e13.pid is None and e13.process_name is None
    assert e13.action == RESTART_ENGINE and e13.severity == WARN
    e95 = decode_xid(LINES[10][0], BUSES)
    assert e95 is not None and e95.action == RESET_GPU
    e154 = decode_xid(LINES[12][0], BUSES)
    assert e154 is not None and e154.action == "Node Reboot Required"
    # older drivers: no `PCI:` and a full bus id with function
    old = decode_xid("NVRM: Xid (0000:41:00.0): 43, Ch 00000010", BUSES)
    assert old is not None and (old.xid, old.gpu_index, old.pid) == (43, 2, None)


def test_garbage_and_unknown_xids() -> None:
    assert [decode_xid(line, BUSES) for line in GARBAGE] == [None] * len(GARBAGE)
    unknown = decode_xid(UNKNOWN, BUSES)
    assert unknown is not None and unknown.xid == 999 and unknown.gpu_index == 7
    assert unknown.name == "unknown XID 999" and unknown.severity == WARN
    lost = decode_xid("NVRM: Xid (PCI:0000:99:00): 79, pid=1, name=x, GPU has fallen off", BUSES)
    assert lost is not None and lost.gpu_index is None  # a bus no GPU answers to any more


def test_counters_from_nvidia_smi_q() -> None:
    c0, c1 = parse_counters(FIXTURE_Q.read_text(), {"0000:18:00.0": 0, "0000:2a:00.0": 1})
    assert (c0.remapped_rows_pending, c0.ecc_volatile_uncorrected, c0.pcie_replays) == (False, 0, 0)
    assert c0.clock_event_reasons == () and dict(c0.violation_us)["SW Power Capping"] == 2461
    assert c1.remapped_rows_pending is True and c1.remapped_rows_failure is False
    assert (c1.ecc_volatile_corrected, c1.ecc_volatile_uncorrected) == (3, 1)
    assert (c1.ecc_aggregate_corrected, c1.ecc_aggregate_uncorrected) == (41, 2)
    assert c1.pcie_replays == 12 and c1.clock_event_reasons == ("SW Thermal Slowdown",)
    assert c1.retired_pages_pending is None  # N/A on Hopper: row remapping instead
    assert parse_counters("garbage\n\x00") == []


def test_badges() -> None:
    c0, c1 = parse_counters(FIXTURE_Q.read_text())
    assert gpu_badge(c0, ()) == ("ok", ())
    badge, reasons = gpu_badge(c1, ())
    assert badge == WARN and any("reset the GPU" in r for r in reasons)
    e79 = decode_xid(LINES[0][0], {"0000:41:00.0": 0})
    assert e79 is not None and gpu_badge(c0, (e79,))[0] == CRIT
    climbed = re.sub(r"(Replays Since Reset\s+: )12", r"\g<1>22", FIXTURE_Q.read_text())
    assert replay_rate(c1, parse_counters(climbed)[1], 2.0) == 5.0
    assert replay_rate(c1, c1, 0.0) is None
    assert gpu_badge(c0, (), replay_rate_per_s=5.0)[0] == WARN
    report = build_report([c0, c1], [e79], "journal")
    assert [g.badge for g in report.gpus] == [CRIT, WARN]
    assert report.as_dict()["gpus"][0]["events"][0]["xid"] == 79  # type: ignore[index]
    assert INFO not in {g.badge for g in report.gpus}


# -- a real kernel journal, followed over a real sshd ------------------------------------


class KernelJournal(JournalWriter):
    """journal-remote fed entries the way the kernel's own look (transport kernel)."""

    def write_kernel(self, *messages: str) -> None:
        data = b""
        for message in messages:
            body = message.encode()
            data += (
                f"__REALTIME_TIMESTAMP={int(time.time() * 1e6)}\n"
                f"__MONOTONIC_TIMESTAMP={self.count + 1}\n"
                f"_BOOT_ID={BOOT_ID}\n_TRANSPORT=kernel\nSYSLOG_IDENTIFIER=kernel\n"
                "SYSLOG_FACILITY=0\nPRIORITY=4\n"
            ).encode()
            data += b"MESSAGE\n" + struct.pack("<Q", len(body)) + body + b"\n\n"
            self.count += 1
        assert self._process.stdin is not None
        self._process.stdin.write(data)
        self._process.stdin.flush()


@pytest.fixture
def kernel_journal(tmp_path: Path):  # type: ignore[no-untyped-def]
    writer = KernelJournal(tmp_path / "kernel.journal")
    yield writer
    writer.close()


async def _wait_for(predicate, what: str, timeout_s: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


@pytest.mark.sshd
async def test_follow_kernel_journal_over_ssh_each_xid_within_two_seconds(
    sshd: SshdPair, kernel_journal: KernelJournal
) -> None:
    # Lines from before the follow starts, a unit's line that mentions an XID, and garbage.
    kernel_journal.write_kernel("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.95.05")
    kernel_journal.write(f"echo '{LINES[0][0]}'", unit="vllm.service")  # not the kernel's
    kernel_journal.wait_visible(2)
    host = SSHHost(sshd.host_config())
    follower = KernelLogFollower(host, journal_file=str(kernel_journal.path), retry_delay_s=0.05)
    seen: list[tuple[float, object]] = []

    async def consume() -> None:
        async for event in follower.events(BUSES):
            seen.append((time.monotonic(), event))

    task = asyncio.create_task(consume())
    try:
        # The follow is live once a first event comes through.
        kernel_journal.write_kernel(LINES[3][0])
        await _wait_for(lambda: len(seen) == 1, "the first event")
        delays = []
        for line, xid, gpu in [*LINES, (UNKNOWN, 999, 7)]:
            kernel_journal.write_kernel(*GARBAGE[:3], line)
            written = time.monotonic()
            count = len(seen)
            await _wait_for(lambda count=count: len(seen) > count, f"XID {xid}")
            at, event = seen[-1]
            assert (event.xid, event.gpu_index) == (xid, gpu)  # type: ignore[attr-defined]
            delays.append(at - written)
        print(
            f"XID over ssh: slowest {max(delays):.3f} s, median {sorted(delays)[len(delays) // 2]:.3f} s"
        )
        assert max(delays) < 2.0, f"slowest event took {max(delays):.2f} s"
        await asyncio.sleep(0.5)  # room for a stray repeat or garbage event
        assert len(seen) == len(LINES) + 2
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await host.close()


@pytest.mark.sshd
async def test_follow_resumes_after_a_cut_connection_without_repeats(
    sshd: SshdPair, kernel_journal: KernelJournal
) -> None:
    host = SSHHost(sshd.host_config())
    follower = KernelLogFollower(host, journal_file=str(kernel_journal.path), retry_delay_s=0.05)
    seen: list[int] = []

    async def consume() -> None:
        async for event in follower.events(BUSES):
            seen.append(event.xid)

    task = asyncio.create_task(consume())
    try:
        kernel_journal.write_kernel(LINES[0][0])
        await _wait_for(lambda: seen == [79], "XID 79")
        assert sshd.first.kill_connections() >= 1
        kernel_journal.write_kernel(LINES[1][0])  # logged while the connection is down
        await _wait_for(lambda: follower.reconnects >= 1 and len(seen) >= 2, "the resume")
        await asyncio.sleep(0.5)
        assert seen == [79, 13]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await host.close()


async def test_collect_health_without_a_driver_says_so() -> None:
    report = await collect_health(LocalHost(), journal_file="/nonexistent.journal")
    assert report.gpus == ()
    assert any("no GPU counters" in note for note in report.notes)
