"""Capacity under an SLO: how many users a configuration serves, found by a search over levels.

answer.py: A finished capacity search as an answer with its uncertainty: the bracket and the spread
driver.py: Drive a capacity search from the CLI or the console, with the GPUs sampled alongside
history.py: Capacity history: one `bench --capacity` result per line, next to the benchmark history
judge.py: A level's SLO judged on its intervals: met, missed or too few requests to decide
measure.py: One level of a capacity search measured: its closed loop (or arrivals by rate), watched, summarised
pooled.py: Busier levels' values pooled into each level's p99 proofs as the search adds levels
result.py: The search's answer in one sentence and its `bench --capacity --json` body
runner.py: The capacity search process: `python -m tui.bench.capacity.runner` reads a spec on stdin
search.py: Capacity under an SLO: the search over concurrency, its levels and its one-sentence answer
spec.py: What a capacity search process is asked (`CapacitySpec`): benchmark, SLO, bounds and pace
watch.py: A capacity level's watch: /metrics polled and the client metered while its load runs
workloads.py: Chat and trace workloads inside a capacity level (tui.bench.capacity.runner)
"""
