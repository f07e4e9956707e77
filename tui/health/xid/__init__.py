"""NVIDIA XID errors: the kernel's one-line reports of GPU faults, read, decoded and followed.

decode.py: XID lines decoded into events (`decode_xid`), with the catalog's meaning and severity
kernel_log.py: XID events from a host's kernel log, the journal followed by cursor or dmesg
follow.py: the console's live follow of XID events, and saying when the follow is lost
"""
