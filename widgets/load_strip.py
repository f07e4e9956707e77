"""One or two lines above the log: load phase, shard k/N, a bar, ETA; then live metrics."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tui.loadwatch import LoadProgress
from tui.metrics import ServerMetrics
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


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "--"
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _bar(fraction: float, width: int) -> str:
    filled = round(max(0.0, min(1.0, fraction)) * width)
    return "█" * filled + "░" * (width - filled)


def render_strip(
    progress: LoadProgress | None, metrics: ServerMetrics | None, bar_width: int = 24
) -> Text:
    """The strip's text; a pure function so it can be tested without an app."""
    text = Text()
    if progress is None:
        text.append("no load seen in the log yet", style="dim")
    else:
        phase = progress.phase
        text.append(f" {_PHASE_LABELS.get(phase, phase)} ", style=_PHASE_STYLES.get(phase, "bold"))
        text.append(f" {format_duration(progress.phase_elapsed_s)}")
        if progress.shards_total and phase in ("weights", "starting"):
            done = progress.shards_done or 0
            pct = progress.shard_pct if progress.shard_pct is not None else 0.0
            text.append(f"  shard {done}/{progress.shards_total} ")
            text.append(_bar(pct / 100, bar_width), style="cyan")
            text.append(f" {pct:3.0f}%")
        if progress.eta_s is not None:
            text.append(f"  ETA {format_duration(progress.eta_s)}", style="bold")
        if progress.load_elapsed_s is not None and progress.is_loading:
            text.append(f"  total {format_duration(progress.load_elapsed_s)}", style="dim")
        if phase == "failed" and progress.failure_line:
            text.append(f"  {progress.failure_line}", style="red")
        if phase == "serving":
            text.append("  ready" if progress.ready else "  starting HTTP", style="green")
    if metrics is not None:
        text.append("\n")
        text.append(f" run {_n(metrics.running_reqs)}  wait {_n(metrics.waiting_reqs)}")
        if metrics.kv_cache_usage_pct is not None:
            text.append(f"  KV {metrics.kv_cache_usage_pct:.1f}%")
        if metrics.prompt_tokens_per_s is not None:
            text.append(f"  prefill {metrics.prompt_tokens_per_s:,.0f} tok/s")
        if metrics.generation_tokens_per_s is not None:
            text.append(f"  decode {metrics.generation_tokens_per_s:,.0f} tok/s")
        if metrics.ttft_p50_s is not None:
            text.append(f"  TTFT p50 {metrics.ttft_p50_s * 1000:.0f} ms")
        text.append(f"  ({metrics.source})", style="dim")
    return text


def _n(value: int | None) -> str:
    return "-" if value is None else str(value)


class LoadStrip(Static):
    DEFAULT_CSS = "LoadStrip { height: auto; max-height: 2; }"

    def __init__(self, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.progress: LoadProgress | None = None
        self.metrics: ServerMetrics | None = None

    def show(self, progress: LoadProgress | None, metrics: ServerMetrics | None = None) -> None:
        self.progress = progress
        self.metrics = metrics
        text = render_strip(progress, metrics)
        update_static(self, text)
