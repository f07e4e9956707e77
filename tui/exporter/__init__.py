"""`servedeck exporter`: what only servedeck knows about a box, as Prometheus metrics.

dcgm-exporter covers the GPUs and vLLM's /metrics the engine; this adds the unit,
the load, readiness, leftover processes, alerts and the last benchmark.
"""
