"""A run that skipped tests for a missing real part says so, loudly, at its end.

The tests start real servers (sshd, systemd-journal-remote, Chromium, tmux, Prometheus,
the CPU build of vLLM). On a machine without them those tests skip, and a green
"N passed, M skipped" would read as the whole suite passing. So the run's last lines
name each missing part, how many tests it skipped, and the one command that installs
everything and runs the whole suite (`bash .ci/run`). Under CI a missing part already
fails its tests (sshd_fixtures._missing and friends); this is for a developer's run.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

# The skip reasons of the real-part fixtures, and the part each names.
_PARTS = (
    (re.compile(r"sshd|openssh", re.I), "OpenSSH sshd"),
    (re.compile(r"zsh", re.I), "zsh"),
    (re.compile(r"chromium", re.I), "Chromium"),
    (re.compile(r"tmux", re.I), "tmux"),
    (re.compile(r"prometheus", re.I), "Prometheus"),
    (re.compile(r"journal", re.I), "systemd-journal-remote"),
    (re.compile(r"real vLLM tier|vllm", re.I), "the real-vLLM tier (SERVEDECK_REAL_VLLM=1)"),
)
INSTALL_AND_RUN_ALL = "bash .ci/run"


def missing_part(reason: str) -> str | None:
    """The real part a skip reason names, or None for a skip of another kind."""
    for pattern, part in _PARTS:
        if pattern.search(reason):
            return part
    return None


def skipped_parts(reasons: list[str]) -> Counter[str]:
    return Counter(part for reason in reasons if (part := missing_part(reason)) is not None)


def loud_line(parts: Counter[str]) -> str:
    named = ", ".join(f"{part} ({count})" for part, count in parts.most_common())
    total = sum(parts.values())
    return (
        f"NOT THE WHOLE SUITE: {total} test(s) skipped for missing real parts: {named}. "
        f"`{INSTALL_AND_RUN_ALL}` installs them and runs every test."
    )


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    reasons = []
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        if isinstance(longrepr, tuple) and len(longrepr) == 3:
            reasons.append(str(longrepr[2]))
    parts = skipped_parts(reasons)
    if parts:
        terminalreporter.write_sep("!", "real parts missing", red=True, bold=True)
        terminalreporter.write_line(loud_line(parts), red=True, bold=True)
