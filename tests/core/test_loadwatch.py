"""LoadTracker on real vLLM 0.32 logs and on GPU-style and SGLang lines from docs/DESIGN.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.logs.line import LogLine
from tui.serving.load.tracker import LoadTracker, Phase, vllm_line_time_s

FIXTURES = Path(__file__).parents[1] / "support" / "fixtures" / "vllm-0.32-cpu"
P = "(Worker_TP0 pid=2101) INFO 11-29 10:{mm:02d}:{ss:02d} [file.py:1] "


def _track(path: Path) -> LoadTracker:
    tracker = LoadTracker(year=2026)
    for raw in path.read_text().splitlines():
        tracker.apply(raw)
    return tracker


@pytest.mark.parametrize(
    ("name", "phases"),
    [
        ("server.log", ["starting", "weights", "compile", "kv_cache", "serving", "stopped"]),
        (
            "server_cold_fp32_model.log",
            ["starting", "weights", "compile", "kv_cache", "serving", "stopped"],
        ),
        ("server_warm.log", ["starting", "weights", "compile", "kv_cache", "serving", "stopped"]),
        ("server_eager.log", ["starting", "weights", "kv_cache", "serving", "stopped"]),
    ],
)
def test_real_vllm_logs_phase_order(name: str, phases: list[str]) -> None:
    progress = _track(FIXTURES / name).snapshot()
    assert [span.phase for span in progress.timeline] == phases
    assert (progress.shards_done, progress.shards_total) == (4, 4)
    assert not progress.http_starting  # each log ends with its stop: nothing to poll
    assert progress.failure_line is None  # the eager log's shutdown traceback is not a load failure
    facts = progress.facts
    assert facts.version == "0.32.0" and facts.model == "/models/tiny-llama"
    assert facts.kv_cache_tokens == 2_097_152 and facts.max_concurrency == 4096.0
    assert facts.max_concurrency_tokens == 512
    assert facts.server_url == "http://127.0.0.1:8011"
    # the log's own clock: the compile of a cold start takes seconds, not zero
    durations = {span.phase: span.duration_s for span in progress.timeline}
    assert durations["starting"] > 5


def test_real_log_ready_before_shutdown() -> None:
    tracker = LoadTracker(year=2026)
    lines = (FIXTURES / "server.log").read_text().splitlines()
    for raw in lines:
        tracker.apply(raw)
        if "Application startup complete" in raw:
            break
    progress = tracker.snapshot()
    assert progress.phase == Phase.SERVING and progress.ready
    assert progress.facts.init_engine_s == pytest.approx(18.38)


def test_engine_stats_line_from_real_log() -> None:
    stats = _track(FIXTURES / "server_cold_fp32_model.log").snapshot().engine_stats
    assert stats is not None
    assert (stats.prompt_tokens_per_s, stats.generation_tokens_per_s) == (46.8, 295.6)
    assert (stats.running_reqs, stats.waiting_reqs, stats.kv_cache_usage_pct) == (1, 0, 0.0)


def _gpu_load(tracker: LoadTracker, shards_done: int) -> None:
    tracker.apply(
        "(APIServer pid=2000) INFO 11-29 10:00:00 [api_server.py:1] "
        "vLLM server version 0.33.0, serving model moonshotai/Kimi-K2.5",
        at_s=1e9,
    )
    tracker.apply(P.format(mm=0, ss=30) + "Starting to load model /models/kimi...", at_s=1e9 + 30)
    for k in range(shards_done + 1):
        at = 60.0 + 30.0 * k
        bar = f"Loading safetensors checkpoint shards: {k * 100 // 64:3d}% Completed | {k}/64 [..]"
        tracker.apply(LogLine(text=bar, timestamp_s=1e9 + at))


def test_gpu_style_shards_eta_and_failure() -> None:
    tracker = LoadTracker()
    _gpu_load(tracker, 23)
    now = 1e9 + 60 + 30 * 23
    progress = tracker.snapshot(now_s=now)
    assert progress.phase == Phase.WEIGHTS
    assert (progress.shards_done, progress.shards_total, progress.shard_pct) == (23, 64, 35.0)
    assert progress.eta_source == "shards"
    assert progress.eta_s == pytest.approx(41 * 30, rel=0.01)
    assert progress.facts.model == "moonshotai/Kimi-K2.5"

    tracker.apply(LogLine(text="Traceback (most recent call last):", timestamp_s=now + 1))
    tracker.apply(LogLine(text='  File "loader.py", line 9, in load', timestamp_s=now + 1))
    tracker.apply(LogLine(text="torch.OutOfMemoryError: CUDA out of memory.", timestamp_s=now + 1))
    failed = tracker.snapshot(now_s=now + 2)
    assert failed.phase == Phase.FAILED
    assert failed.failure_line == "torch.OutOfMemoryError: CUDA out of memory."
    assert failed.eta_s is None
    assert [s.phase for s in failed.timeline] == ["starting", "weights", "failed"]


def test_tqdm_carriage_returns_and_older_variant() -> None:
    tracker = LoadTracker()
    tracker.apply("INFO 03-01 09:00:00 [api_server.py:1] vLLM API server version 0.6.3")
    bars = "\r".join(
        f"Loading safetensors checkpoint shards: {k * 25}% Completed | {k}/4 [00:{k:02d}<00:0{4 - k}, 1.0s/it]"
        for k in range(4)
    )
    tracker.apply(bars)
    # read while the load runs (a replay of a log from March is silent now: see test_load_hostile)
    mid = tracker.snapshot(now_s=vllm_line_time_s("03-01 09:00:04 "))
    # the bar's own elapsed clock times the shards (tqdm's remaining says the same)
    assert mid.shards_done == 3 and mid.eta_source in ("shards", "tqdm")
    tracker.apply(
        "INFO 03-01 09:00:09 [model_runner.py:1] Model loading took 14.9888 GiB and 9.123456 seconds"
    )
    tracker.apply("INFO 03-01 09:00:20 [gpu_executor.py:1] # GPU blocks: 1000, # CPU blocks: 100")
    tracker.apply("INFO 03-01 09:00:21 [worker.py:1] Available KV cache memory: 61.5 GiB")
    tracker.apply(
        "INFO 03-01 09:00:22 [model_runner.py:1] Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)"
    )
    tracker.apply(
        "INFO 03-01 09:00:40 [gpu_model_runner.py:1] Graph capturing finished in 18 secs, took 0.55 GiB"
    )
    tracker.apply(
        "INFO 03-01 09:00:41 [api_server.py:1] Starting vLLM API server on http://0.0.0.0:8000"
    )
    progress = tracker.snapshot()
    assert progress.facts.weights_gib == pytest.approx(14.9888)
    assert progress.facts.weights_load_s == pytest.approx(9.123456)
    assert progress.facts.kv_cache_gib == 61.5
    assert (progress.facts.graph_capture_s, progress.facts.graph_capture_gib) == (18.0, 0.55)
    assert progress.phase == Phase.SERVING and progress.http_starting and not progress.ready
    assert [s.phase for s in progress.timeline] == [
        "starting",
        "weights",
        "kv_cache",
        "cuda_graphs",
        "serving",
    ]


def test_sglang_load() -> None:
    tracker = LoadTracker()
    lines = [
        "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=1)",
        "[2026-01-01 10:00:05 TP0] Load weight begin. avail mem=78.50 GB",
        "Loading safetensors checkpoint shards: 100% Completed | 5/5 [00:03<00:00, 1.5it/s]",
        "[2026-01-01 10:00:09 TP0] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=63.2 GB, mem usage=15.3 GB.",
        "[2026-01-01 10:00:10 TP0] KV Cache is allocated. #tokens: 400000, K size: 27 GB, V size: 27 GB",
        "[2026-01-01 10:00:10 TP0] Memory pool end. avail mem=8.1 GB",
        "[2026-01-01 10:00:11 TP0] Capture cuda graph begin. This can take up to several minutes.",
        "[2026-01-01 10:00:30 TP0] Capture cuda graph end. Time elapsed: 19.12 s. mem usage=1.2 GB",
        "[2026-01-01 10:00:35] The server is fired up and ready to roll!",
        "[2026-01-01 10:01:00 TP0] Decode batch. #running-req: 3, #token: 900, token usage: 0.25, gen throughput (token/s): 120.50, #queue-req: 2,",
    ]
    for number, text in enumerate(lines):
        tracker.apply(text, at_s=1e9 + number)
    progress = tracker.snapshot()
    assert progress.facts.engine == "sglang" and progress.facts.model == "Qwen/Qwen3-8B"
    assert [s.phase for s in progress.timeline] == [
        "starting",
        "weights",
        "kv_cache",
        "cuda_graphs",
        "serving",
    ]
    assert progress.ready and progress.facts.kv_cache_tokens == 400000
    assert progress.facts.weights_gib == 15.3 and progress.facts.graph_capture_s == 19.12
    stats = progress.engine_stats
    assert stats is not None and (stats.running_reqs, stats.waiting_reqs) == (3, 2)
    assert stats.kv_cache_usage_pct == 25.0 and stats.generation_tokens_per_s == 120.5


def test_process_exit_during_load_and_memory_eta() -> None:
    tracker = LoadTracker(expected_weights_bytes=100 * 2**30)
    tracker.apply("INFO 11-29 10:00:00 [api_server.py:1] vLLM API server version 0.33.0", at_s=1000)
    tracker.apply(P.format(mm=0, ss=1) + "Starting to load model /m...", at_s=1001)
    for second in range(0, 11):
        tracker.observe_memory(second * 2 * 2**30, at_s=1001 + second)
    progress = tracker.snapshot(now_s=1011)
    assert progress.eta_source == "memory"
    assert progress.eta_s == pytest.approx(40, rel=0.01)  # 80 GiB left at 2 GiB/s
    tracker.observe_exit(1, at_s=1012)
    died = tracker.snapshot(now_s=1013)
    assert died.phase == Phase.FAILED and died.failure_line == "process exited with status 1"


def test_restart_after_stop_begins_a_new_load() -> None:
    tracker = _track(FIXTURES / "server.log")
    assert tracker.snapshot().phase == Phase.STOPPED
    tracker.apply(
        "(APIServer pid=9) INFO 11-29 17:00:00 [api_server.py:1] vLLM server version 0.33.0, serving model m"
    )
    progress = tracker.snapshot()
    assert progress.phase == Phase.STARTING and progress.shards_done is None
    assert [s.phase for s in progress.timeline] == ["starting"]
