"""Helpers for the summary tests: a serving demo deck, table checks, golden normalisation."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import replace

from markdown_it import MarkdownIt

from tui.core.config import Profile, demo_profile
from tui.deck import Deck
from tui.hosts.local import LocalHost
from tui.serving.load.tracker import LoadFacts, PhaseSpan
from tui.sim.box import SimBox
from tui.sim.deck import SimDeck
from tui.summary.inputs import SummaryInputs

FIXED_S = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC


def demo_deck(box: SimBox, profile: Profile | None = None) -> Deck:
    """The deck `open_deck` builds for the demo, around a box the test owns."""
    base = profile or demo_profile()
    service = replace(base.service, base_url=box.base_url)
    return SimDeck(replace(base, service=service), LocalHost(label="simulator"), box)


def table_shapes(markdown: str) -> list[tuple[int, list[int]]]:
    """(header cells, cells per body row) of every table markdown-it finds."""
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    shapes: list[tuple[int, list[int]]] = []
    header = 0
    rows: list[int] = []
    cells = 0
    section = ""
    for token in tokens:
        if token.type == "table_open":
            header, rows = 0, []
        elif token.type in ("thead_open", "tbody_open"):
            section = token.type
        elif token.type == "tr_open":
            cells = 0
        elif token.type in ("th_open", "td_open"):
            cells += 1
        elif token.type == "tr_close":
            if section == "thead_open":
                header = cells
            else:
                rows.append(cells)
        elif token.type == "table_close":
            shapes.append((header, rows))
    return shapes


def table_lines_outside_tables(markdown: str) -> list[str]:
    """Lines that look like table rows but are not part of any parsed table."""
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    covered: set[int] = set()
    for token in tokens:
        if token.type == "table_open" and token.map:
            covered.update(range(token.map[0], token.map[1]))
    return [
        line
        for number, line in enumerate(markdown.splitlines())
        if line.startswith("|") and number not in covered
    ]


# A vLLM log line's pid and clock, e.g. `(Worker_TP0 pid=2415) WARNING 11-30 16:50:19`.
_VOLATILE_LOG_PREFIX = re.compile(r"\(\w+ pid=\d+\) \w+ \d\d-\d\d \d\d:\d\d:\d\d")


def normalised(inputs: SummaryInputs) -> SummaryInputs:
    """Replace every value that changes from run to run (times, pids, ports, noise)."""
    gpu = inputs.gpu
    if gpu is not None:
        samples = tuple(
            replace(s, utilization_gpu_pct=0.0, power_w=100.0, temperature_c=40.0)
            for s in gpu.samples
        )
        gpu = replace(gpu, taken_at_s=FIXED_S, samples=samples)
    service = inputs.service
    if service is not None:
        unit = service.unit and replace(
            service.unit, started_at_s=FIXED_S, state_since_s=FIXED_S, main_pid=4242
        )
        service = replace(
            service,
            unit=unit,
            base_url="http://127.0.0.1:8000",
            port=8000,
            main_cmdline="python -m tui.sim.server --port 8000 (normalised)",
        )
    load = inputs.load
    if load is not None:
        spans = tuple(
            PhaseSpan(span.phase, FIXED_S + 10.0 * index, 10.0)
            for index, span in enumerate(load.timeline)
        )
        volatile = {
            f.name: 1.0
            for f in dataclasses.fields(LoadFacts)
            if f.name.endswith("_s") and getattr(load.facts, f.name) is not None
        }
        load = replace(load, timeline=spans, facts=replace(load.facts, **volatile), at_s=FIXED_S)
    hardware = inputs.hardware_health
    if hardware is not None and hardware.interconnect is not None:
        findings = tuple(
            replace(f, evidence=_VOLATILE_LOG_PREFIX.sub("(log line)", f.evidence))
            for f in hardware.interconnect.findings
        )
        hardware = replace(hardware, interconnect=replace(hardware.interconnect, findings=findings))
    return replace(
        inputs,
        hardware_health=hardware,
        generated_at_s=FIXED_S,
        gpu=gpu,
        service=service,
        load=load,
        load_source="service log",
        incidents=tuple(replace(i, time="2026-01-01T00:00:00+0000") for i in inputs.incidents),
        files=tuple((what, "<path>") for what, _ in inputs.files),
    )


def _deck_host_label(profile: Profile) -> str:
    return "simulator" if profile.is_demo else profile.host.route


def bench_run(run_id: str, profile: Profile, *, tp: int, ep: bool, speed: float, when: str):  # type: ignore[no-untyped-def]
    """A finished sweep as the engine records it (levels summarised by the real code)."""
    from tui.bench.context import context_for_profile
    from tui.bench.metrics import summarize_level
    from tui.bench.model import BenchResult, RequestOutcome

    def level(concurrency: int, ttft_s: float, tpot_s: float):  # type: ignore[no-untyped-def]
        tokens = 256
        outcomes = [
            RequestOutcome(
                success=True,
                ttft_s=ttft_s,
                latency_s=ttft_s + tpot_s * (tokens - 1),
                itl_s=[tpot_s] * (tokens - 1),
                output_tokens=tokens,
                chunks=tokens,
                prompt_tokens=1024,
                usage_seen=True,
            )
            for _ in range(4 * concurrency)
        ]
        duration = (ttft_s + tpot_s * (tokens - 1)) * 4
        return summarize_level(
            outcomes,
            concurrency=concurrency,
            request_rate=None,
            burstiness=1.0,
            num_requests=len(outcomes),
            duration_s=duration,
        )

    context = context_for_profile(replace(profile, model=replace(profile.model, tp=tp, ep=ep)))
    return BenchResult(
        run_id=run_id, started_at=when, preset="sweep", endpoint="completions",
        input_tokens=1024, output_tokens=256, temperature=0.0, ignore_eos=True,
        # The deck's host label, as the console and `servedeck bench` record it.
        context=replace(context, host=_deck_host_label(profile), gpus="0-7", engine_version="0.33.0"),
        levels=tuple(level(c, 0.25 * (1 + c / 16), (1 / speed) * (1 + c / 40)) for c in (1, 8, 32)),
    )  # fmt: skip


def seed_history(profile: Profile) -> None:
    """Two benchmark runs and one leftover kill, as the console would have recorded them."""
    from tui.bench.history import append_result
    from tui.core.audit import append_audit

    append_result(
        bench_run("r1", profile, tp=8, ep=True, speed=70.0, when="2026-01-01T09:00:00+00:00")
    )
    append_result(
        bench_run("r2", profile, tp=8, ep=False, speed=82.0, when="2026-01-01T10:00:00+00:00")
    )
    target = {"pid": 4321, "class": "leftover", "gpu_memory_bytes": 80 * 1024**3,
              "command": "VLLM::Worker_TP3"}  # fmt: skip
    append_audit("kill-request", "simulator", {"action": "kill", "targets": [target]})
    append_audit(
        "kill-outcome",
        "simulator",
        {"action": "kill", "summary": "simulator: 1 ended; 80.00 GiB GPU memory freed"},
    )
