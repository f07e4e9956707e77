"""Render the SVG screenshots under screenshots/ headlessly (Textual run_test + save_screenshot).

Run from the repository root:  python screenshots/render.py [NAME ...]
Each scene builds an app, lets it settle, optionally presses keys, and saves NAME.svg.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from textual.app import App  # noqa: E402

from tests.canned_host import canned_deck  # noqa: E402
from tui.app import ServedeckApp  # noqa: E402
from tui.config import load_profile_file  # noqa: E402

OUT = REPO / "screenshots"


@dataclass
class Scene:
    name: str
    make_app: Callable[[], App]
    size: tuple[int, int] = (120, 36)
    keys: tuple[str, ...] = ()
    settle_s: float = 0.5
    prepare: Callable[[App], Awaitable[None]] | None = None
    notes: list[str] = field(default_factory=list)


def _shell() -> App:
    profile = load_profile_file(REPO / "profiles" / "kimi-k25-int4-lxc.toml")
    return ServedeckApp(profile, canned_deck(profile))


SCENES: dict[str, Scene] = {
    "shell": Scene("shell", _shell),
}


async def render(scene: Scene) -> Path:
    app = scene.make_app()
    async with app.run_test(size=scene.size) as pilot:
        await pilot.pause(scene.settle_s)
        if scene.prepare is not None:
            await scene.prepare(app)
        for key in scene.keys:
            await pilot.press(key)
            await pilot.pause(0.2)
        await pilot.pause(0.2)
        path = app.save_screenshot(filename=f"{scene.name}.svg", path=str(OUT))
    return Path(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "names", nargs="*", help=f"scenes to render (default all: {', '.join(SCENES)})"
    )
    args = parser.parse_args()
    for name in args.names or list(SCENES):
        if name not in SCENES:
            parser.error(f"unknown scene {name!r}")
        print(asyncio.run(render(SCENES[name])))


if __name__ == "__main__":
    main()
