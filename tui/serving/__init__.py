"""The service and its load: readiness, /metrics, the load (load/), the engine's progress (progress/), and the unit (unit/).

disagg.py: Prefill/decode disaggregation: the engine's KV-transfer role, its NIXL transfers, their warnings
engines.py: Per-engine figures of a data-parallel deployment, and an engine idle while another queues
load/: A model load: its progress from the log (one state machine), the ready ETA, the load explainer
lora.py: LoRA adapters: which are loaded, and which have requests running or waiting
metrics.py: Server metrics from Prometheus /metrics (vLLM and SGLang names), with a log fallback
prefix_cache.py: Why the prefix cache does not hit: the reason, when one can be known, else "unknown"
progress/: Is the engine making progress: the stall verdict, its kind and evidence, and the stall as an incident
readiness.py: Is the server answering? /health and /v1/models, polled only once the log says it is starting
slo_live.py: Live SLO figures: p99 TTFT, ITL and E2E in their buckets, failures, preemptions and queue over two sliding windows, and the burn signals
sleep.py: vLLM's sleep mode as an action: put the engine to sleep or wake it, confirmed and audited
spec_decode.py: Speculative decoding's acceptance from vLLM's spec-decode counters
unit/: The systemd unit that runs the server: its state and actions, and what keeps it from looping
"""
