"""The progress verdict: each stall kind, and the cases that must never read as a stall."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.core.config import load_profile_file
from tui.core.errors import ServedeckError
from tui.serving.progress.judge import ProgressJudge
from tui.serving.progress.logwords import request_lines, stall_lines
from tui.serving.progress.model import ProgressInputs, ProgressVerdict, RankReading, RankSample
from tui.serving.progress.watch import ProgressWatch

N_S = 30.0


def ranks(
    *states: str, wchan: str | None = None, cpu: int = 0, root_alive: bool = True
) -> RankReading:
    names = ["VLLM::EngineCore", *(f"VLLM::Worker_TP{i}" for i in range(len(states) - 1))]
    return RankReading(
        root_pid=100,
        root_alive=root_alive,
        ranks=tuple(
            RankSample(pid=200 + i, name=names[i], state=state, cpu_ticks=cpu, wchan=wchan)
            for i, state in enumerate(states)
        ),
    )


def tick(
    at_s: float,
    *,
    running: int | None = 4,
    waiting: int | None = 0,
    gen: float | None = 0.0,
    prompt: float | None = 0.0,
    util: tuple[float, ...] = (50.0, 50.0),
    reading: RankReading | None = None,
    **extra: object,
) -> ProgressInputs:
    return ProgressInputs(
        at_s=at_s,
        running_reqs=running,
        waiting_reqs=waiting,
        generation_tokens_per_s=gen,
        prompt_tokens_per_s=prompt,
        gpu_utilization_pct=util,
        gpu_power_w=tuple(300.0 for _ in util),
        ranks=reading,
        **extra,  # type: ignore[arg-type]
    )


def run(judge: ProgressJudge, frames: list[ProgressInputs]):  # type: ignore[no-untyped-def]
    verdict = None
    for frame in frames:
        verdict = judge.update(frame)
    assert verdict is not None
    return verdict


def stalled_after(**kwargs: object):  # type: ignore[no-untyped-def]
    """Serving at t=0, then no token for N+2 s with the given signals."""
    judge = ProgressJudge(N_S)
    judge.update(tick(0.0, gen=500.0, reading=kwargs.get("reading")))  # type: ignore[arg-type]
    return run(judge, [tick(t, **kwargs) for t in (10.0, 20.0, N_S + 2)])  # type: ignore[arg-type]


def test_serving_then_stalled_since_the_last_token() -> None:
    verdict = stalled_after()
    assert verdict.state == "stalled"
    assert verdict.since_s == 0.0  # the stall began at the last token
    assert verdict.as_dict()["since_s"] == N_S + 2
    assert "no generated token for 32 s" in verdict.evidence[0]


def test_not_stalled_before_n_seconds() -> None:
    judge = ProgressJudge(N_S)
    judge.update(tick(0.0, gen=500.0))
    assert judge.update(tick(N_S - 1)).state == "serving"


def test_rank_stopped() -> None:
    verdict = stalled_after(reading=ranks("S", "R", "T"), util=(100.0, 100.0))
    assert verdict.kind == "rank_stopped"
    assert verdict.kind_text == "a rank stopped"
    assert any("Worker_TP1 (pid 202) stopped: state T" in line for line in verdict.evidence)


def test_rank_zombie_or_gone() -> None:
    assert stalled_after(reading=ranks("S", "R", "Z")).kind == "rank_dead"
    judge = ProgressJudge(N_S)
    judge.update(tick(0.0, gen=500.0, reading=ranks("S", "R", "R")))
    gone = run(judge, [tick(N_S + 1, reading=ranks("S", "R"))])  # Worker_TP1 left
    assert gone.kind == "rank_dead"
    assert "Worker_TP1 (pid 202) gone" in gone.evidence


def test_rank_blocked_in_the_kernel() -> None:
    verdict = stalled_after(reading=ranks("S", "D", wchan="nvidia_wait"))
    assert verdict.kind == "rank_blocked"
    assert any("wchan nvidia_wait" in line for line in verdict.evidence)


def test_gpus_busy_with_no_tokens() -> None:
    verdict = stalled_after(util=(100.0, 99.0), reading=ranks("R", "R", "R"))
    assert verdict.kind == "gpu_spin"
    assert "GPU utilization 100 % over 2 GPUs" in verdict.evidence[1]


def test_gpus_idle_with_requests_queued() -> None:
    verdict = stalled_after(util=(0.0, 1.0), waiting=6)
    assert verdict.kind == "cpu_block"
    assert "6 waiting" in verdict.evidence[0]


def test_the_logs_words_and_engine_healthy() -> None:
    judge = ProgressJudge(N_S)
    judge.update(tick(0.0, gen=500.0))
    judge.feed_log(
        stall_lines(["INFO ok", "[Rank 3] Watchdog caught collective operation timeout: ..."])
    )
    verdict = judge.update(tick(N_S + 1, util=(100.0,)))
    assert verdict.kind == "log"
    assert any("collective operation timeout" in line for line in verdict.evidence)
    assert stalled_after(engine_healthy=0.0).kind == "log"


def test_log_words_are_forgotten_once_tokens_move() -> None:
    judge = ProgressJudge(N_S)
    judge.feed_log(["RPC call to execute_model timed out."])
    judge.update(tick(0.0, gen=500.0))
    assert judge.update(tick(N_S + 1, util=(100.0,))).kind == "gpu_spin"


@pytest.mark.parametrize(
    "text",
    [
        "ERROR EngineCore encountered a fatal error.",
        "RPC call to execute_model timed out.",
        "No available shared memory broadcast block found in 60 seconds.",
    ],
)
def test_stall_words(text: str) -> None:
    assert stall_lines(["INFO fine", text]) == [text]
    assert stall_lines(["INFO fine", "Avg generation throughput: 12 tokens/s"]) == []


def test_unknown_kind_without_signals() -> None:
    verdict = stalled_after(util=())
    assert verdict.kind == "unknown"
    assert "GPU utilization unknown" in verdict.evidence


def test_recovers_to_serving() -> None:
    judge = ProgressJudge(N_S)
    judge.update(tick(0.0, gen=500.0))
    assert judge.update(tick(N_S + 1)).state == "stalled"
    back = judge.update(tick(N_S + 3, gen=200.0))
    assert back.state == "serving"
    assert back.since_s == N_S + 3


# -- a stopped EngineCore: its gauges froze with it -----------------------------------


def test_a_core_stopped_between_steps_with_work_under_way_is_stalled() -> None:
    """Real vLLM 0.32: the core stopped just after a step that finished its requests, so the
    gauges froze at 0 while the API server held four requests; the token delta of the first
    reading after the stop still spans the last step."""
    judge = ProgressJudge(N_S)
    judge.update(tick(0.0, running=2, gen=500.0, reading=ranks("S")))
    judge.update(tick(1.0, running=0, gen=41.0, reading=ranks("T")))
    frames = [tick(t, running=0, gen=0.0, reading=ranks("T")) for t in (2.0, 10.0, N_S + 2)]
    verdict = run(judge, frames)
    assert verdict.state == "stalled", verdict
    assert verdict.kind == "rank_stopped"
    assert verdict.since_s == 1.0  # the last token
    assert "EngineCore (pid 200) stopped: state T" in verdict.evidence[1]
    assert "work under way when a rank stopped" in verdict.evidence[0]


def test_work_in_the_reading_before_the_stop_counts() -> None:
    judge = ProgressJudge(N_S)
    judge.update(tick(0.0, running=3, gen=0.0, prompt=900.0, reading=ranks("R")))
    verdict = run(judge, [tick(t, running=0, reading=ranks("T")) for t in (2.0, N_S + 3)])
    assert (verdict.state, verdict.kind) == ("stalled", "rank_stopped")


def test_a_core_stopped_while_idle_reads_unknown_then_idle_when_continued() -> None:
    """Nothing ran at the stop: nothing is known to wait, yet a stopped core is no idle engine."""
    judge = ProgressJudge(N_S)
    run(judge, [tick(t, running=0, reading=ranks("S")) for t in (0.0, 2.0)])
    stopped = run(judge, [tick(t, running=0, reading=ranks("T")) for t in (4.0, 60.0, 600.0)])
    assert stopped.state == "unknown", stopped
    assert stopped.kind is None
    assert "EngineCore (pid 200) stopped: state T" in stopped.evidence[0]
    assert "a request sent now would wait" in stopped.evidence[1]
    assert judge.update(tick(602.0, running=0, reading=ranks("S"))).state == "idle"


# uvicorn's access lines as vLLM 0.32's API server writes them (tests/support's captures).
STREAM_LINE = 'INFO:     127.0.0.1:59636 - "POST /v1/completions HTTP/1.1" 200 OK'


def test_request_lines_are_generation_requests_answered_200() -> None:
    assert request_lines([STREAM_LINE, STREAM_LINE.replace("completions", "chat/completions")]) == 2
    assert request_lines(['INFO:     127.0.0.1:1 - "POST /v1/responses HTTP/1.1" 200 OK']) == 1
    assert request_lines(['INFO:     127.0.0.1:1 - "GET /v1/models HTTP/1.1" 200 OK']) == 0
    assert request_lines(['INFO:     127.0.0.1:1 - "POST /v1/completions HTTP/1.1" 400 Bad']) == 0
    assert request_lines(["(APIServer pid=1) INFO [launcher.py:195] Route: /v1/completions"]) == 0


def test_streams_begun_at_a_core_stopped_while_idle_are_a_stall() -> None:
    """A stream's access line is written with its headers, before its first token: requests
    the stopped core will never answer, though its frozen gauges say 0."""
    watch = ProgressWatch(N_S)
    judge = watch.judge
    run(judge, [tick(t, running=0, reading=ranks("S")) for t in (0.0, 2.0)])
    assert judge.update(tick(4.0, running=0, reading=ranks("T"))).state == "unknown"
    watch.feed_log(["INFO: Avg generation throughput: 0.0 tokens/s", STREAM_LINE, STREAM_LINE])
    waiting = judge.update(tick(6.0, running=0, reading=ranks("T")))
    assert waiting.state == "serving"  # in flight, not yet overdue
    frames = [tick(t, running=0, reading=ranks("T")) for t in (20.0, 4.0 + N_S + 1)]
    verdict = run(judge, frames)
    assert (verdict.state, verdict.kind) == ("stalled", "rank_stopped"), verdict
    assert verdict.since_s == 4.0  # the last reading with nothing known to wait
    assert "the log shows 2 requests since" in verdict.evidence[0]


def test_the_last_requests_tail_then_a_stop_is_no_stall() -> None:
    """Found on the real engine: the reading that saw the gauges fall to 0 still counted the
    last requests' tokens; a core stopped after it had nothing to do."""
    judge = ProgressJudge(N_S)
    judge.update(tick(0.0, running=4, gen=500.0, reading=ranks("R")))
    tail = judge.update(tick(1.0, running=0, gen=300.0, reading=ranks("S")))
    assert tail.state == "serving"  # tokens moved in the interval: they were served
    assert judge.update(tick(2.0, running=0, gen=0.0, reading=ranks("S"))).state == "idle"
    frames = [tick(t, running=0, reading=ranks("T")) for t in (3.0, 10.0, N_S + 5)]
    assert run(judge, frames).state == "unknown"
    judge = ProgressJudge(N_S)
    judge.update(tick(0.0, running=4, gen=500.0, reading=ranks("R")))
    judge.update(tick(1.0, running=0, gen=300.0, reading=ranks("S")))  # the tail, then the stop
    frames = [tick(t, running=0, reading=ranks("T")) for t in (2.0, 10.0, N_S + 5)]
    assert run(judge, frames).state == "unknown"


