"""Alerts: rules over the recorded signals, with hysteresis, mute/ack, and delivery.

No Textual here: the console shows what the engine decides; the CLI recorder and
tests drive the same engine.
"""
