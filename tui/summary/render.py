"""The state summary as Markdown: an "at a glance" block first, then one section per topic.

The whole document passes through redact_text at the end (with the profile's
API key value as an extra secret), so a secret in a log line, a command line
or a profile note never reaches the page.
"""

from __future__ import annotations

import json
from datetime import datetime

from tui.bench.best import COMPLETE, BenchFigure, best_benchmarks, figure_of
from tui.bench.capacity.answer import capacity_line, latest_finished
from tui.bench.model import BenchResult, LevelResult
from tui.core.formatting import NA, duration_markdown, gib
from tui.core.redact import redact_data, redact_text
from tui.plan.render import plan_markdown
from tui.serving.load.waterfall import LOG_SPAN
from tui.summary import sections
from tui.summary.hardware_section import hardware_health_markdown
from tui.summary.inputs import SummaryInputs
from tui.summary.last_load import last_load_lines
from tui.summary.mdtable import clock, ms, num, table
from tui.summary.recorded_render import (
    deployment_attempts_lines,
    recorded_incidents_lines,
    tune_lines,
)


def _load_seconds(inputs: SummaryInputs) -> float | None:
    """Start to serving, from the load timeline (None when the load has not finished)."""
    load = inputs.load
    if load is None or not load.timeline:
        return None
    serving = [s for s in load.timeline if s.phase == "serving"]
    if not serving:
        return None
    return serving[0].started_at_s - load.timeline[0].started_at_s


def _load_started_s(inputs: SummaryInputs) -> float | None:
    """When the current load began (its first phase), None without a load timeline."""
    load = inputs.load
    return load.timeline[0].started_at_s if load is not None and load.timeline else None


def _run_started_s(started_at: str) -> float | None:
    """A run's ISO 8601 start as epoch seconds (None when it cannot be read)."""
    try:
        return datetime.fromisoformat(started_at).timestamp()
    except ValueError:
        return None


def glance(inputs: SummaryInputs) -> list[str]:
    out = ["## At a glance", ""]
    s, load, gpu, m = inputs.service, inputs.load, inputs.gpu, inputs.model
    if s is not None and s.unit is not None:
        out.append(
            f"- Service: `{s.unit.unit}` {s.unit.active_state} ({s.unit.sub_state}) "
            f"since {clock(s.unit.since_s)}, port {s.port}"
        )
    if load is not None:
        phase = "serving, ready" if load.ready else load.phase
        took = _load_seconds(inputs)
        out.append(
            f"- Load: {phase}"
            + (f"; loaded in {duration_markdown(took)} ({LOG_SPAN})" if took is not None else "")
        )
        if load.failure_line:
            out.append(f"- Load failed: `{load.failure_line}`")
    if m is not None:
        p = inputs.profile.model
        arch = m.arch
        shape = ""
        if arch is not None:
            attention = "MLA" if arch.is_mla else "GQA"
            experts = (
                f", {arch.num_experts} experts top-{arch.experts_per_token}" if arch.is_moe else ""
            )
            shape = f" ({arch.num_layers} layers, {attention}{experts}, {arch.quant.label})"
        layout = (
            f"TP={p.tp}"
            + (" + EP" if p.ep else "")
            + (f", DP={p.dp}" if p.dp > 1 else "")
            + (f", PP={p.pp}" if p.pp > 1 else "")
        )
        out.append(f"- Model: {m.name}{shape}, {layout}")
    if gpu is not None and gpu.statics:
        first = gpu.statics[0]
        link = {True: "NVLink", False: "PCIe only, no NVLink", None: "interconnect unknown"}[
            sections.nvlink(gpu)
        ]
        out.append(
            f"- GPUs: {len(gpu.statics)} x {first.name} ({gib(first.memory_total_bytes, 0)}), {link}"
        )
    if inputs.software is not None and inputs.software.packages:
        pk = inputs.software.packages
        engine = "vllm" if "vllm" in pk else "sglang" if "sglang" in pk else None
        if engine:
            out.append(f"- Engine: {engine} {pk[engine]}, torch {pk.get('torch', NA)}")
    out += [f"- {line}" for line in _headline(inputs)[:2]]
    kills = [i for i in inputs.incidents if i.event.startswith("kill")]
    if kills:
        out.append(f"- Incidents: {len(kills)} kill records in the audit log")
    if inputs.problems:
        out.append(f"- Not collected: {len(inputs.problems)} part(s), listed at the end")
    return [*out, ""]


