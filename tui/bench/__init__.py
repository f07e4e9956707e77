"""One-key benchmarks: a load generator in its own process, vLLM-compatible metrics.

No Textual here. The console, the CLI and the tests all drive a run the same
way: `BenchProcess` (tui.bench.driver) starts `python -m tui.bench.runner`,
writes a `BenchSpec` as JSON on its stdin and reads JSON-line events back.

adapters.py: LoRA adapters of a run: `--lora NAME[:W],...`, each request's model, per-adapter figures
best.py: Which benchmark runs are measurements, which runs are alike, and the best of each kind
capacity/: Capacity under an SLO: how many users a configuration serves, found by a search over levels
chat_loop.py: The `chat` workload: multi-turn conversations that send back the assistant's real answers
client_load.py: Is the client the bottleneck: send lag, event-loop lag and CPU share of a level
client.py: The streaming HTTP client: httpx's API over aiohttp, and a measured SSE fast path
compare.py: Compare two benchmark runs: what changed in the configuration, and which metrics moved
context.py: What a run is recorded against: profile, host, TP/EP and a hash of the serving config
driver.py: Drive the benchmark process from the console, the CLI or a test: one code path
export.py: Export a level in `vllm bench serve --save-result` field names, so tools compare
html_report.py: `--report run.html`: one self-contained page per run, inline CSS and SVG charts
http_phases.py: Each request's HTTP phases from the client's trace hooks: connect, send, wait
history.py: Benchmark history: one BenchResult per line of a JSONL file in the data dir
lengths.py: Per-request prompt and output lengths: fixed, drawn from a distribution, or a class mix
loadgen.py: One level of load in one process: closed loop or open loop, cancellable
metrics.py: Metric definitions of `vllm bench serve` (docs/DESIGN.md section 5), without numpy
model.py: Frozen result types of a benchmark run, and their JSON round trip
process_io.py: What both benchmark processes do alike: events on stdout (key redacted), cancel, discovery
prompt_fit.py: Prompts of an exact token count: calibrate which words are one token each, then count
repeats.py: `bench --repeat N`: the whole workload run N times, each figure's spread across runs
report.py: vLLM's `bench serve` report of one level, as text lines (the CLI and the Bench pane)
requests_file.py: `--requests run.csv|run.jsonl`: one row per request of every level
runner.py: The benchmark process: `python -m tui.bench.runner`, a BenchSpec in, JSON-line events out
server_view.py: The server's side of a run: vLLM /metrics before and after, as deltas
shards.py: A level split over worker processes: the parent gathers the shards, `run_shard` runs one
spec_level.py: A level's speculative decoding, from the server's /metrics deltas over that level
telemetry.py: The engine's side of a capacity level: vLLM /metrics polled while the level runs
trace.py: The `trace` workload: replay a JSONL request trace at a chosen speed
over_time.py: A level over time: per-second output tok/s, requests running and TTFT
uncertainty.py: How sure a level's figures are: 95 % intervals over its requests, none drawn at random
uncertainty_blocks.py: Intervals over requests that share the server's state: a moving-block bootstrap in send order
workload.py: What a run sends: the spec, synthetic prompts of a token length, arrival times
workloads.py: Workload presets beyond random prompts; the same seed always gives byte-identical prompts
"""
