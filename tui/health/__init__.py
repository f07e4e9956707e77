"""Hardware health: GPU health counters and badges; the interconnect doctor, the probe and XIDs.

No textual import here: every part is usable from the CLI and from tests.

badge.py: The GPU table's health mark: one letter per GPU for the worst kind of trouble
counters.py: Per-GPU health counters from `nvidia-smi -q`: retired pages, remapped rows, PCIe replays, ECC, throttling
findings.py: One shape for every hardware finding, so the CLI, the pane and the summary agree
health_run.py: Read a host's GPU health once: counters from `nvidia-smi -q`, XIDs from the kernel log
interconnect/: The interconnect doctor and the probe: what between the GPUs halves P2P bandwidth or hangs NCCL
nvml_counters.py: Per-GPU health counters through NVML, for GPUs on this machine
report.py: Per-GPU health: XID events and counters folded into one badge per GPU
xid/: NVIDIA XID errors: the kernel's one-line reports of GPU faults, read, decoded and followed
"""
