"""QuietLinuxDriver: the input thread sleeps while idle, yet keys, a lone Escape and exit are prompt.

The driver reads a real pipe here (a terminal would need a pty and a running app;
the console in tmux is covered by the tmux end-to-end tests). Its one seam: the
parsed events go to a list instead of a running app's queue.
"""

from __future__ import annotations

import asyncio
import os
import selectors
import threading
import time
from collections.abc import Iterator

import pytest
from textual import events
from textual.app import App
from textual.drivers.linux_driver import LinuxDriver
from textual.message import Message

from tui.app.terminal_driver import QuietLinuxDriver


class _Recording:
    """Mixin: keep parsed events instead of sending them to an app."""

    received: list[Message]

    def process_message(self, message: Message) -> None:
        self.received.append(message)


class RecordingQuietDriver(_Recording, QuietLinuxDriver):
    pass


class RecordingTextualDriver(_Recording, LinuxDriver):
    pass


@pytest.fixture
def select_calls(monkeypatch: pytest.MonkeyPatch) -> list[float | None]:
    """Count the input thread's wake-ups: every select() it makes (the real one still runs)."""
    calls: list[float | None] = []
    real_select = selectors.SelectSelector.select

    def counting_select(self: selectors.SelectSelector, timeout: float | None = None) -> list:
        calls.append(timeout)
        return real_select(self, timeout)

    monkeypatch.setattr(selectors.SelectSelector, "select", counting_select)
    return calls


def _start(driver_class: type[LinuxDriver]) -> Iterator[tuple[LinuxDriver, int, threading.Thread]]:
    async def make() -> LinuxDriver:  # a driver is made on the app's loop
        return driver_class(App())

    read_fd, write_fd = os.pipe()
    driver = asyncio.run(make())
    driver.received = []  # type: ignore[attr-defined]
    driver.fileno = read_fd
    thread = threading.Thread(target=driver.run_input_thread, daemon=True)
    thread.start()
    try:
        yield driver, write_fd, thread
    finally:
        driver.exit_event.set()
        thread.join(timeout=6)
        for fd in (read_fd, write_fd):
            os.close(fd)


@pytest.fixture
def quiet() -> Iterator[tuple[LinuxDriver, int, threading.Thread]]:
    yield from _start(RecordingQuietDriver)


def _wait_for_key(driver: LinuxDriver, key: str, timeout_s: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        keys = [m.key for m in driver.received if isinstance(m, events.Key)]  # type: ignore[attr-defined]
        if key in keys:
            return time.monotonic() - started
        time.sleep(0.01)
    raise AssertionError(f"no {key!r} key within {timeout_s} s; got {driver.received}")  # type: ignore[attr-defined]


def test_idle_input_thread_does_not_poll(select_calls: list[float | None]) -> None:
    for driver_class, most in ((RecordingTextualDriver, None), (RecordingQuietDriver, 2)):
        select_calls.clear()
        for _ in _start(driver_class):
            time.sleep(1.0)
        if most is None:  # Textual's own driver: the wake-ups this one removes
            assert len(select_calls) >= 8
        else:
            assert len(select_calls) <= most, select_calls


def test_keys_arrive_at_once(quiet: tuple[LinuxDriver, int, threading.Thread]) -> None:
    driver, write_fd, _ = quiet
    time.sleep(0.2)  # the thread is asleep in select()
    os.write(write_fd, b"q")
    assert _wait_for_key(driver, "q", 1.0) < 0.5


def test_lone_escape_is_delivered(quiet: tuple[LinuxDriver, int, threading.Thread]) -> None:
    """A lone ESC may start a sequence; it becomes the escape key after Textual's short wait."""
    driver, write_fd, _ = quiet
    time.sleep(0.2)
    os.write(write_fd, b"\x1b")
    assert _wait_for_key(driver, "escape", 2.0) < 1.0


def test_exit_wakes_the_thread(quiet: tuple[LinuxDriver, int, threading.Thread]) -> None:
    driver, _, thread = quiet
    time.sleep(0.3)
    started = time.monotonic()
    driver.exit_event.set()
    thread.join(timeout=6)
    assert not thread.is_alive()
    assert time.monotonic() - started < 0.5
