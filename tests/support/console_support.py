"""Consoles for tests: one on this machine whose host notes every command it starts (poll
tests), and a simulated box served over SSH (the console, fault and recorder days)."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from tests.support.sim_fixtures import FAST_OPTIONS
from tui.app import ServedeckApp
from tui.core.config import HostConfig, Profile, ServiceConfig, load_profile_file
from tui.deck import Deck
from tui.hosts.base import CommandResult
from tui.hosts.local import LocalHost
from tui.sim.box import SimBox

REPO = Path(__file__).resolve().parents[2]


class RecordingLocalHost(LocalHost):
    """This machine, noting each command, when it started, and which started while quitting."""

    def __init__(self) -> None:
        super().__init__()
        self.app: ServedeckApp | None = None
        self.commands: list[list[str]] = []
        self.started_s: list[float] = []
        self.started_while_quitting: list[list[str]] = []

    async def run(
        self, argv: Sequence[str], timeout_s: float = 30.0, stdin_text: str | None = None
    ) -> CommandResult:
        self.commands.append(list(argv))
        self.started_s.append(time.monotonic())
        if self.app is not None and self.app.quitting:
            self.started_while_quitting.append(list(argv))
        return await super().run(argv, timeout_s=timeout_s, stdin_text=stdin_text)

    def count(self, head: Sequence[str], since_s: float = 0.0) -> int:
        """Commands that began with `head` and started at or after since_s (monotonic)."""
        return sum(
            1
            for argv, at_s in zip(self.commands, self.started_s, strict=True)
            if argv[: len(head)] == list(head) and at_s >= since_s
        )


def local_console(overview_interval_s: float) -> tuple[ServedeckApp, RecordingLocalHost]:
    """The console for profiles/local-vllm.toml on this machine, and its recording host."""
    profile = load_profile_file(REPO / "profiles" / "local-vllm.toml")
    host = RecordingLocalHost()
    app = ServedeckApp(profile, Deck(profile, host), overview_interval_s=overview_interval_s)
    host.app = app
    return app, host


@contextmanager
def readable_sim_box(
    prefix: str,
    *,
    seed: int,
    load_s: float,
    orphans_on_stop: int | None = None,
    box_type: type[SimBox] = SimBox,
) -> Iterator[SimBox]:
    """A stopped simulator whose state dir (log included) any login user can read.

    Over SSH the box is this machine logged into as another user (the zsh user), so
    the state dir cannot be pytest's private tmp_path.
    """
    state = Path(tempfile.mkdtemp(prefix=prefix))
    state.chmod(0o755)
    options = FAST_OPTIONS
    if orphans_on_stop is not None:
        options = replace(options, orphans_on_stop=orphans_on_stop)
    box = box_type(state, seed=seed, load_seconds=load_s, options=options)
    try:
        yield box
    finally:
        box.close()
        shutil.rmtree(state, ignore_errors=True)


def box_profile(
    name: str, host: HostConfig, box: SimBox, api_key_env: str | None = None
) -> Profile:
    """A profile for the simulated box behind `host`: its log file and its loopback URL."""
    service = ServiceConfig(
        base_url=box.base_url, log_file=str(box.log_path), api_key_env=api_key_env
    )
    return Profile(name=name, host=host, service=service)


def log_file_console(folder: Path, name: str) -> tuple[ServedeckApp, Path]:
    """A console on this machine following an empty service log file in folder."""
    from tui.compose import open_deck

    log = folder / "service.log"
    log.write_text("")
    profile = Profile(name=name, service=ServiceConfig(log_file=str(log)))
    return ServedeckApp(profile, open_deck(profile)), log


async def append_once_following(pilot: object, app: ServedeckApp, log: Path, text: str) -> None:
    """Append text to the log once the console's follower has started reading it."""
    deadline = time.monotonic() + 60
    while not app.workers and time.monotonic() < deadline:
        await pilot.pause(0.05)  # type: ignore[attr-defined]
    await pilot.pause(0.5)  # type: ignore[attr-defined]  # the follower at the file's end
    with log.open("a") as out:
        out.write(text)
