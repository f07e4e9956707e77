"""Alerts: rules over the recorded signals, with hysteresis, mute/ack, and delivery.

No Textual here: the console shows what the engine decides; the CLI recorder and
tests drive the same engine.

engine.py: Evaluating rules: per (rule, GPU) a pending -> firing -> resolved state, with mute and ack
monitor.py: Wires the alert engine to the sources and to delivery: recorder, webhook, the screen
signals.py: Signal values from the sources' snapshots, in the shape AlertEngine.observe takes
webhook.py: The alert webhook: one JSON POST per alert change to the profile's URL, off the caller's thread
"""
