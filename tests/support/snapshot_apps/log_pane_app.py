"""A small app hosting the load strip and log pane, for tests and snapshots."""

from __future__ import annotations

from textual.app import App, ComposeResult

from tui.logs.classify import LevelClassifier
from tui.logs.line import LogLine
from tui.serving.load.tracker import LoadProgress, LoadTracker
from tui.serving.metrics import ServerMetrics
from widgets.load_strip import LoadStrip
from widgets.log_pane import LogPane

T0 = 1_800_000_000.0
PREFIX = "(Worker_TP0 pid=2101) INFO 11-29 10:00:00 [default_loader.py:1] "


def scenario(name: str) -> tuple[list[str], LoadProgress, ServerMetrics | None]:
    """Log lines and the snapshot for: loading (shard 23/64), serving, failed."""
    tracker = LoadTracker()
    lines = [
        "(APIServer pid=2000) INFO 11-29 10:00:00 [api_server.py:1] "
        "vLLM server version 0.33.0, serving model moonshotai/Kimi-K2.5",
        PREFIX + "Starting to load model /models/kimi-k2.5-int4...",
    ]
    times = [T0, T0 + 30]
    shards = 23 if name == "loading" else 64
    for k in range(shards + 1):
        lines.append(
            f"Loading safetensors checkpoint shards: {k * 100 // 64:3d}% Completed | {k}/64 [..]"
        )
        times.append(T0 + 60 + 28 * k)
    end = times[-1]
    metrics = None
    if name == "serving":
        tail = [
            PREFIX + "Model loading took 68.4 GiB memory and 1795.2 seconds",
            PREFIX + "Available KV cache memory: 14.20 GiB",
            PREFIX + "GPU KV cache size: 217,056 tokens",
            PREFIX + "Graph capturing finished in 41 secs, took 1.12 GiB",
            "(APIServer pid=2000) INFO 11-29 10:32:00 [api_server.py:1] "
            "Starting vLLM server on http://0.0.0.0:8000",
            "INFO:     Application startup complete.",
            "(APIServer pid=2000) WARNING 11-29 10:33:00 [serving.py:1] slow client",
        ]
        metrics = ServerMetrics(
            3, 1, 12.5, 850.0, 82.0, 0, 0, 0.21, 0.4, 0.9, 0.012, 0.015, 0.03, 10.0, "metrics", end
        )
    elif name == "failed":
        tail = [
            "Traceback (most recent call last):",
            '  File "/opt/vllm/model_executor/model_loader.py", line 42, in load_weights',
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        ]
    else:
        tail = []
    for offset, text in enumerate(tail, start=1):
        lines.append(text)
        times.append(end + offset)
    for text, at in zip(lines, times, strict=True):
        tracker.apply(text, at_s=at)
    return lines, tracker.snapshot(now_s=times[-1] + 5), metrics


class LogPaneApp(App[None]):
    def __init__(self, name: str = "loading", max_lines: int = 50_000) -> None:
        super().__init__()
        self.scenario_name = name
        self.max_lines = max_lines

    def compose(self) -> ComposeResult:
        yield LoadStrip(id="strip")
        yield LogPane(max_lines=self.max_lines, id="pane")

    def on_mount(self) -> None:
        texts, progress, metrics = scenario(self.scenario_name)
        classifier = LevelClassifier()
        pane = self.query_one(LogPane)
        pane.add_lines(
            LogLine(text=t, timestamp_s=T0 + i, level=classifier.classify(t))
            for i, t in enumerate(texts)
        )
        pane.flush()
        self.query_one(LoadStrip).show(progress, metrics)
