"""The recorder over real SSH (two sshd servers, a jump host) while the connection is cut twice.

The box is this machine behind the jump; the service is a simulator whose log is
followed with `tail -F` over SSH and whose HTTP API is reached through the SSH
port forward. The cuts kill every sshd connection process at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_record_night import BackgroundRecording
from tests.support.console_support import box_profile, readable_sim_box
from tests.support.record_support import wait_for
from tests.support.sshd_fixtures import SshdPair
from tui.compose import open_deck
from tui.record.feed import RecordFeed
from tui.record.headless import Cadence, HeadlessRecorder
from tui.record.query import RecordingReader
from tui.record.writer import Recorder
from tui.serving.load.tracker import LOADING_ORDER
from tui.sim.box import SimBox

pytestmark = [pytest.mark.sshd, pytest.mark.usefixtures("private_home")]

FAST = Cadence(
    gpu_s=0.5, service_s=0.5, metrics_s=1.0, readiness_s=0.5, procs_s=2.0, files_s=1.0, retry_s=1.0
)


@pytest.fixture
def readable_box() -> Iterator[SimBox]:
    with readable_sim_box("servedeck-rec-", seed=5, load_s=12.0) as box:
        yield box


def _texts(db: Path) -> list[str]:
    with RecordingReader(db) as reader:
        return [event.text for event in reader.events()]


def test_recording_over_a_jump_host_survives_two_cuts(
    sshd: SshdPair, readable_box: SimBox, tmp_path: Path
) -> None:
    box = readable_box
    user = sshd.zsh_user or sshd.user
    profile = box_profile("rec-over-ssh", sshd.jump_config(user=user), box)
    deck = open_deck(profile)
    db = tmp_path / "ssh.sqlite"
    recorder = Recorder(db, host_label=deck.host_label).start()
    feed = RecordFeed(recorder, deck.host_label)

    async def record(stop: asyncio.Event) -> None:
        try:
            await HeadlessRecorder(deck, feed, FAST).run(None, stop)
        finally:
            await deck.close()

    background = BackgroundRecording(record)
    try:
        time.sleep(1.0)  # the follower is attached before the load starts
        box.start()
        wait_for(lambda: any(t.startswith("load phase: weights") for t in _texts(db)), 120, 0.3)
        for _ in range(2):  # cut twice during the load
            assert sshd.first.kill_connections() + sshd.second.kill_connections() >= 1
            time.sleep(2.0)
        wait_for(lambda: any(t.startswith("ready: ") for t in _texts(db)), 120, 0.3)
    finally:
        background.stop()
        recorder.close()

    with RecordingReader(db) as reader:
        events = reader.events()
    texts = [event.text for event in events]
    assert [event.ts_s for event in events] == sorted(event.ts_s for event in events)
    phases = [
        text.split(": ", 1)[1].split(" ")[0] for text in texts if text.startswith("load phase: ")
    ]
    loading = [phase for phase in phases if phase in LOADING_ORDER]
    assert loading[0] in ("starting", "weights") and loading[-1] == "serving", phases
    ranks = [LOADING_ORDER.index(phase) for phase in loading]  # type: ignore[arg-type]
    assert ranks == sorted(ranks), phases  # no phase went backwards or repeated after a cut
    assert len(loading) == len(set(loading)), phases
    assert sum(text.startswith("ready: ") for text in texts) == 1
    keyed = [(event.ts_s, event.text) for event in events]
    assert len(keyed) == len(set(keyed))
    # each cut is on the timeline as a reconnect (the sources themselves just carried on)
    assert sum(text.startswith("reconnected to ") for text in texts) >= 2, texts
    # no nvidia-smi on this box: said once, not once per tick
    assert sum(text.startswith("GPUs unavailable") for text in texts) <= 1