# vLLM 0.32 CPU, test_real_vllm_stall.py's Worker variant beside two CPU burners on two cores,
# four streams of 128 tokens always in flight (every one ended 200 with 128 tokens): each
# reading's (seconds, running, waiting, generated tok/s, Worker's state) as /metrics and /proc
# gave them. The gauges read 0 at 11 of 12 scrapes before the stop and 7 of 8 after SIGCONT.
RECORDED_WORKER_STOP: list[tuple[float, int, int, float, str]] = [
    (142.4, 0, 0, 594.9, "S"),
    (149.0, 0, 0, 269.1, "S"),
    (153.5, 0, 0, 328.9, "S"),
    (158.1, 0, 0, 341.0, "S"),
    (161.7, 0, 0, 330.3, "S"),
    (171.0, 0, 0, 359.4, "S"),
    (173.5, 0, 0, 468.2, "S"),
    (176.1, 0, 0, 583.1, "S"),
    (181.1, 0, 0, 299.7, "S"),
    (186.4, 0, 0, 277.3, "S"),
    (187.5, 4, 0, 738.6, "S"),
    (188.7, 0, 0, 780.8, "T"),  # SIGSTOP at 188.6; the log showed 4 access lines
    (189.8, 0, 0, 0.0, "T"),
    (190.9, 0, 0, 0.0, "T"),
    (191.9, 0, 0, 0.0, "T"),
    (192.9, 0, 0, 0.0, "T"),
    (194.0, 0, 0, 0.0, "T"),  # SIGCONT at 194.1
    (195.0, 0, 0, 0.0, "S"),
    (199.3, 0, 0, 332.5, "S"),
    (202.8, 0, 0, 402.7, "S"),
    (207.2, 0, 0, 330.6, "S"),
    (211.5, 0, 0, 417.8, "S"),
    (216.0, 0, 0, 336.5, "S"),
    (220.4, 0, 0, 375.2, "S"),
    (225.4, 1, 0, 388.3, "S"),
    (226.2, 0, 0, 684.6, "S"),  # the streams' last tokens
    (227.2, 0, 0, 0.0, "S"),
]


