"""The interconnect doctor and the probe: what between the GPUs halves P2P bandwidth or hangs NCCL.

collect.py: Read everything the interconnect doctor needs from a host in one round trip
doctor_run.py: Run the interconnect doctor on a host (the simulator's box: `tui.sim.checks`)
parse.py: Parsers for what the interconnect doctor reads, in the real tools' formats
probe.py: The interconnect probe: refuse unless the GPUs are idle, run the fixed script with the serving venv's Python over the Host, and compare with published figures by class
probe_script.py: The interconnect probe, a standalone script run by the serving venv's Python on the host
rules.py: The interconnect doctor's rules: sections read from a host in, findings out
"""
