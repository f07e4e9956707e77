"""One-key benchmarks: a load generator in its own process, vLLM-compatible metrics.

No Textual here. The console, the CLI and the tests all drive a run the same
way: `BenchProcess` (tui.bench.driver) starts `python -m tui.bench.runner`,
writes a `BenchSpec` as JSON on its stdin and reads JSON-line events back.
"""
