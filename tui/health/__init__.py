"""Hardware health: the interconnect doctor, GPU health events (XID) and the probe.

No textual import here: every part is usable from the CLI and from tests.
"""
