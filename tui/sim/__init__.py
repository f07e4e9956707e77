"""The built-in simulator: a GPU box serving a model, for the demo, CI and benchmarks.

`tui.sim.server` is a real HTTP server process that behaves like vLLM (load log,
OpenAI API, Prometheus metrics, worker processes holding "GPU memory");
`tui.sim.box.SimBox` drives it like a systemd unit on an 8-GPU machine and
models the GPUs. Everything it produces is marked simulated.

box.py: SimBox: the whole simulated GPU server in one object, for tests, the demo and the CLI
capacity.py: The simulator's true capacity at an SLO: its own scheduler replayed on a virtual clock
checks.py: The simulated box's interconnect and health checks, read by the real parsers
dcgm.py: A dcgm-exporter-compatible /metrics for the simulated GPUs
deck.py: SimDeck: the Deck of a simulated box, answering every question the Deck is asked
deployment.py: vLLM's deployment flags on the simulated server in a known way, and the unit's drop-ins
doctor.py: `servedeck doctor --demo`: the same verdicts, about the simulator instead of this machine
engine.py: The simulated engine: continuous batching with chunked prefill, like vLLM V1's scheduler
faults.py: Faults a test switches on while the server runs (POST /_sim/fault), applied from a request
facts.py: Host facts for the simulator: the seed deployment's software stack and model folder
gpu_model.py: The simulated GPUs: statics of the seed box, samples from live worker processes
gpu_source.py: The GpuSource for the simulator: snapshots of a SimBox, marked simulated
hang.py: The simulator's hangs on demand (POST /_sim/fault): a rank stopped, a spin, a CPU-side block, a slowdown
health.py: The simulated box's GPU health: `nvidia-smi -q` counters and kernel XID lines
histograms.py: The simulator's histograms: vLLM's bucket bounds and a cumulative count
http_api.py: The simulator's HTTP surface: vLLM's OpenAI-compatible API on aiohttp
interconnect.py: The simulated box's interconnect, printed in the real tools' formats
load.py: The model load, phase by phase, in vLLM's log lines and worker memory
lora.py: The simulator's vLLM 2026 engine options (data-parallel, drafts, sleep, LoRA) and its LoRA adapters
metrics.py: /metrics for the simulator: vLLM's metric names and labels, via prometheus_client
openai_shapes.py: vLLM's OpenAI-compatible bodies as the simulator writes them: errors, models, completions, frames
overview.py: What the Host overview shows for the simulator: the seed deployment's machine
pd.py: The simulator's prefill/decode role (--kv-transfer-config) and vLLM's NIXL metric families, faults on demand
prefix_cache.py: The simulator's prefix cache: vLLM's automatic prefix caching, block by block
procs.py: Simulated vLLM child processes: `VLLM::EngineCore` and its `VLLM::Worker_TPn`
server.py: `python -m tui.sim.server`: a simulated vLLM server process on 127.0.0.1
service.py: The simulator's unit behind the same ServiceController the console uses for systemd
shards.py: The simulator's slow-disk mode: real checkpoint shards, read at a set disk rate
sleep_state.py: The simulator's `vllm:engine_sleep_state` gauge, as vLLM writes it
spec_decode.py: The simulator's speculative-decoding counters, as vLLM's SpecDecodingProm counts them
spec.py: The seed deployment the simulator models, and the server's settings
sweep.py: Temporary simulator state dirs outlive a console killed with SIGKILL: the next start sweeps them
tokens.py: The simulator's tokenizer: a deterministic, documented approximation
unit.py: A simulated systemd service unit that runs the simulated vLLM server
unit_file.py: The simulated service's unit file, in the seed deployment's shape (what `systemctl cat` shows)
vlog.py: vLLM's log format, written to stdout and to the state dir's server.log
"""
