"""Running the process helper on a host: its source on stdin to `python3 -`, JSON back.

The same script runs on this machine (through LocalHost) and on remote ones, so
there is one code path. Never an inline quoted one-liner (DESIGN.md section 7).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from tui.core.errors import HostError
from tui.hosts.base import Host

HELPER_MODULE = "helper.py"


@cache
def helper_source() -> str:
    """The helper's exact source text, read from the installed package."""
    return resources.files("tui.procs").joinpath(HELPER_MODULE).read_text(encoding="utf-8")


async def run_helper(
    host: Host, request: dict[str, Any], timeout_s: float = 30.0, python: str = "python3"
) -> dict[str, Any]:
    """Send the helper and one request; return its answer or raise a one-line HostError."""
    result = await host.run(
        [python, "-", json.dumps(request)], timeout_s=timeout_s, stdin_text=helper_source()
    )
    last_line = result.stdout.strip().splitlines()[-1:] or [""]
    try:
        answer = json.loads(last_line[0])
    except ValueError:
        stderr = result.stderr.strip().splitlines()
        why = stderr[-1] if stderr else f"exit status {result.exit_status}, no JSON answer"
        if result.exit_status == 127:
            why = f"{python} not found (the process helper needs Python 3 on the host)"
        raise HostError(host.label, f"process helper failed: {why}") from None
    if not isinstance(answer, dict) or not answer.get("ok"):
        error = answer.get("error") if isinstance(answer, dict) else "malformed answer"
        raise HostError(host.label, f"process helper failed: {error}")
    return answer
