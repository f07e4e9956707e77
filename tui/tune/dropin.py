"""Each configuration as a systemd drop-in: the operator's unit file is never edited.

The drop-in resets `ExecStart=` to the unit's own command line with the configuration's
flags in place of the unit's, and adds its `Environment=` lines. A restore marker is
written in the data dir before the first drop-in: if the tune process dies (SIGKILL, a
crash, a lost terminal), the next `servedeck tune` (or `--restore`) removes the drop-in
and puts the service back as it was. Every write, removal and reload is audited with
its exact command.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from tui.core import paths
from tui.core.audit import append_audit
from tui.core.errors import ServedeckError
from tui.core.redact import redact_text
from tui.deck import Deck
from tui.serving.unit.exec_start import exec_start_argv
from tui.serving.unit.lint_run import UnitFile
from tui.tune.space import BOOL_FLAGS, TuneConfig

DROPIN_NAME = "90-servedeck-tune.conf"
MARKER_FILE = "tune-restore.json"


def unit_argv(unit: UnitFile) -> list[str]:
    """The unit's own command line, the base each configuration's flags replace; none refused."""
    argv = exec_start_argv(unit.name, unit.text)
    if not argv:
        raise ServedeckError(f"{unit.name} has no ExecStart= line: nothing to change flags on")
    return argv


def _drop_flag(words: list[str], flag: str) -> list[str]:
    """argv without `flag` (and its value, `--flag v` or `--flag=v`, or `--no-flag`)."""
    kept: list[str] = []
    skip = False
    negative = "--no-" + flag.removeprefix("--")
    for word in words:
        if skip:
            skip = False
            if not word.startswith("-"):
                continue
        if word in (flag, negative):
            skip = flag not in BOOL_FLAGS
            continue
        if word.startswith(flag + "="):
            continue
        kept.append(word)
    return kept


def config_argv(base: list[str], config: TuneConfig) -> list[str]:
    """The unit's command line with the configuration's flags and model in place."""
    words = list(base)
    if config.model and "serve" in words:
        at = words.index("serve") + 1
        if at < len(words) and not words[at].startswith("-"):
            words[at] = config.model
        else:
            words.insert(at, config.model)
    for flag, value in config.flags:
        words = _drop_flag(words, flag)
        if value is True:
            words.append(flag)
        elif value is False:
            words.append("--no-" + flag.removeprefix("--"))
        else:
            words += [flag, str(value)]
    return words


def dropin_text(config: TuneConfig, argv: list[str]) -> str:
    env = "".join(f"Environment={shlex.quote(f'{k}={v}')}\n" for k, v in config.env)
    return (
        f"# servedeck tune: {config.name} (removed when the tune ends; "
        "`servedeck tune --restore` removes it after a crash)\n"
        f"[Service]\n{env}ExecStart=\nExecStart={shlex.join(argv)}\n"
    )


@dataclass(frozen=True, slots=True)
class RestoreMarker:
    """What to undo: the drop-in written and the service's state before the tune."""

    host: str
    unit: str
    dropin_path: str
    was_active: bool
    written_at_s: float


def marker_path() -> Path:
    return paths.data_dir() / MARKER_FILE


def read_marker(path: Path | None = None) -> RestoreMarker | None:
    try:
        data = json.loads((path or marker_path()).read_text(encoding="utf-8"))
        return RestoreMarker(**data)
    except (OSError, ValueError, TypeError):
        return None


def write_marker(marker: RestoreMarker, path: Path | None = None) -> None:
    path = path or marker_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_suffix(".tmp")
    temp.write_text(json.dumps(asdict(marker)))
    temp.replace(path)


def clear_marker(path: Path | None = None) -> None:
    (path or marker_path()).unlink(missing_ok=True)


class DropIn:
    """The tune's one drop-in on the Deck's host: write, reload, remove, each audited."""

    def __init__(self, deck: Deck, on_line: Callable[[str], None] = print) -> None:
        folder = deck.unit_dropin_dir
        if folder is None:
            raise ServedeckError(
                f"profile {deck.profile.name} names no unit: nothing to write a drop-in for"
            )
        self.deck = deck
        self.folder = folder
        self.path = f"{folder}/{DROPIN_NAME}"
        self.on_line = on_line
        self._sudo = ("sudo", "-n") if deck.profile.service.use_sudo else ()

    async def _run(self, argv: tuple[str, ...], what: str, stdin_text: str | None = None) -> None:
        command = shlex.join(argv)
        self.on_line(f"$ {command}")
        details = {"command": command, "what": what, "dropin": self.path}
        if stdin_text is not None:
            details["text"] = redact_text(stdin_text)
        result = await self.deck.host.run(argv, timeout_s=60.0, stdin_text=stdin_text)
        ok = result.exit_status == 0
        append_audit("tune.dropin", self.deck.host_label, {**details, "ok": ok})
        if not ok:
            last = (result.stderr.strip() or result.stdout.strip()).splitlines()
            raise ServedeckError(
                f"{self.deck.host_label}: {command} failed ({last[-1] if last else result.exit_status})"
            )

    async def reload(self) -> None:
        argv = self.deck.daemon_reload_argv
        if argv is not None:
            await self._run(argv, "reload")

    async def write(self, text: str) -> None:
        await self._run((*self._sudo, "mkdir", "-p", self.folder), "folder")
        await self._run((*self._sudo, "tee", self.path), "write", stdin_text=text)
        await self.reload()

    async def remove(self) -> None:
        await self._run((*self._sudo, "rm", "-f", self.path), "remove")
        await self.reload()

    def marker(self, was_active: bool) -> RestoreMarker:
        unit = self.deck.profile.service.unit or ""
        return RestoreMarker(self.deck.host_label, unit, self.path, was_active, time.time())
