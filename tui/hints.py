"""What to tell an operator whose console has nothing to watch (no profile, no service)."""

from __future__ import annotations

from tui.core.config import Profile


def setup_hint(profile: Profile) -> tuple[str, ...]:
    """Lines saying what to do when the profile names no service unit and no log file.

    Empty when there is something to watch. Plain `servedeck` with no profile gets
    the three ways in: the simulator, a new profile, an existing one.
    """
    if profile.is_demo or profile.service.unit or profile.service.log_file:
        return ()
    if profile.path is None:
        return (
            "No profile given: this console watches this machine's GPUs only.",
            "  servedeck demo                  try everything on the built-in simulator",
            "  servedeck profiles init NAME    write a profile for your server",
            "  servedeck -p NAME               open the console on a profile",
            "  servedeck profiles list         the profiles found",
        )
    return (
        f"Profile {profile.name!r} names no service: set [service] unit or log_file in {profile.path}",
        f"  servedeck profiles check {profile.name}   checks it",
    )


def short_setup_hint(profile: Profile) -> str | None:
    """One line for the service line (80 columns): the full hint is in the log pane."""
    lines = setup_hint(profile)
    if not lines:
        return None
    if profile.path is None:
        return "no profile: servedeck demo | profiles init NAME | -p NAME"
    return "no service in this profile: set [service] unit or log_file"
