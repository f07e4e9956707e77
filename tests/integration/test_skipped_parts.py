"""The loud line a run prints when real-part tests skipped (it names real servers, so it
lives with their tests): every fixture's reason maps to its part."""

from __future__ import annotations

from tests.support.skipped_parts import INSTALL_AND_RUN_ALL, loud_line, skipped_parts

# The skip reasons the real-part fixtures give (tests/support/*_fixtures.py and friends).
FIXTURE_REASONS = [
    "/usr/sbin/sshd not found (apt-get install openssh-server)",
    "chromium is not installed (apt-get install chromium; .ci/run installs it)",
    "tmux is not installed (apt-get install tmux)",
    "systemd-journal-remote is not installed (apt-get install it)",
    "needs the Debian package prometheus (.ci/run installs it)",
    "real vLLM tier: run with -m real_vllm",
]


def test_each_real_part_reason_is_named_and_the_install_command_given() -> None:
    parts = skipped_parts([*FIXTURE_REASONS, FIXTURE_REASONS[0], "not on this Python"])
    assert parts["OpenSSH sshd"] == 2
    assert set(parts) == {
        "OpenSSH sshd",
        "Chromium",
        "tmux",
        "systemd-journal-remote",
        "Prometheus",
        "the real-vLLM tier (SERVEDECK_REAL_VLLM=1)",
    }
    line = loud_line(parts)
    assert line.startswith("NOT THE WHOLE SUITE: 7 test(s) skipped")
    assert INSTALL_AND_RUN_ALL in line


def test_other_skips_say_nothing() -> None:
    assert not skipped_parts(["not on this Python", "needs Linux"])
