"""`servedeck tune`: try a space of serving configurations on the profile's unit, safely.

`--dry-run` prints the plan (what runs in which order, what is skipped and why) and
starts nothing. A run writes each configuration as a drop-in, measures it and puts the
unit back as it was on any exit (SIGTERM and Ctrl-C included); after a crash,
`--restore` (or the next run) undoes the drop-in. `--apply` keeps the winner's drop-in
once the operator confirms.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path

from tui.commands._target import profile_from_args
from tui.compose import open_deck
from tui.core.errors import ServedeckError, UsageError
from tui.deck import Deck
from tui.ops.restart_guard import guarded_action
from tui.tune.driver import Outcome
from tui.tune.dropin import DropIn, config_argv, dropin_text, unit_argv
from tui.tune.preflight import plan_for_deck, plan_lines
from tui.tune.results import ranked, result_lines
from tui.tune.session import restore_left_behind, tune_on_deck
from tui.tune.space import TuneSpace, load_space

TABLE_WIDTH = 80  # the result table fits a default terminal; --wide prints every column


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "tune",
        parents=[common],
        help="try serving configurations (flags, env) on the unit, each measured, then restore",
    )
    parser.add_argument("--space", metavar="TOML", help="the tune.toml of configurations")
    parser.add_argument("--dry-run", action="store_true", help="print the plan; start nothing")
    parser.add_argument("--resume", action="store_true", help="skip configurations measured before")
    parser.add_argument("--apply", action="store_true", help="keep the winner's drop-in")
    parser.add_argument(
        "--restore", action="store_true", help="undo a drop-in a crashed tune left, then exit"
    )
    parser.add_argument(
        "--wide", action="store_true", help="every column of the result table (default: 80 wide)"
    )
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    parser.set_defaults(func=_tune)


def _confirm(question: str, args: argparse.Namespace) -> bool:
    if args.yes:
        return True
    if not sys.stdin.isatty():
        raise UsageError(f"tune: not on a terminal, so --yes is required ({question})")
    try:
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:  # the terminal closed: no answer is a no
        print()
        return False


def _apply_confirmed(question: str, args: argparse.Namespace) -> bool:
    """The apply question; no terminal and no --yes is a no (the run is over: no error)."""
    try:
        return _confirm(question, args)
    except UsageError:
        return False


async def _apply(deck: Deck, best: Outcome, space: TuneSpace) -> None:
    config = next(c for c in space.configs if c.key == best.key)
    argv = config_argv(unit_argv(await deck.unit_file()), config)
    drop = DropIn(deck)
    await drop.write(dropin_text(config, argv))
    service = deck.service()
    assert service is not None
    if (await service.state()).is_active:
        await service.stop(confirmed=True)
    await guarded_action(deck, "start", confirmed=True)
    print(f"applied: {best.name} ({drop.path} kept)")


async def _apply_if_confirmed(
    deck: Deck, best: Outcome | None, space: TuneSpace, args: argparse.Namespace
) -> None:
    """--apply: the winner's drop-in kept only when confirmed; otherwise say what stands."""
    if best is None or best.outcome != "served":
        print("not applied: no configuration served; the drop-in removed, the unit as before")
        return
    if _apply_confirmed(f"keep {best.name} as the unit's drop-in and start it?", args):
        await _apply(deck, best, space)
        return
    why = "not confirmed" if sys.stdin.isatty() else "no terminal to confirm on and no --yes"
    print(f"not applied ({why}): the drop-in removed, the unit as before")


async def _run(args: argparse.Namespace, space: TuneSpace | None) -> int:
    serving = not args.dry_run
    deck = open_deck(profile_from_args(args), demo_autostart=serving, demo_wait_ready=serving)
    try:
        if args.restore:
            if not await restore_left_behind(deck):
                print("nothing to restore")
            return 0
        assert space is not None
        planned = await plan_for_deck(deck, space)
        print("\n".join(plan_lines(planned)))
        if args.dry_run:
            return 0
        if deck.profile.read_only:
            raise ServedeckError("tune: read-only mode: nothing is started")
        if not _confirm(f"run {sum(p.runnable for p in planned)} configuration(s) on "
                        f"{deck.host_label}?", args):  # fmt: skip
            print("nothing done")
            return 1
        outcomes = await tune_on_deck(deck, space, planned, resume=args.resume)
        width = None if args.wide else TABLE_WIDTH
        print("\n".join(result_lines(outcomes, space.objective, width)))
        best = ranked(outcomes, space.objective)[0] if outcomes else None
        if args.apply:
            await _apply_if_confirmed(deck, best, space, args)
        return 0
    finally:
        await deck.close()


def _tune(args: argparse.Namespace) -> int:
    if not args.restore and not args.space:
        raise UsageError("tune: give --space TOML (or --restore)")
    space = load_space(Path(args.space)) if args.space else None

    async def main() -> int:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        if task is not None:
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
        try:
            return await _run(args, space)
        except asyncio.CancelledError:
            print("tune cancelled: the unit is as it was", file=sys.stderr)
            return 130

    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
        print("tune cancelled: the unit is as it was", file=sys.stderr)
        return 130
