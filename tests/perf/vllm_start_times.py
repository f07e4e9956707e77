"""Print how long the real-vLLM tier's pieces take: install, model, server starts.

Run from the repository root: ``python -m tests.perf.vllm_start_times``.
Starts, one after another: --enforce-eager, torch.compile with an empty cache
(cold), and torch.compile again with the same cache (warm), each stopped with
SIGTERM. Not a test: the figures depend on the machine and its load.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from tests.support.vllm_harness import start_vllm_server, stop_vllm_server
from tests.support.vllm_install import ensure_tiny_model, ensure_vllm_venv


def main() -> int:
    venv = ensure_vllm_venv()
    print(f"venv        {venv.elapsed_s:7.1f} s  (built now: {venv.built_now})")
    model = ensure_tiny_model(venv.python)
    print(f"tiny model  {model.elapsed_s:7.1f} s  (built now: {model.built_now})")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="servedeck-vllm-perf-") as root:
        runs = [
            ("eager", Path(root, "eager"), True),
            ("compile cold", Path(root, "compile"), False),
            ("compile warm", Path(root, "compile"), False),
        ]
        for label, workdir, eager in runs:
            server = start_vllm_server(venv, model.path, workdir, eager=eager)
            report = stop_vllm_server(server)
            print(
                f"{label:12s} start {server.start_s:6.1f} s  stop {report.stop_s:5.1f} s  "
                f"needed SIGKILL: {len(report.killed)}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
