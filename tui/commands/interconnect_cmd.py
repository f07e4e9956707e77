"""`servedeck doctor --interconnect`: P2P, ACS, IOMMU, BAR1, links, NUMA; read-only."""

from __future__ import annotations

import argparse
import asyncio
import json

from tui.commands._width import hanging
from tui.compose import open_deck
from tui.core.config import Profile
from tui.health.findings import CRIT, WARN, Finding
from tui.health.interconnect.rules import InterconnectReport

_MARKS = {"crit": "CRIT", "warn": "WARN", "info": "INFO"}


def format_finding(finding: Finding) -> list[str]:
    """Two lines per finding: mark, check, GPU and evidence; then the fix."""
    gpu = f"GPU{finding.gpu}" if finding.gpu is not None else "box"
    head = f"[{_MARKS.get(finding.severity, finding.severity)}] {finding.check:<16} {gpu:<5} "
    return [hanging(head, finding.evidence), hanging(" " * 7 + "fix: ", finding.fix)]


async def interconnect_report(profile: Profile) -> InterconnectReport:
    deck = open_deck(profile)  # the demo's is about the simulated box, never this machine's PCIe
    try:
        return await deck.interconnect()
    finally:
        await deck.close()


def run_interconnect_doctor(args: argparse.Namespace, profile: Profile) -> int:
    """Print the findings; exit 1 when any is a warning or worse."""
    report = asyncio.run(interconnect_report(profile))
    if getattr(args, "json", False):
        print(json.dumps(report.as_dict(), indent=2))
    else:
        where = profile.host_label
        print(hanging("servedeck doctor --interconnect: ", f"profile {profile.name} ({where})"))
        for note in report.notes:
            print(hanging("note: ", note))
        for finding in report.findings:
            print("\n".join(format_finding(finding)))
        bad = [f for f in report.findings if f.severity in (CRIT, WARN)]
        took = f" in {report.elapsed_s:.2f} s" if report.elapsed_s else ""
        verdict = f"{len(bad)} problem(s){took}" if bad else f"no interconnect problem found{took}"
        print(hanging("verdict: ", verdict))
    return 1 if any(f.severity in (CRIT, WARN) for f in report.findings) else 0
