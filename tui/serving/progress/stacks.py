"""The engine's stacks over the Host's run(): py-spy per process, /proc wchan and kernel stack.

Read-only: `py-spy dump --nonblocking` reads the process's memory without stopping it (no
ptrace stop, no signal), so a dump never changes what it looks at; the kernel's side is two
reads of /proc. Each process is dumped on its own, side by side: one that is gone, refused
or slow says so on its line and the others still answer.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from pathlib import Path

from tui.core.errors import CommandNotFound, CommandTimeout, ServedeckError
from tui.hosts.base import Host
from tui.serving.progress.model import RankReading
from tui.serving.progress.stack_model import RankStacks, StackDump, ThreadStack, threads_from_json

PY_SPY_TIMEOUT_S = 20.0
PROC_TIMEOUT_S = 5.0
INSTALL_HINT = "pip install py-spy"
_REFUSED = ("permission denied", "operation not permitted", "os error 1)", "os error 13)")
_GONE = ("no such process", "no such file", "os error 3)")


def py_spy_argv0(host: Host) -> str:
    """py-spy on this machine: PATH, else beside this interpreter (the console's own venv);
    on another host, whatever its PATH finds."""
    if host.is_local:
        found = shutil.which("py-spy")
        if found:
            return found
        beside = Path(sys.executable).parent / "py-spy"
        if beside.exists():
            return str(beside)
    return "py-spy"


def missing_note(host: Host) -> str:
    where = "this machine" if host.is_local else host.label
    return (
        f"py-spy is not installed on {where}: {INSTALL_HINT} there "
        "(its `py-spy` must be on the PATH); kernel stacks and wchan below"
    )


def _py_spy_error(stderr: str, timeout_s: float) -> str:
    text = stderr.lower()
    if any(word in text for word in _REFUSED):
        return (
            "py-spy was refused: ptrace not permitted (run as root or the engine's user; "
            "kernel.yama.ptrace_scope)"
        )
    if any(word in text for word in _GONE):
        return "gone mid-dump"
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    first = next((line for line in lines if line.lower().startswith("error")), None)
    return f"py-spy failed: {(first or (lines[0] if lines else 'no output'))[:160]}"


async def _read_proc(host: Host, pid: int, name: str) -> tuple[str | None, str | None]:
    """(text, None) or (None, why): `cat /proc/PID/NAME` on the host."""
    try:
        result = await host.run(["cat", f"/proc/{pid}/{name}"], timeout_s=PROC_TIMEOUT_S)
    except CommandTimeout:
        return None, f"reading /proc/{pid}/{name} timed out"
    except ServedeckError as error:
        return None, str(error)
    if result.ok:
        return result.stdout, None
    err = result.stderr.lower()
    if "no such file" in err or "no such process" in err:
        return None, "gone"
    if "permission" in err or "not permitted" in err:
        return None, "readable by root only"
    return None, (result.stderr.strip() or f"cat exited {result.exit_status}")[:120]


async def _dump_one(
    host: Host, argv0: str | None, pid: int, name: str, timeout_s: float
) -> RankStacks:
    threads: tuple[ThreadStack, ...] = ()
    error: str | None = None
    if argv0 is None:
        error = "no py-spy"
    else:
        try:
            result = await host.run(
                [argv0, "dump", "--pid", str(pid), "--nonblocking", "--json"], timeout_s=timeout_s
            )
        except CommandTimeout:
            error = f"py-spy timed out after {timeout_s:g} s"
        except ServedeckError as failure:
            error = f"py-spy could not run: {failure}"
        else:
            if result.ok:
                try:
                    threads = threads_from_json(pid, result.stdout)
                except ValueError:
                    error = "py-spy answered no JSON"
            else:
                error = _py_spy_error(result.stderr or result.stdout, timeout_s)
    wchan, wchan_why = await _read_proc(host, pid, "wchan")
    stack, stack_why = await _read_proc(host, pid, "stack")
    if wchan_why == "gone":  # whatever py-spy said, the process left while it was read
        error = "gone mid-dump"
    return RankStacks(
        pid=pid,
        name=name,
        threads=threads,
        error=error,
        wchan=(wchan or "").strip() or None,
        kernel_stack=None if stack is None else tuple(stack.splitlines()),
        kernel_note=stack_why,
    )


async def has_py_spy(host: Host, argv0: str) -> bool:
    """py-spy answers --version on the host (exit 127 or no such file: not installed)."""
    try:
        result = await host.run([argv0, "--version"], timeout_s=PROC_TIMEOUT_S)
    except CommandNotFound:
        return False
    except ServedeckError:
        return False
    return result.ok


async def dump_stacks(
    host: Host,
    ranks: RankReading,
    *,
    include_root: bool = True,
    timeout_s: float = PY_SPY_TIMEOUT_S,
    py_spy: str | None = None,
) -> StackDump:
    """Every engine process's stacks now: the main pid's (the API server) and each rank's;
    `py_spy` names the binary (else PATH, or beside this interpreter here)."""
    argv0: str | None = py_spy or py_spy_argv0(host)
    note = None
    if not await has_py_spy(host, argv0 or "py-spy"):
        argv0, note = None, missing_note(host)
    targets = [(rank.pid, rank.name) for rank in ranks.ranks]
    if include_root and ranks.root_alive:
        targets.insert(0, (ranks.root_pid, "main pid (API server)"))
    at_s = time.time()
    dumped = await asyncio.gather(
        *(_dump_one(host, argv0, pid, name, timeout_s) for pid, name in targets)
    )
    return StackDump(host_label=host.label, at_s=at_s, ranks=tuple(dumped), note=note)
