"""Capacity under an SLO: how many users a configuration serves, found by a search over levels.

search.py: the search over concurrency, its levels, the SLO and the one-sentence answer
answer.py: a finished search as an answer with its bracket and the spread of repeats
driver.py: runs the search process from the CLI or the console, GPUs sampled alongside
runner.py: the search process itself (`python -m tui.bench.capacity.runner`)
workloads.py: chat and trace workloads inside a capacity level
history.py: one search result per line, next to the benchmark history
"""
