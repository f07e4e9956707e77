"""The service and its load: readiness, /metrics, load progress from the log and its ETA, the load explainer (live and after ready), and the unit (unit/).

load_eta.py: One answer to "when will the server be ready?", covering every phase still to come
load_explain.py: Why a load took as long as it did: per-phase cost, a waterfall with its gaps, a prediction
load_explain_status.py: The load explanation for `servedeck status`: one short look at the host's counters
load_io.py: Reading a load's I/O on the host: shard residency and read/CPU counters, through a Host
load_live.py: Why the load is slow right now: the line the Deck shows while a model loads (pure)
load_live_watch.py: Taking the live load readings: the same counters as the after-ready explainer, every few s
load_waterfall.py: The after-ready waterfall as text: one bar per step on a shared time axis, gaps apart
loadio_helper.py: The load I/O helper: page-cache residency of checkpoint shards and read counters
loadpatterns.py: The log lines that mark a model load's progress (docs/DESIGN.md section 6)
loadwatch.py: How far a model load has got, read from the service log (and GPU memory)
metrics.py: Server metrics from Prometheus /metrics (vLLM and SGLang names), with a log fallback
readiness.py: Is the server answering? /health and /v1/models, polled only once the log says it is starting
unit/: The systemd unit that runs the server: its state and actions, and what keeps it from looping
"""