# The access lines each reading read from the server's log (the streams begun meanwhile).
RECORDED_ACCESS_LINES = {188.7: 4, 189.8: 4}


def replay_worker_stop(drop: tuple[float, ...] = ()) -> list[tuple[float, ProgressVerdict]]:
    """The recording (less the readings at `drop`) through a ProgressWatch, as the console
    feeds it: the log's new lines, then the reading."""
    watch = ProgressWatch(5.0)  # the real test's stall_after_s
    seen = []
    for at_s, running, waiting, gen, worker in RECORDED_WORKER_STOP:
        if at_s in drop:
            continue
        watch.feed_log([STREAM_LINE] * RECORDED_ACCESS_LINES.get(at_s, 0))
        reading = ranks("S", worker)
        verdict = watch.judge.update(
            tick(at_s, running=running, waiting=waiting, gen=gen, reading=reading)
        )
        seen.append((at_s, verdict))
    return seen


def test_tokens_advancing_at_a_zero_gauge_read_serving_never_idle() -> None:
    """Recorded: after SIGCONT the gauges read 0 while 330-420 tok/s were generated, and the
    verdict said `idle` until a scrape happened to catch a step (31 s here, over 60 s under
    the whole suite). A reading whose interval generated tokens is `serving`."""
    seen = replay_worker_stop()
    states = {at_s: verdict.state for at_s, verdict in seen}
    generated = {row[0]: row[3] for row in RECORDED_WORKER_STOP}
    assert all(states[at_s] != "idle" for at_s in states if generated[at_s] > 0), seen
    assert states[142.4] == "serving"
    assert (seen[16][1].state, seen[16][1].kind) == ("stalled", "rank_stopped")  # 194.0
    # SIGCONT: the API server wrote the streams' ends before its counters moved; that scrape
    # read no token and 0 running (no rank stopped: the gauges are live again).
    assert states[195.0] == "idle"
    assert states[199.3] == "serving"  # the first reading after SIGCONT whose tokens moved
    assert states[227.2] == "idle"  # the streams ended: nothing running, no token


