"""A model load: its progress read from the log, the ready ETA, and why it took as long.

tracker.py: LoadTracker: a log's batches through the prefilter, memory samples, the snapshot
machine.py: The state machine: what one log line means for the load (`apply`)
prefilter.py: Which lines of a batch need `apply`, by the patterns' words
patterns.py: The table of the log lines that mark a load's progress, each with its literals
clock.py: When a line was logged: a vLLM prefix's time, its caches a small class
progress.py: LoadProgress and the phases, facts and stats it states
eta.py: When the server will be ready, from this host's earlier loads of the model
explain.py: Why a load took as long as it did: per-phase cost and a prediction
history.py: This host's explained loads (loads.jsonl), for the next prediction and the summary
explain_status.py: The explanation for `servedeck status`, from one short look at a host
waterfall.py: The after-ready waterfall as text
live.py: The line shown while a model loads: why it is slow right now
live_watch.py: Taking the live readings from a Host every few seconds
io.py: A load's I/O and page-cache residency on a host, through the helper below
io_helper.py: The self-contained script sent to the host's `python3 -` for them
"""
