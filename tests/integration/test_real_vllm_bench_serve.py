"""servedeck's benchmark against `vllm bench serve` on the same real vLLM server and workload.

Both clients send byte-identical prompts (tests/support/vllm_bench_serve.py), the same
output length with ignore_eos, closed loop at concurrency 4, one warm-up each. They
run in four rounds, alternating which goes first (a client that always follows
the other would always meet the server in the state the other left it). The
server's API process has a core of its own (tests/support/vllm_affinity.py);
without it a run of either client often falls into a mode where the server
writes whole streams at once, and the clients cannot be compared.

What is asserted:
- the same workload to the token: every run of both clients counts the same
  prompt and output tokens;
- every run streamed (no run of either client read in the burst mode);
- neither client reads its clock too early: each run's mean TTFT and mean E2EL
  are at least the server's own (its /metrics histograms over the same run,
  within 10 %: the warm-ups are in the server's window, not the client's);
- within 2 % (or the two clients' run-to-run spread when wider, as below): each
  client's figures with the server's speed taken out (`paired_agreement`: mean
  E2EL over the server's mean E2E for the same run, and slot occupancy, request
  throughput x mean E2EL / concurrency). The server's own speed moves +-8 %
  between runs on two shared cores, the same for both clients; these figures
  do not move with it;
- output throughput, request throughput and mean E2EL: servedeck's median of
  runs within 2 % of vLLM's, or within the two clients' run-to-run spread when
  that is wider (tests/support/vllm_bench_serve.agreement).

Median and mean TTFT, median TPOT and median ITL are printed with the same band.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.support.vllm_affinity import frontend_apart
from tests.support.vllm_bench_serve import (
    COMPARED,
    PAIRED,
    Figures,
    agreement,
    client_env,
    delivery,
    paired_agreement,
    run_servedeck,
    run_vllm_bench,
    servedeck_prompts,
    server_account,
    server_latency_totals,
    side_spec,
    write_sharegpt_dataset,
)
from tests.support.vllm_harness import VllmServer
from tests.support.vllm_install import VllmVenv

# Paired timings of two clients agree within 2 % on a quiet machine: quiet (tests/support/quiet.py).
pytestmark = [pytest.mark.real_vllm, pytest.mark.quiet]

ROUNDS = 4
ASSERTED = ("output_tok_s", "request_throughput", "mean_e2el_ms")
PROMPTS = 48
TOKENS = 64


def row(run: Figures) -> str:
    server = f"server TTFT {run.server_ttft_ms or 0:6.1f} E2E {run.server_e2e_ms or 0:6.1f}"
    return (
        f"{run.client:<17} {run.output_tok_s:8.1f} tok/s {run.request_throughput:6.2f} req/s"
        f"  TTFT p50 {run.median_ttft_ms:7.2f} mean {run.mean_ttft_ms:7.2f}"
        f"  TPOT p50 {run.median_tpot_ms:6.3f}  ITL p50 {run.median_itl_ms:6.3f}"
        f"  E2EL mean {run.mean_e2el_ms:7.2f} ms | {server} | {delivery(run)}"
    )


async def test_same_workload_same_figures_as_vllm_bench_serve(
    real_vllm_server: VllmServer, vllm_venv: VllmVenv, tiny_model_dir: Path, tmp_path: Path
) -> None:
    server = real_vllm_server
    spec = side_spec(
        server.base_url, server.model, input_tokens=TOKENS, output_tokens=TOKENS,
        concurrency=4, num_prompts=PROMPTS, seed=23,
    )  # fmt: skip
    prompts = await servedeck_prompts(spec, PROMPTS)
    dataset = write_sharegpt_dataset(prompts, tmp_path / "prompts.json")
    theirs: list[Figures] = []
    ours: list[Figures] = []

    async def vllm_run(index: int) -> None:
        before = await server_latency_totals(server.base_url)
        run = await asyncio.to_thread(
            run_vllm_bench, vllm_venv.vllm_bin, tiny_model_dir, spec, dataset,
            tmp_path / f"vllm-{index}.json", client_env(),
        )  # fmt: skip
        theirs.append(server_account(run, before, await server_latency_totals(server.base_url)))

    async def servedeck_run() -> None:
        before = await server_latency_totals(server.base_url)
        run = await run_servedeck(spec)
        ours.append(server_account(run, before, await server_latency_totals(server.base_url)))

    with frontend_apart(server.pid) as affinity:
        print(f"\naffinity: {affinity}")
        for index in range(ROUNDS):
            if index % 2 == 0:
                await vllm_run(index)
                await servedeck_run()
            else:
                await servedeck_run()
                await vllm_run(index)
            print(f"round {index}\n  {row(theirs[-1])}\n  {row(ours[-1])}")
    for run in (*theirs, *ours):
        assert run.completed == PROMPTS
        assert run.output_tokens == PROMPTS * TOKENS
        assert run.server_ttft_ms is not None and run.server_e2e_ms is not None
        assert run.mean_ttft_ms >= 0.9 * run.server_ttft_ms, f"TTFT below the server's: {run}"
        assert run.mean_e2el_ms >= 0.9 * run.server_e2e_ms, f"E2EL below the server's: {run}"
    # The same prompts, to the token, as both clients counted them.
    assert {run.input_tokens for run in (*theirs, *ours)} == {theirs[0].input_tokens}
    results = [agreement(name, ours, theirs) for name in COMPARED]
    paired = [paired_agreement(name, ours, theirs, concurrency=4) for name in PAIRED]
    for result in (*results, *paired):
        asserted = result.name in ASSERTED or result in paired
        print(
            f"{result.name:<19} servedeck {result.ours:9.3f}  vllm {result.theirs:9.3f}"
            f"  ratio {result.ratio:6.3f}  band +-{result.tolerance:.3f}"
            f" ({100 * result.tolerance / max(abs(result.theirs), 1e-9):.0f} %)"
            f"  {'asserted' if asserted else 'printed'} {'ok' if result.ok else 'OUTSIDE'}"
        )
    assert [delivery(run) for run in (*theirs, *ours)] == ["streamed"] * (2 * ROUNDS)
    assert all(result.ok for result in paired), paired
    assert all(result.ok for result in results if result.name in ASSERTED), results