def handoff(inputs: SummaryInputs) -> list[str]:
    h = inputs.profile.handoff
    out = ["## Goal and instructions", ""]
    out += [f"Goal: {h.goal}" if h.goal else "Goal: (none in the profile's [handoff])", ""]
    if h.instructions:
        out += [h.instructions.strip(), ""]
    if inputs.profile.description:
        out += [f"Profile: {inputs.profile.description}", ""]
    return out


def _current(inputs: SummaryInputs) -> list[BenchFigure]:
    """The best complete run per workload, those of the profile's configuration first."""
    best = best_benchmarks(inputs.benchmarks)
    runs = {run.run_id: run for run in inputs.benchmarks}
    return sorted(
        best, key=lambda f: runs[f.run_id].context.config_hash != inputs.bench_config_hash
    )


def _headline(inputs: SummaryInputs) -> list[str]:
    """The capacity answer first, then the best complete run of each workload."""
    lines = []
    latest = latest_finished(inputs.capacity_searches, inputs.host_label)
    if latest is not None:
        lines.append(f"Capacity: {capacity_line(latest, inputs.capacity_searches)}")
    runs = {run.run_id: run for run in inputs.benchmarks}
    for figure in _current(inputs):
        run = runs[figure.run_id]
        c = run.context
        single = figure.single_stream_tok_s
        lines.append(
            f"Best {run.preset} ({run.input_tokens}/{run.output_tokens} tok, {c.model or NA} "
            f"TP={c.tp}{' + EP' if c.ep else ''}, {run.started_at[:16].replace('T', ' ')}): "
            f"{figure.describe()}"
            + (f", single stream {num(single)} tok/s" if single is not None else "")
        )
    return lines


def _first_level(run: BenchResult) -> LevelResult | None:
    return next(
        (level for level in run.levels if level.concurrency == 1),
        run.levels[0] if run.levels else None,
    )


def benchmarks(inputs: SummaryInputs) -> list[str]:
    out = ["## Benchmarks", ""]
    headline = _headline(inputs)
    if headline:
        out += [*(f"- {line}" for line in headline), ""]
    if not inputs.benchmarks:
        if headline:
            return out
        return [
            *out,
            "No benchmark runs recorded for this host yet (press `b` in the console).",
            "",
        ]
    startup, load_started_s = _load_seconds(inputs), _load_started_s(inputs)
    rows = []
    for run in inputs.benchmarks:
        c = run.context
        figure = figure_of(run)
        first = _first_level(run)
        ttft = first.ttft.median_ms / 1000 if first is not None and first.ttft.count else None
        prefill = first.prefill_tok_s_per_request if first is not None else None
        m = inputs.profile.model
        same = c.config_hash == inputs.bench_config_hash or (c.model, c.tp, c.ep) == (
            m.name,
            m.tp,
            m.ep,
        )
        # An earlier load's run did not run on this load: its startup is not known here.
        run_s = _run_started_s(run.started_at)
        same = same and load_started_s is not None and run_s is not None and run_s >= load_started_s
        decode = figure.kind == "decode" and figure.tok_s is not None
        rows.append(
            (
                run.started_at[:16].replace("T", " "),
                c.model or NA,
                f"TP={c.tp}" + (" + EP" if c.ep else ""),
                c.gpus or NA,
                run.preset + ("" if figure.state == COMPLETE else f" ({figure.state})"),
                f"{run.input_tokens}/{run.output_tokens}",
                num(run.single_stream_tok_s),
                num(figure.tok_s) if decode else NA,
                figure.at if decode else NA,
                ms(ttft),
                num(prefill, 0),
                duration_markdown(startup) if same and startup is not None else NA,
            )
        )
    out += table(
        [
            "run",
            "model",
            "layout",
            "GPUs",
            "preset",
            "in/out tok",
            "single-stream tok/s",
            "best tok/s",
            "at",
            "TTFT p50",
            "prefill tok/s",
            "startup",
        ],
        rows,
        right=(6, 7, 9, 10, 11),
    )
    out += [
        "The best lines above count complete runs only; a partial or cancelled run is "
        "marked in the table and never counted. "
        "Decode and prefill are reported apart: single-stream tok/s is output tok/s at "
        "concurrency 1 (vLLM's output_throughput); prefill tok/s is prompt tokens / TTFT per request at the lowest "
        "concurrency; best tok/s is total output tokens / run duration at the best level. "
        "Startup is the current load's start-to-serving time, shown for the runs measured "
        "on that load.",
        "",
    ]
    return out


