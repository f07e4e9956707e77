"""Drive the benchmark process from the console, the CLI or a test: one code path.

`RunnerProcess` is the runner-process lifecycle shared with the capacity
search: start `python -m <module>`, write the spec, stream the JSON-line
events, SIGINT to stop early. `BenchProcess` runs `tui.bench.runner` and turns
its events into frozen dataclasses; after `cancel()` the result still
arrives, marked partial.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from tui.bench.model import BenchResult, LevelResult, level_from_dict, result_from_dict
from tui.core.errors import ServedeckError

if TYPE_CHECKING:  # the workload module loads httpx: not needed to draw a run's events
    from tui.bench.workload import BenchSpec

_PROJECT_ROOT = str(Path(__file__).resolve().parents[2])
EventT = TypeVar("EventT")
ResultT = TypeVar("ResultT")


class BenchError(ServedeckError):
    """A benchmark that could not run (server unreachable, runner crashed)."""


@dataclass(frozen=True, slots=True)
class BenchStarted:
    model: str
    engine_version: str
    levels: tuple[tuple[int, float | None], ...]
    prompt_method: str
    transport: str


@dataclass(frozen=True, slots=True)
class BenchProgress:
    level: int
    concurrency: int
    request_rate: float | None
    done: int
    failed: int
    total: int
    tokens: int
    tok_s: float
    elapsed_s: float


BenchEvent = BenchStarted | BenchProgress | LevelResult | BenchResult


def parse_event(message: dict) -> BenchEvent | None:
    """One runner event line as a dataclass; unknown events are None."""
    kind = message.get("event")
    if kind == "start":
        levels = tuple((int(x["concurrency"]), x["request_rate"]) for x in message["levels"])
        return BenchStarted(
            message["model"],
            message.get("engine_version", ""),
            levels,
            message.get("prompt_method", ""),
            message.get("transport", ""),
        )
    if kind == "progress":
        fields = {key: value for key, value in message.items() if key != "event"}
        return BenchProgress(**fields)
    if kind == "level":
        return level_from_dict(message["level"])
    if kind == "result":
        return result_from_dict(message["result"])
    if kind == "error":
        raise BenchError(f"benchmark: {message.get('message', 'failed')}")
    return None


class _Spec(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


class RunnerProcess(Generic[EventT, ResultT]):
    """A runner module in its own process: the spec on stdin, JSON-line events on stdout.

    The benchmark and the capacity search share this lifecycle; a subclass names
    the module and turns each message into its event (setting `result`).
    """

    module: ClassVar[str]
    label: ClassVar[str]  # names the run in the error when no result came

    def __init__(self, spec: _Spec, python: str | None = None) -> None:
        self.spec = spec
        self._python = python or sys.executable
        self._process: asyncio.subprocess.Process | None = None
        self._stderr_tail: deque[str] = deque(maxlen=20)
        self.result: ResultT | None = None

    def _event(self, message: dict[str, Any]) -> EventT | None:
        """One event line as this runner's event (None to skip); sets `result`."""
        raise NotImplementedError

    async def start(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            part for part in (_PROJECT_ROOT, env.get("PYTHONPATH", "")) if part
        )
        self._process = await asyncio.create_subprocess_exec(
            self._python,
            "-m",
            self.module,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            limit=16 * 1024 * 1024,
        )
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(self.spec.to_dict()).encode())
        await self._process.stdin.drain()
        self._process.stdin.close()

    def cancel(self) -> None:
        """Ask the runner to stop (SIGINT); it still reports what finished, marked partial."""
        if self._process is not None and self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.send_signal(signal.SIGINT)

    async def kill(self) -> None:
        if self._process is not None and self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()
            await self._process.wait()

    async def _drain_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        async for raw in self._process.stderr:
            self._stderr_tail.append(raw.decode(errors="replace").rstrip())

    async def events(self) -> AsyncIterator[EventT]:
        """Every event until the runner exits; BenchError when it ends without a result."""
        if self._process is None:
            await self.start()
        assert self._process is not None and self._process.stdout is not None
        stderr_reader = asyncio.create_task(self._drain_stderr())
        try:
            async for raw in self._process.stdout:
                try:
                    message = json.loads(raw)
                except ValueError:
                    continue
                if not isinstance(message, dict):
                    continue
                event = self._event(message)
                if event is not None:
                    yield event
            await self._process.wait()
            await stderr_reader
        finally:
            stderr_reader.cancel()
            await self.kill()
        if self.result is None:
            tail = next((line for line in reversed(self._stderr_tail) if line.strip()), "")
            raise BenchError(
                f"{self.label} ended (status {self._process.returncode}) without a result"
                + (f": {tail}" if tail else "")
            )


class BenchProcess(RunnerProcess[BenchEvent, BenchResult]):
    """One benchmark run in its own process; the last event is the BenchResult."""

    module = "tui.bench.runner"
    label = "benchmark process"

    def _event(self, message: dict[str, Any]) -> BenchEvent | None:
        event = parse_event(message)
        if isinstance(event, BenchResult):
            self.result = event
        return event


async def run_bench(
    spec: BenchSpec, on_event: Callable[[BenchEvent], None] | None = None
) -> BenchResult:
    """Run a spec to the end in its own process and return the result."""
    process = BenchProcess(spec)
    async for event in process.events():
        if on_event is not None:
            on_event(event)
    assert process.result is not None
    return process.result
