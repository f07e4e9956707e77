"""A stand-in `systemctl` for machines where systemd does not run (no pytest needed: the
GPU verification scripts in tests/perf use it too).

A profile's unit is answered by a real executable on PATH that the real LocalHost runs:
`show` prints the unit's properties, what systemd would say of a unit with this User=,
WorkingDirectory= and ExecStart=; every other verb fails, as on a made-up unit.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

SYSTEMCTL_STANDIN = """#!/bin/sh
case "$1" in
  show) cat "{show}" ;;
  *) echo "systemctl stand-in: unsupported: $*" >&2; exit 1 ;;
esac
"""


def unit_user_field() -> str:
    """User= of a unit running as this process's user ("" when root: systemd's default)."""
    return "" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name


def unit_show_text(
    unit: str,
    active_state: str = "inactive",
    user: str = "",
    working_directory: str = "",
    exec_start: tuple[str, ...] = (),
) -> str:
    """`systemctl show` of a loaded unit: User= empty means root, as systemd runs it;
    exec_start is ExecStart='s argv, printed the way systemd prints it."""
    sub = {"active": "running", "inactive": "dead", "failed": "failed"}[active_state]
    text = (
        f"Id={unit}\nLoadState=loaded\nActiveState={active_state}\nSubState={sub}\n"
        f"Result=success\nMainPID=0\nExecMainStatus=0\nNRestarts=0\n"
        f"ControlGroup=/system.slice/{unit}\nUser={user}\nWorkingDirectory={working_directory}\n"
    )
    if exec_start:
        text += (
            f"ExecStart={{ path={exec_start[0]} ; argv[]={' '.join(exec_start)} ; "
            "ignore_errors=no ; start_time=[n/a] ; stop_time=[n/a] ; pid=0 ; code=(null) ; "
            "status=0/0 }\n"
        )
    return text


def write_systemctl(folder: Path, show_text: str) -> Path:
    """Write the stand-in answering `show` with show_text; returns the folder to put first
    on PATH."""
    bin_dir = folder / "systemctl-bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    show = folder / "unit.show"
    show.write_text(show_text)
    script = bin_dir / "systemctl"
    script.write_text(SYSTEMCTL_STANDIN.format(show=show))
    script.chmod(0o755)
    return bin_dir
