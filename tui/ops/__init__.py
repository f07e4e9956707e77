"""Operations over a whole Deck: the floor above it, below the console, CLI and fleet.

A source takes a Host; what needs the Deck's several sources at once (its GPU source and
its service, its model facts, its health checks) lives here, one module per operation:
`gpu_hints` (a listing's classification context and GPU snapshot), `restart_guard` (the
leftover check before a start or restart), `unit_lint` (lint the Deck's unit),
`plan` (plan the Deck's model on its GPUs), `probe_run` (run and record the probe),
`hardware_health` (the summary's hardware facts), `load_explain` (the load explanation of a
Deck's host: the console after ready, `servedeck status`).
"""
