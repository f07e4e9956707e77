"""One or two lines above the log: load phase, shard k/N, a bar, ETA; then live metrics."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tui.core.formatting import duration_clock
from tui.serving.disagg import pd_line, pd_warnings, role_from_metrics
from tui.serving.engines import EngineMetrics, idle_engine_warnings
from tui.serving.load.eta import ReadyEstimate
from tui.serving.load.tracker import LoadProgress, silence_note
from tui.serving.lora import lora_line
from tui.serving.metrics import ServerMetrics
from tui.serving.prefix_cache import explain_metrics
from tui.serving.spec_decode import spec_decode_line
from widgets.quiet_update import update_static

_PHASE_LABELS = {
    "starting": "starting",
    "weights": "loading weights",
    "compile": "compiling",
    "kv_cache": "allocating KV cache",
    "cuda_graphs": "capturing CUDA graphs",
    "serving": "serving",
    "failed": "FAILED",
    "stopped": "stopped",
}
_PHASE_STYLES = {"failed": "bold white on red", "serving": "bold green", "stopped": "dim"}


def _bar(fraction: float, width: int) -> str:
    filled = round(max(0.0, min(1.0, fraction)) * width)
    return "█" * filled + "░" * (width - filled)


def render_ready(estimate: ReadyEstimate | None) -> Text:
    """The one answer to "when is it ready", with what it is based on."""
    text = Text()
    if estimate is None:
        return text
    if estimate.remaining_s is None:
        text.append("  ready time unknown until the shards load", style="dim")
        return text
    text.append(f"  ready in about {duration_clock(estimate.remaining_s)}", style="bold")
    if estimate.overdue_phase:
        label = _PHASE_LABELS.get(estimate.overdue_phase, estimate.overdue_phase)
        text.append(f" ({label} longer than usual)", style="yellow")
    else:
        text.append(f" ({estimate.basis})", style="dim")
    return text


def render_strip(
    progress: LoadProgress | None,
    metrics: ServerMetrics | None,
    bar_width: int = 24,
    ready: ReadyEstimate | None = None,
    as_of: str | None = None,
    width: int | None = None,
) -> Text:
    """The strip's text; a pure function so it can be tested without an app.

    The only ETA is `ready`: the weights' own ETA leaves out compile, KV-cache
    profiling and CUDA graphs, and a second, shorter number would contradict it.
    `as_of`: the progress predates the connection (cut): said, and no ready time.
    """
    text = Text()
    if progress is None:
        text.append("no load seen in the log yet", style="dim")
    elif progress.silent_since_s is not None:  # the last phase seen is no state of now
        text.append(f" {silence_note(progress.at_s - progress.silent_since_s)}", style="yellow")
    else:
        phase = progress.phase
        text.append(f" {_PHASE_LABELS.get(phase, phase)} ", style=_PHASE_STYLES.get(phase, "bold"))
        text.append(f" {duration_clock(progress.phase_elapsed_s)}")
        if progress.shards_total and phase in ("weights", "starting"):
            done = progress.shards_done or 0
            pct = progress.shard_pct if progress.shard_pct is not None else 0.0
            text.append(f"  shard {done}/{progress.shards_total} ")
            text.append(_bar(pct / 100, bar_width), style="cyan")
            text.append(f" {pct:3.0f}%")
        if as_of is not None:
            text.append(f"  {as_of}", style="yellow")
        elif progress.is_loading or (phase == "serving" and not progress.ready):
            text.append_text(render_ready(ready))
        if phase == "failed" and progress.failure_line:
            text.append(f"  {progress.failure_line}", style="red")
        if phase == "serving":
            text.append("  ready" if progress.ready else "  starting HTTP", style="green")
    if metrics is not None:
        text.append("\n")
        text.append_text(serving_line(metrics, width))
        if len(metrics.engines) > 1:  # data-parallel: each engine's row under the sum
            role = role_from_metrics(metrics.kv_transfers)
            for engine in metrics.engines:
                text.append("\n")
                text.append_text(_engine_row(engine, role))
            for warning in idle_engine_warnings(metrics.engines):
                text.append(f"\n ⚠ {warning}", style="bold yellow")
        pd = pd_line(None, metrics.kv_transfers)
        if pd is not None:  # the role /metrics shows (status adds the log's kv_role)
            text.append(f"\n {pd}")
            for warning in pd_warnings(None, metrics.kv_transfers, metrics.engines):
                text.append(f"\n ⚠ {warning}", style="bold yellow")
        lora = lora_line(metrics.lora)
        if lora is not None:
            text.append(f"\n {lora}")
        cache = explain_metrics(metrics)
        # A known reason only (unknown stays in status and the handoff: a workload that
        # shares nothing hits 0 % too); off only while prompts arrive.
        arriving = (metrics.prompt_tokens_per_s or 0) > 0
        if cache is not None and cache.reason not in ("unknown", *(() if arriving else ("off",))):
            text.append(f"\n ⓘ {cache.text}", style="yellow")
    return text


def serving_line(metrics: ServerMetrics, width: int | None = None) -> Text:
    """run, wait, KV, token rates, then TTFT and ITL (README promises both: the two an
    operator reads latency by), `?` while unknown, never 0 ms. Where the full line does
    not fit `width` the compact form does, so TTFT and ITL are never wrapped off."""
    m = metrics
    known = {
        "KV": None if m.kv_cache_usage_pct is None else f"{m.kv_cache_usage_pct:.1f}%",
        "prefill": None if m.prompt_tokens_per_s is None else f"{m.prompt_tokens_per_s:,.0f}",
        "decode": None if m.generation_tokens_per_s is None else f"{m.generation_tokens_per_s:,.0f}",
    }  # fmt: skip
    ttft, itl = _ms(m.ttft_p50_s), _ms(m.itl_p50_s)
    spec = spec_decode_line(m.spec_decode)
    full = [f"run {_n(m.running_reqs)}", f"wait {_n(m.waiting_reqs)}"]
    full += [f"KV {known['KV']}"] if known["KV"] else []
    full += [f"prefill {known['prefill']} tok/s"] if known["prefill"] else []
    full += [f"decode {known['decode']} tok/s"] if known["decode"] else []
    full += [f"TTFT p50 {ttft}", f"ITL p50 {itl}", *([spec] if spec else [])]
    source = f"  ({m.source})"
    line = " " + "  ".join(full)
    if width is None or len(line) + len(source) <= width:
        return Text(line).append(source, style="dim")
    compact = [f"run {_n(m.running_reqs)}", f"wait {_n(m.waiting_reqs)}"]
    compact += [f"KV {known['KV']}"] if known["KV"] else []
    rates = [f"{k[:3]} {known[k]}" for k in ("prefill", "decode") if known[k]]
    compact += [" ".join(rates) + " tok/s"] if rates else []
    compact += [f"TTFT {ttft.replace(' ', '')}", f"ITL {itl.replace(' ', '')}"]
    line = " " + " ".join(compact)
    tail = f" {spec}" if spec else ""
    if len(line) + len(tail) + len(source) <= width:
        return Text(line + tail).append(source, style="dim")
    return Text(line + tail) if len(line) + len(tail) <= width else Text(line)


def _ms(seconds: float | None) -> str:
    return "?" if seconds is None else f"{seconds * 1000:.0f} ms"


def _engine_row(engine: EngineMetrics, role: str | None = None) -> Text:
    label = f"engine {engine.engine}" + (f" ({role})" if role else "")
    row = Text(f"   {label}: run {_n(engine.running_reqs)}", style="")
    row.append(f"  wait {_n(engine.waiting_reqs)}")
    kv = engine.kv_cache_usage_pct
    row.append(f"  KV {'n/a' if kv is None else f'{kv:.1f}%'}")
    if engine.generation_tokens_per_s is not None:
        row.append(f"  decode {engine.generation_tokens_per_s:,.0f} tok/s")
    if engine.ttft_p50_s is not None:
        row.append(f"  TTFT p50 {engine.ttft_p50_s * 1000:.0f} ms")
    if engine.itl_p50_s is not None:
        row.append(f"  ITL p50 {engine.itl_p50_s * 1000:.0f} ms")
    if engine.idle:
        row.stylize("yellow")
    return row


def _n(value: int | None) -> str:
    return "n/a" if value is None else str(value)  # NaN/Inf from /metrics arrive as None


class LoadStrip(Static):
    # Two lines, plus one per engine and one per warning of a data-parallel deployment.
    DEFAULT_CSS = "LoadStrip { height: auto; max-height: 12; }"

    def __init__(self, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.progress: LoadProgress | None = None
        self.metrics: ServerMetrics | None = None
        self.ready: ReadyEstimate | None = None
        # No unit and no log to follow (plain `servedeck`): there is no load to show, and
        # "stopped 0:00" would state a service that does not exist. Metrics still show.
        self.nothing_to_follow = False
        self._said: tuple[str | None, str | None] = (None, None)  # show()'s unknown, as_of

    def on_resize(self) -> None:
        """The serving line's form follows the width (compact where the full one wraps)."""
        # After this layout pass: a height changed inside it is not laid out again.
        self.call_after_refresh(self.show, self.progress, self.metrics, self.ready, *self._said)

    def show(
        self,
        progress: LoadProgress | None,
        metrics: ServerMetrics | None = None,
        ready: ReadyEstimate | None = None,
        unknown: str | None = None,
        as_of: str | None = None,
    ) -> None:
        """`unknown`: the service state cannot be read; say so instead of a guessed "stopped".

        `as_of`: the progress is what the log said before the connection was cut.
        """
        self.progress = progress
        self.metrics = metrics
        self.ready = ready
        self._said = (unknown, as_of)
        self.display = not (self.nothing_to_follow and metrics is None)
        if unknown and (progress is None or progress.phase == "stopped"):
            update_static(self, Text(f" service {unknown}", style="yellow"))
            return
        # 80 columns hold the phase, shard count, a short bar and the ready time on one line.
        bar_width = max(6, min(24, self.size.width - 70)) if self.size.width else 24
        width = self.size.width or None
        update_static(self, render_strip(progress, metrics, bar_width, ready, as_of, width))