def test_a_stop_after_readings_served_on_tokens_alone_is_a_stall() -> None:
    """Under load every reading before the stop may be tokens at 0 running (drop the one that
    read 4): the streams begun during the stop, in the log, say work was under way."""
    seen = replay_worker_stop(drop=(187.5,))
    stalled = [(at_s, verdict) for at_s, verdict in seen if verdict.state == "stalled"]
    assert stalled, seen
    at_s, verdict = stalled[0]
    assert at_s - 188.6 <= 5.0 + 5.0  # within stall_after_s + 5 s of the SIGSTOP
    assert verdict.kind == "rank_stopped"
    assert "the log shows 4 requests since" in verdict.evidence[0]


reading_states = st.sampled_from(["R", "S", "T", "D"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 4),
            st.integers(0, 3),
            st.sampled_from([0.0, 0.0, 30.0]),
            st.lists(reading_states, min_size=1, max_size=3),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_a_stopped_rank_never_reads_idle(
    frames: list[tuple[int, int, float, list[str]]],
) -> None:
    """Whatever its frozen gauges say, an engine with a stopped rank is never `idle`: as in
    vLLM, the counts stay what they were at the stop until no rank is stopped."""
    judge = ProgressJudge(N_S)
    frozen: tuple[int, int] | None = None
    for index, (running, waiting, gen, states) in enumerate(frames):
        if "T" in states:
            frozen = frozen or (running, waiting)
            running, waiting = frozen
        else:
            frozen = None
        verdict = judge.update(
            tick(index * 3.0, running=running, waiting=waiting, gen=gen, reading=ranks(*states))
        )
        if "T" in states:
            assert verdict.state != "idle", (index, verdict)
            if verdict.state == "stalled":
                assert verdict.kind == "rank_stopped"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 4),
            st.integers(0, 3),
            st.sampled_from([0.0, 0.0, 41.0, 500.0]),
            st.sampled_from([0.0, 0.0, 900.0]),
            st.lists(reading_states, min_size=1, max_size=3),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_a_reading_whose_tokens_moved_never_reads_idle(
    frames: list[tuple[int, int, float, float, list[str]]],
) -> None:
    """The gauges are the instant of the scrape, the token counters the whole interval: tokens
    generated or prompts computed since the last scrape were served, whatever the gauges say."""
    judge = ProgressJudge(N_S)
    for index, (running, waiting, gen, prompt, states) in enumerate(frames):
        verdict = judge.update(
            tick(
                index * 3.0,
                running=running,
                waiting=waiting,
                gen=gen,
                prompt=prompt,
                reading=ranks(*states),
            )
        )
        if gen > 0 or prompt > 0:
            assert verdict.state != "idle", (index, verdict)


