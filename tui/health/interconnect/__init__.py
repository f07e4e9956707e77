"""The interconnect doctor and the probe: what between the GPUs halves P2P bandwidth or hangs NCCL.

collect.py: one read-only round trip that gathers the doctor's sections from a host
parse.py: parsers of the real tools' output (lspci, nvidia-smi topo, sysfs), never raising
rules.py: the doctor's rules, sections in and findings out (`analyze_interconnect`)
doctor_run.py: the doctor on a host, collected then analysed
probe.py: the bandwidth probe's refusal, its run over a Host and its verdict against published figures
probe_script.py: the probe itself, a standalone script the serving venv's Python runs on the host
"""
