"""The one way the console starts a background worker: a failure becomes a state, never an exit.

Textual's `@work` exits the app when a worker raises (exit_on_error=True). Every console
worker (polls, service actions, benchmark, summary, kill, readiness) is started through
`console_worker` instead: the worker runs with exit_on_error=False, and any exception is
turned into a `WorkerFailed` message for the pane it belongs to (the app draws it as a
state there, and notifies when the operator asked for the work), plus a record in the
console log. tests/ui/test_console_workers.py fails if a worker is started any other way.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from textual.message import Message
from textual.worker import Worker

from tui.core import paths
from tui.core.redact import redact_text
from tui.source_health import one_line

logger = logging.getLogger("servedeck.console")


class WorkerOwner(Protocol):
    """What a decorated method's object lends its worker: the app, a screen, or a console part."""

    def run_worker(self, *args: Any, **kwargs: Any) -> Worker[Any]: ...
    def post_message(self, message: Message) -> bool: ...


@dataclass
class WorkerFailed(Message):
    """A console worker raised: which pane shows it, what was attempted, and why it failed."""

    pane: str  # "gpu", "log", "service", "readiness", "metrics", "overview", "procs", ...
    what: str  # what was attempted, in the operator's words: "clean up leftovers"
    reason: str  # one line, secrets redacted
    user_action: bool  # asked for by the operator: say so in a notification too


def failure_reason(error: BaseException) -> str:
    """One redacted line: the exception's message, or its type when it has none."""
    text = str(error).strip() or type(error).__name__
    return redact_text(one_line(text))


def failure_text(message: str) -> str:
    """A failure message (remote stderr, an error's text) as one redacted line."""
    return redact_text(one_line(message or "unknown error"))


def record_failure(pane: str, what: str, reason: str) -> None:
    """Append one line to the console log (the log dir), so a failure is never only on screen."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    logger.warning("%s: %s failed: %s", pane, what, reason)
    try:
        folder = paths.log_dir()
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / "console.log").open("a", encoding="utf-8") as handle:
            handle.write(f"{stamp} {pane}: {what} failed: {reason}\n")
    except OSError:  # a full or read-only disk must not turn a recorded failure into a crash
        logger.exception("cannot write the console log")


def console_worker(
    group: str,
    *,
    pane: str,
    what: str | Callable[..., str],
    user_action: bool = False,
    exclusive: bool = True,
    thread: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Worker[Any]]]:
    """Decorate a method of the app or a screen: calling it starts a worker that cannot exit the app.

    `what` says what was attempted, in the operator's words; a callable gets the app and
    the method's arguments (`lambda app, verb: f"{verb} the service"`). `thread=True` runs
    a plain (blocking) method in a thread, e.g. a SQLite read.
    """

    def decorator(method: Callable[..., Any]) -> Callable[..., Worker[Any]]:
        def failed(self: WorkerOwner, error: Exception, args: tuple[Any, ...], kwargs: Any) -> None:
            reason = failure_reason(error)
            attempted = what(self, *args, **kwargs) if callable(what) else what
            record_failure(pane, attempted, reason)
            self.post_message(WorkerFailed(pane, attempted, reason, user_action))

        @functools.wraps(method)
        def start(self: WorkerOwner, *args: Any, **kwargs: Any) -> Worker[Any]:
            if thread:

                def guarded_sync() -> Any:
                    try:
                        return method(self, *args, **kwargs)
                    except Exception as error:  # the point: nothing escapes
                        failed(self, error, args, kwargs)
                        return None

                return self.run_worker(
                    guarded_sync,
                    name=method.__name__,
                    group=group,
                    exclusive=exclusive,
                    exit_on_error=False,
                    thread=True,
                )

            async def guarded() -> Any:
                try:
                    return await method(self, *args, **kwargs)
                except asyncio.CancelledError:
                    raise
                except Exception as error:  # the point: nothing escapes
                    failed(self, error, args, kwargs)
                    return None

            worker: Worker[Any] = self.run_worker(
                guarded,
                name=method.__name__,
                group=group,
                exclusive=exclusive,
                exit_on_error=False,
            )
            return worker

        return start

    return decorator
