"""What a service start ran: the main process's argv and its serving-relevant environment.

Read once per new main pid from /proc through the Host (local or over SSH), redacted
before it is recorded; the Deployment attempts table diffs these between starts.
"""

from __future__ import annotations

import shlex

from tui.core.errors import ServedeckError
from tui.core.redact import redact_text
from tui.hosts.base import Host

# Environment worth knowing for a deployment; anything else (PATH, HOME, keys) is left out.
ENV_PREFIXES = (
    "VLLM_",
    "SGLANG_",
    "CUDA_",
    "NCCL_",
    "PYTORCH_",
    "TORCH_",
    "OMP_",
    "HF_HUB_OFFLINE",
)


def _split(raw: bytes) -> list[str]:
    return [part for part in raw.decode(errors="replace").split("\0") if part]


def serving_env(pairs: list[str], extra_secrets: tuple[str, ...] = ()) -> dict[str, str]:
    env = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        if name.startswith(ENV_PREFIXES):
            env[name] = redact_text(f"{name}={value}", extra_secrets).partition("=")[2]
    return env


async def read_exec(
    host: Host, pid: int, extra_secrets: tuple[str, ...] = ()
) -> tuple[list[str], dict[str, str]] | None:
    """(argv, env) of a running process, redacted; None when it is gone or unreadable."""
    try:
        argv = _split(await host.read_file(f"/proc/{pid}/cmdline", max_bytes=65536))
    except ServedeckError:
        return None
    if not argv:
        return None
    try:
        env = serving_env(
            _split(await host.read_file(f"/proc/{pid}/environ", max_bytes=262144)), extra_secrets
        )
    except ServedeckError:
        env = {}  # another user's process: argv is readable, environ is not
    # Redact the joined line: `--api-key X` spans two words.
    return shlex.split(redact_text(shlex.join(argv), extra_secrets)), env
