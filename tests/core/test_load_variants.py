"""Load progress on real-world variants of vLLM's log (issue 16): file sources, the
multi-thread loader, a CUDA OOM across ranks, and warnings that only mention an error.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tui.logs.classify import LevelClassifier
from tui.logs.line import LogLine
from tui.logs.tail import FileFollower
from tui.serving.load.tracker import LoadTracker, Phase

PREFIX = "(APIServer pid=2000) INFO 11-29 10:{mm:02d}:{ss:02d} [api_server.py:1] "


def _bar(k: int, total: int = 64, per_shard_s: float = 9.84375, label: str = "") -> str:
    label = label or "Loading safetensors checkpoint shards"
    elapsed = round(k * per_shard_s)
    left = round((total - k) * per_shard_s)
    pct = k * 100 // total
    return (
        f"(Worker_TP0 pid=2100) {label}: {pct:3d}% Completed | {k}/{total} "
        f"[{elapsed // 60:02d}:{elapsed % 60:02d}<{left // 60:02d}:{left % 60:02d}, "
        f"{per_shard_s:.2f}s/it]"
    )


def _load_head() -> list[str]:
    return [
        PREFIX.format(mm=0, ss=0) + "vLLM server version 0.33.0, serving model moonshotai/Kimi",
        PREFIX.format(mm=0, ss=30) + "Starting to load model /models/kimi...",
    ]


async def _file_tracker(path: Path) -> LoadTracker:
    tracker = LoadTracker()
    async for line in FileFollower(str(path), initial_lines=500, follow=False).lines():
        tracker.apply(line)
    return tracker


def _stamped_head(weights_at_s: float) -> list[str]:
    """_load_head logged in this time zone, the weights starting at `weights_at_s`."""
    head = []
    for line, at_s in zip(_load_head(), (weights_at_s - 30, weights_at_s), strict=True):
        stamp = time.strftime("%m-%d %H:%M:%S", time.localtime(at_s))
        head.append(line.replace("11-29 10:00:00", stamp).replace("11-29 10:00:30", stamp))
    return head


@pytest.mark.parametrize("separator", ["\n", "\r"])
async def test_log_file_eta_at_half_way_is_not_zero(tmp_path: Path, separator: str) -> None:
    """32/64 shards at ~9.8 s each, the file read at once as the 32nd is printed: the file
    source must say ~315 s, as the journal does (the bars state no time: tqdm's elapsed
    from the weights phase's logged start times them)."""
    path = tmp_path / "vllm.log"
    bars = separator.join(_bar(k) for k in range(33))
    path.write_text("\n".join([*_stamped_head(time.time() - 315), bars]) + "\n")
    progress = (await _file_tracker(path)).snapshot(now_s=time.time())
    assert progress.phase == Phase.WEIGHTS
    assert (progress.shards_done, progress.shards_total) == (32, 64)
    assert progress.eta_s is not None
    assert progress.eta_s == pytest.approx(315, abs=30)


def test_multi_thread_loading_shards_are_recognised() -> None:
    tracker = LoadTracker()
    for line in _load_head():
        tracker.apply(line, at_s=1e9)
    for k in range(0, 11):
        bar = _bar(k, total=20, per_shard_s=2.0, label="Multi-thread loading shards")
        tracker.apply(bar, at_s=1e9 + 2 * k)
    progress = tracker.snapshot(now_s=1e9 + 20)
    assert progress.phase == Phase.WEIGHTS
    assert (progress.shards_done, progress.shards_total) == (10, 20)
    assert progress.eta_s == pytest.approx(20, abs=5)


def _rank_oom(rank: int, ss: int) -> list[str]:
    p = f"(Worker_TP{rank} pid={2100 + rank}) ERROR 11-29 10:05:{ss:02d} [multiproc_executor.py:585] "
    return [
        p + "WorkerProc failed to start.",
        p + "Traceback (most recent call last):",
        p + '  File "/venv/vllm/v1/executor/multiproc_executor.py", line 559, in worker_main',
        p + "    worker = WorkerProc(*args, **kwargs)",
        p + '  File "/venv/torch/nn/modules/module.py", line 1355, in convert',
        p + "    return t.to(device)",
        p + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
        f"GPU {rank} has a total capacity of 94.97 GiB of which 1.12 GiB is free.",
    ]


OOM_TAIL = [
    "(EngineCore_DP0 pid=2050) ERROR 11-29 10:05:09 [core.py:708] EngineCore failed to start.",
    "(EngineCore_DP0 pid=2050) ERROR 11-29 10:05:09 [core.py:708] Traceback (most recent call last):",
    '(EngineCore_DP0 pid=2050) ERROR 11-29 10:05:09 [core.py:708]   File "core.py", line 699, in run',
    "(EngineCore_DP0 pid=2050) ERROR 11-29 10:05:09 [core.py:708] Exception: WorkerProc "
    "initialization failed due to an exception in a background process. See stack trace for "
    "root cause.",
    "Traceback (most recent call last):",
    '  File "/venv/bin/vllm", line 10, in <module>',
    "    sys.exit(main())",
    "RuntimeError: Engine core initialization failed. See root cause above. "
    "Failed core proc(s): {}",
]


def test_cuda_oom_across_ranks_reports_the_root_cause_with_its_rank() -> None:
    tracker = LoadTracker()
    for line in _load_head():
        tracker.apply(line)
    for k in range(5):
        tracker.apply(_bar(k))
    for line in _rank_oom(3, 7) + _rank_oom(1, 8) + OOM_TAIL:
        tracker.apply(line)
    progress = tracker.snapshot()
    assert progress.phase == Phase.FAILED
    assert progress.failure_line is not None
    assert progress.failure_line.startswith("(Worker_TP3) torch.OutOfMemoryError: CUDA out of")
    assert "Engine core initialization failed" not in progress.failure_line


def test_torch_distributed_rank_prefix_is_kept() -> None:
    tracker = LoadTracker()
    for line in _load_head():
        tracker.apply(line)
    tracker.apply("[rank2]: Traceback (most recent call last):")
    tracker.apply('[rank2]:   File "x.py", line 1, in f')
    tracker.apply("[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB")
    tracker.apply("RuntimeError: Engine core initialization failed. See root cause above.")
    progress = tracker.snapshot()
    assert progress.failure_line == (
        "(rank2) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB"
    )


@pytest.mark.parametrize(
    "warning",
    [
        "(APIServer pid=2000) WARNING 11-29 10:01:00 [utils.py:1] Retrying after "
        "RuntimeError: NCCL busy, this is harmless",
        "WARNING 11-29 10:01:00 [config.py:2] ValueError: in a message about a fallback",
        "(Worker_TP0 pid=2100) INFO 11-29 10:01:00 [x.py:3] caught RuntimeError: retrying",
        "/venv/torch/cuda/__init__.py:9: UserWarning: after RuntimeError: CUDA out of memory",
    ],
)
def test_a_warning_mentioning_an_error_is_not_a_failure(warning: str) -> None:
    tracker = LoadTracker()
    for line in _load_head():
        tracker.apply(line)
    tracker.apply(_bar(3))
    tracker.apply(
        LogLine(warning, level=LevelClassifier().classify(warning))
    )  # as every follower gives it
    tracker.apply(_bar(4))
    progress = tracker.snapshot()
    assert progress.phase == Phase.WEIGHTS
    assert progress.failure_line is None


def test_a_journal_warning_priority_line_is_not_a_failure() -> None:
    from tui.logs.line import Level

    tracker = LoadTracker()
    for line in _load_head():
        tracker.apply(line)
    tracker.apply(
        LogLine("retry after RuntimeError: NCCL timeout", level=Level.WARNING, priority=4)
    )
    assert tracker.snapshot().phase == Phase.WEIGHTS


def test_a_bare_fatal_line_still_fails_the_load() -> None:
    tracker = LoadTracker()
    for line in _load_head():
        tracker.apply(line)
    tracker.apply("Killed")
    assert tracker.snapshot().phase == Phase.FAILED
