"""One tune from the crashed tune's undo to the recorded result: the CLI's and the console's path.

`servedeck tune` and the console's Tune view both go through `tune_on_deck`, so both
first undo a drop-in an earlier tune left on this host, resume from the same results
file and record each start and the result in the profile's recording. A console that
holds the recording hands its feed over: it records the loads itself, the tune adds its
result there.
"""

from __future__ import annotations

from tui.deck import Deck
from tui.ops.restart_guard import guarded_action
from tui.plan.inventory import NoGpus
from tui.record.feed import RecordFeed
from tui.tune.driver import Outcome, Say, clean_leftovers, run_tune
from tui.tune.dropin import DropIn, clear_marker, read_marker
from tui.tune.preflight import PlannedConfig
from tui.tune.progress import TuneBoard
from tui.tune.record import TuneRecording
from tui.tune.results import context_key, measured_before, save_outcome
from tui.tune.space import TuneSpace


async def restore_left_behind(deck: Deck, say: Say = print) -> bool:
    """Undo the drop-in of a tune that died on this host; True when there was one."""
    marker = read_marker()
    if marker is None or marker.host != deck.host_label:
        return False
    drop = DropIn(deck, say)
    if drop.path != marker.dropin_path:
        # A simulated box lives as long as its servedeck: the dead tune's box, its
        # drop-in and its processes were swept when this one started.
        say(f"a tune left {marker.dropin_path} on a box that is gone: nothing left to undo")
        clear_marker()
        return True
    say(f"a tune left {marker.dropin_path}: removing it")
    await drop.remove()
    if marker.was_active:
        await clean_leftovers(deck, say)  # what the dead tune's last load left on the GPUs
        await guarded_action(deck, "start", confirmed=True)
    clear_marker()
    return True


async def hardware_label(deck: Deck) -> str:
    """The hardware a measurement belongs to (--resume reuses only the same): "no GPUs" on a
    CPU box."""
    try:
        gpus = await deck.gpu_inventory()
    except NoGpus:
        return "no GPUs"
    return f"{gpus.count}x {gpus.name}"


async def tune_on_deck(
    deck: Deck,
    space: TuneSpace,
    planned: tuple[PlannedConfig, ...],
    *,
    say: Say = print,
    resume: bool = False,
    board: TuneBoard | None = None,
    held_feed: RecordFeed | None = None,
) -> list[Outcome]:
    """A confirmed tune: the left-behind drop-in undone, then `run_tune`, recorded.

    `held_feed`: the feed of a recording this process already holds (the console's).
    """
    await restore_left_behind(deck, say)
    context = context_key(deck.profile.model.name or "", await hardware_label(deck))
    done = measured_before(context) if resume else {}
    recording = TuneRecording(deck, say, held_feed=held_feed)
    try:
        return await run_tune(
            deck,
            space,
            planned,
            say=say,
            done=done,
            keep=lambda outcome: save_outcome(outcome, context),
            recording=recording,
            board=board,
        )
    finally:
        recording.close()