def test_counts_that_move_while_a_rank_is_stopped_are_live() -> None:
    """The simulator's server (or an engine whose stats outlive a rank) keeps counting: a
    request cancelled while a rank is stopped leaves it idle."""
    judge = ProgressJudge(N_S)
    judge.update(tick(0.0, running=0, reading=ranks("S", "S")))
    run(judge, [tick(t, running=1, reading=ranks("S", "T")) for t in (2.0, 10.0)])
    assert judge.update(tick(12.0, running=0, reading=ranks("S", "T"))).state == "idle"


# -- never a false stall --------------------------------------------------------------


def test_long_prefill_is_not_a_stall() -> None:
    """Tokens flat but prompt tokens advancing: a long prompt is being computed."""
    judge = ProgressJudge(N_S)
    verdict = run(judge, [tick(t, gen=0.0, prompt=4000.0) for t in range(0, 120, 2)])
    assert verdict.state == "serving"


def test_a_request_in_prefill_under_n_seconds_is_not_a_stall() -> None:
    judge = ProgressJudge(N_S)
    judge.update(tick(0.0, running=0, waiting=0))
    verdict = run(judge, [tick(t, running=1, prompt=0.0) for t in (2.0, 10.0, N_S - 0.5)])
    assert verdict.state == "serving"


def test_a_load_in_progress_is_not_a_stall() -> None:
    judge = ProgressJudge(N_S)
    frames = [
        tick(t, running=None, waiting=None, gen=None, loading=True) for t in range(0, 1800, 60)
    ]
    frames += [tick(1800.0 + t, running=2, loading=True) for t in range(0, 120, 10)]
    assert run(judge, frames).state == "unknown"
    assert "loading" in judge.update(tick(1950.0, loading=True)).evidence[0]


def test_an_idle_server_and_a_client_that_stopped_sending() -> None:
    judge = ProgressJudge(N_S)
    judge.update(tick(0.0, gen=500.0))
    verdict = run(judge, [tick(t, running=0, waiting=0) for t in range(2, 300, 2)])
    assert verdict.state == "idle"
    assert verdict.kind is None


def test_a_benchmark_warmup_is_not_a_stall() -> None:
    judge = ProgressJudge(N_S)
    verdict = run(judge, [tick(t, warmup=True) for t in range(0, 90, 5)])
    assert verdict.state == "unknown"
    assert verdict.evidence == ("a benchmark's warm-up runs",)


def test_first_scrape_is_unknown_not_a_guess() -> None:
    assert ProgressJudge(N_S).update(tick(0.0, gen=None)).state == "unknown"


def test_stall_after_s_in_the_profile(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text("[service]\nstall_after_s = 12\n")
    assert load_profile_file(path).service.stall_after_s == 12
    path.write_text("")
    assert load_profile_file(path).service.stall_after_s == 30.0
    path.write_text("[service]\nstall_after_s = 'soon'\n")
    with pytest.raises(ServedeckError, match=r"service\.stall_after_s: expected a number from 2"):
        load_profile_file(path)
