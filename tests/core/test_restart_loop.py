"""The restart-loop detector: NRestarts rising with a known failure in the log.

The "address already in use" line is the real OSError this machine raises for a
taken port; the KV-cache line is vLLM 0.32's own message (v1/core/kv_cache_utils.py)
under vLLM's log prefix.
"""

from __future__ import annotations

import socket
import traceback

from tui.core.audit import read_audit
from tui.serving.unit.restart_loop import EVIDENCE_LINES, RestartLoopDetector, cause_of, record
from tui.summary.incidents import incidents_from_audit

KV_LINE = (
    "(EngineCore_DP0 pid=4242) ERROR 11-30 16:01:02 [core.py:708] ValueError: No available "
    "memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing "
    "the engine"
)


def real_port_error() -> str:
    with socket.socket() as first:
        first.bind(("127.0.0.1", 0))
        first.listen()
        port = first.getsockname()[1]
        with socket.socket() as second:
            try:
                second.bind(("127.0.0.1", port))
            except OSError as error:
                return "".join(traceback.format_exception_only(error)).strip()
    raise AssertionError("the second bind succeeded")


def test_causes_are_recognised() -> None:
    assert cause_of(real_port_error()) == "address already in use"
    assert cause_of(KV_LINE) == "KV-cache check"
    assert cause_of("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate") == (
        "out of memory"
    )
    assert cause_of("INFO Loading weights took 3.2 seconds") is None


def test_rising_restarts_with_a_cause_is_one_loop_then_silence() -> None:
    detector = RestartLoopDetector("vllm-kimi.service")
    detector.observe(0, 100.0)
    detector.feed([KV_LINE])
    detector.observe(1, 130.0)
    assert detector.check() is None  # one restart is not a loop
    detector.observe(2, 160.0)
    loop = detector.check()
    assert loop is not None and loop.cause == "KV-cache check" and loop.restarts == 2
    assert loop.window_s == 60.0 and "restart loop" in loop.message()
    assert detector.check() is None  # reported once
    detector.observe(3, 190.0)
    assert detector.check() is None
    detector.observe(4, 220.0)
    again = detector.check()
    assert again is not None and again.restarts == 4


def test_restarts_without_a_known_cause_or_outside_the_window_are_not_a_loop() -> None:
    quiet = RestartLoopDetector("u")
    quiet.observe(0, 0.0)
    quiet.observe(5, 60.0)
    quiet.feed(["INFO Application startup complete."])
    assert quiet.check() is None
    slow = RestartLoopDetector("u", window_s=100.0)
    slow.feed([real_port_error()])
    slow.observe(0, 0.0)
    slow.observe(1, 90.0)
    slow.observe(2, 200.0)  # the first reading fell out of the window
    assert slow.check() is None


def test_a_loop_is_an_incident_in_the_summary() -> None:
    detector = RestartLoopDetector("vllm-kimi.service")
    detector.feed([real_port_error()])
    detector.observe(3, 0.0)
    detector.observe(6, 120.0)
    loop = detector.check()
    assert loop is not None
    record(loop, "gpu-box")
    (incident,) = incidents_from_audit(read_audit(), "gpu-box")
    assert incident.event == "service.restart-loop"
    assert "vllm-kimi.service restart loop: 3 restarts" in incident.text
    assert "address already in use" in incident.text


def test_the_evidence_is_the_newest_cause_in_the_recent_log() -> None:
    """The log is searched when the restarts rise, newest line first, and only its last
    EVIDENCE_LINES lines: a cause further back does not explain this loop."""
    detector = RestartLoopDetector("u")
    port_error = real_port_error()
    detector.feed([port_error, "INFO starting"])
    detector.feed(iter(["INFO loading", KV_LINE, "INFO exiting"]))
    detector.observe(0, 0.0)
    detector.observe(2, 60.0)
    loop = detector.check()
    assert loop is not None and loop.cause == "KV-cache check" and loop.evidence == KV_LINE

    old = RestartLoopDetector("u")
    old.feed([port_error])
    old.feed(["INFO serving"] * EVIDENCE_LINES)
    old.observe(0, 0.0)
    old.observe(2, 60.0)
    assert old.evidence() is None and old.check() is None
    old.feed([KV_LINE])  # the cause shows with the next failing start: reported then
    loop = old.check()
    assert loop is not None and loop.cause == "KV-cache check"
    assert old.check() is None  # once
