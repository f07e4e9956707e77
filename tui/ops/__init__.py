"""Operations over a whole Deck: the floor above it, below the console, CLI and fleet.

A source takes a Host; what needs the Deck's several sources at once (its GPU source and
its service, its model facts, its health checks) lives here, one module per operation.

engine_stacks.py: The engine's stacks of a Deck's host, saved under the data dir: `servedeck stacks` and the console's D
gpu_hints.py: Where the process killer gets its GPU pid hints and classification context: the Deck
hardware_health.py: The summary's hardware facts of a Deck: its interconnect checks, GPU health, last probe
load_explain.py: The load explanation of a Deck's host: the console after ready, `servedeck status`
plan.py: The preflight plan for a Deck's own model and GPUs
probe_run.py: The probe's checks and records, shared by `servedeck probe` and the Health pane
restart_guard.py: The restart guard over a Deck: list its leftovers, judge them, refuse or act
unit_lint.py: Lint a Deck's unit: the real host's `systemctl cat`, or the simulator's seed unit
"""