def incidents(inputs: SummaryInputs) -> list[str]:
    out = ["## Incidents", ""]
    if not inputs.incidents:
        out += ["No kills or service actions in the audit log for this host.", ""]
    else:
        out += table(
            ["time", "event", "what"], [(i.time, i.event, i.text) for i in inputs.incidents]
        )
    return out + recorded_incidents_lines(inputs.recorded)


def plan(inputs: SummaryInputs) -> list[str]:
    if inputs.plan is None:
        return ["## Preflight plan", "", "_No plan: the model or the GPUs were not collected._", ""]
    text = plan_markdown(inputs.plan, inputs.chosen_layout)
    demoted = [("#" + line) if line.startswith("##") else line for line in text.splitlines()]
    demoted[0] = "## Preflight plan" + demoted[0].removeprefix("### Deployment plan")
    return [*demoted, ""]


def notes(inputs: SummaryInputs) -> list[str]:
    h = inputs.profile.handoff
    out = ["## Lessons", ""]
    out += [f"- {item}" for item in h.lessons] or ["(none recorded)"]
    out += ["", "## Next steps", ""]
    out += [f"- {item}" for item in h.next_steps] or ["(none recorded)"]
    return [*out, ""]


def files(inputs: SummaryInputs) -> list[str]:
    out = ["## Relevant files", ""]
    return out + table(["what", "where"], [(what, f"`{where}`") for what, where in inputs.files])


def problems(inputs: SummaryInputs) -> list[str]:
    if not inputs.problems:
        return []
    return ["## Collection problems", "", *(f"- {p}" for p in inputs.problems), ""]


def render_markdown(inputs: SummaryInputs, extra_secrets: tuple[str, ...] = ()) -> str:
    """The whole summary; secrets replaced by the redaction marker."""
    head = [
        f"# State summary: {inputs.profile.name} on {inputs.host_label}",
        "",
        f"Generated {clock(inputs.generated_at_s)} by servedeck.",
        "",
    ]
    parts = [
        head,
        glance(inputs),
        handoff(inputs),
        sections.hardware(inputs),
        sections.software(inputs),
        sections.model(inputs),
        sections.service(inputs),
        sections.now(inputs),
        last_load_lines(inputs.last_load),
        hardware_health_markdown(inputs.hardware_health),
        benchmarks(inputs),
        incidents(inputs),
        deployment_attempts_lines(inputs.recorded),
        tune_lines(inputs.recorded),
        plan(inputs),
        notes(inputs),
        files(inputs),
        problems(inputs),
    ]
    text = "\n".join(line.rstrip() for part in parts for line in part).rstrip() + "\n"
    return redact_text(text, extra_secrets)


def render_json(inputs: SummaryInputs, extra_secrets: tuple[str, ...] = ()) -> str:
    """Every collected fact as JSON (redacted the same way)."""
    plain = json.loads(json.dumps(inputs.to_plain(), default=str))
    return json.dumps(redact_data(plain, extra_secrets), indent=2, sort_keys=True)
