"""A terminal driver whose input thread sleeps while no key arrives.

Textual's LinuxDriver wakes its input thread ten times a second to see whether
the app is exiting and whether a lone Escape has waited long enough. On an idle
console that costs more CPU than a GPU refresh. This driver waits on the
terminal and on a wake-up pipe; it polls at Textual's 0.1 s only while an escape
sequence is pending, and exiting writes to the pipe, so quitting is not slower.
"""

from __future__ import annotations

import os
import selectors
import threading
from codecs import getincrementaldecoder
from typing import Any

from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

PENDING_POLL_S = 0.1  # Textual's own interval, kept while a sequence may be cut short
IDLE_POLL_S = 5.0  # a safety net only: keys and exit wake the thread at once


class _WakingEvent(threading.Event):
    """An Event that also makes a pipe readable, so a thread in select() sees it."""

    def __init__(self, wake_fd: int) -> None:
        super().__init__()
        self._wake_fd = wake_fd

    def set(self) -> None:
        super().set()
        try:
            os.write(self._wake_fd, b"x")
        except OSError:  # the pipe is full (a wake-up is pending anyway) or closed
            pass


class QuietLinuxDriver(LinuxDriver):
    """LinuxDriver with an input thread that blocks instead of polling."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._wake_read_fd, self._wake_write_fd = os.pipe()
        os.set_blocking(self._wake_read_fd, False)
        os.set_blocking(self._wake_write_fd, False)
        self.exit_event = _WakingEvent(self._wake_write_fd)

    def run_input_thread(self) -> None:
        """As LinuxDriver.run_input_thread, but select() waits for input or the wake pipe."""
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        selector.register(self._wake_read_fd, selectors.EVENT_READ)
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode

        def process(events: list[tuple[selectors.SelectorKey, int]], final: bool = False) -> None:
            for key, mask in events:
                if not mask & selectors.EVENT_READ:
                    continue
                if key.fd == self._wake_read_fd:
                    self._drain_wake_pipe()
                    continue
                data = decode(os.read(self.fileno, 1024 * 4), final=final)
                if not data:
                    break  # stdin is a pipe that was closed
                for event in parser.feed(data):
                    self.process_message(event)
            for event in parser.tick():
                self.process_message(event)

        def timeout_s() -> float:
            pending = getattr(parser, "_timeout_time", 0.0) is not None
            return PENDING_POLL_S if pending else IDLE_POLL_S

        try:
            while not self.exit_event.is_set():
                process(selector.select(timeout_s()))
            selector.unregister(self.fileno)
            process(selector.select(0), final=True)
        finally:
            selector.close()
            try:
                for _event in parser.feed(""):
                    pass
            except (EOFError, ParseError):
                pass

    def _drain_wake_pipe(self) -> None:
        try:
            while os.read(self._wake_read_fd, 64):
                pass
        except OSError:  # empty: nothing left to drain
            pass

    def close(self) -> None:
        super().close()
        for fd in (self._wake_read_fd, self._wake_write_fd):
            try:
                os.close(fd)
            except OSError:
                pass
