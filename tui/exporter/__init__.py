"""`servedeck exporter`: what only servedeck knows about a box, as Prometheus metrics.

dcgm-exporter covers the GPUs and vLLM's /metrics the engine; this adds the unit,
the load, readiness, leftover processes, alerts and the last benchmark.

engine_series.py: The engine families: data-parallel engines, spec decode, sleep, adapters, P/D
metrics.py: The `servedeck_*` metric families, their HELP texts, and the collector that writes them
runner.py: Runs the Deck's sources (the recorder's loops, without a recording) behind a /metrics port
"""
