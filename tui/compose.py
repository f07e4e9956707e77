"""The composition root: the one place a profile becomes a Deck (a real host's, or the demo's).

Everything above asks for a Deck here; nothing below the Deck knows the simulator exists.
"""

from __future__ import annotations

from tui.core.config import Profile
from tui.deck import Deck
from tui.hosts.base import Host
from tui.hosts.factory import host_for_profile

# A demo opened by a one-shot CLI command loads quickly; the console's demo shows a full load.
CLI_DEMO_LOAD_S = 4.0
CONSOLE_DEMO_LOAD_S = 45.0


def host_for(profile: Profile) -> Host:
    """The Host a profile names: this machine or an SSH route (the demo's box opens with its Deck)."""
    return host_for_profile(profile)


def open_deck(
    profile: Profile,
    *,
    demo_load_s: float = CLI_DEMO_LOAD_S,
    demo_autostart: bool = False,
    demo_wait_ready: bool = False,
    demo_orphans_on_stop: int = 2,
    demo_time_scale: float | None = None,
    demo_server_args: tuple[str, ...] = (),
) -> Deck:
    """Create the profile's host (and, for the demo, a fresh simulated box on this machine)."""
    if profile.is_demo:
        from tui.sim.deck import open_sim_deck  # cold start: a real host never loads the simulator

        return open_sim_deck(
            profile,
            load_s=demo_load_s,
            autostart=demo_autostart,
            wait_ready=demo_wait_ready,
            orphans_on_stop=demo_orphans_on_stop,
            time_scale=demo_time_scale,
            server_args=demo_server_args,
        )
    return Deck(profile, host_for(profile))
