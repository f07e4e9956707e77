"""NVIDIA XID errors: the kernel's one-line reports of GPU faults, read, decoded and followed.

decode.py: NVIDIA XID errors: the kernel's one-line reports of GPU faults, decoded
follow.py: Follow a host's XID events while the console runs, and say when the follow is lost
kernel_log.py: XID events from a host's kernel log: the journal (followed by cursor) or dmesg
"""
