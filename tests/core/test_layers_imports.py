"""Imports placed inside functions stay the few that buy start-up speed or an optional part.

An import inside a function is invisible at a module's top; used to dodge an import loop,
it hides a floor running the wrong way (the `layers` contract in pyproject.toml holds the
floors). Each module that keeps some is listed with how many and why; a new one, or one
more in a listed module, fails here until it is hoisted or listed with its reason.
TYPE_CHECKING blocks do not count (they never run).
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_CLI = "CLI start-up: `servedeck --help` and each parser load no source; run() imports it"
_COLD = "cold start: the console's first frame (tests/integration/test_cold_start_imports.py)"

# module -> (function-level tui/widgets imports it keeps, why)
KEPT: dict[str, tuple[int, str]] = {
    "tui/cli.py": (4, _CLI),
    "tui/open_console.py": (1, "the UI entry point: Textual loads only when the console runs"),
    "tui/compose.py": (1, "cold start: a real host's Deck never loads the simulator"),
    "tui/deck.py": (12, _COLD + ": NVML, the journal, the planner, health load on first use"),
    "tui/commands/bench_cmd.py": (1, _CLI + "; the capacity search (~185 ms) only for --capacity"),
    "tui/commands/bench_spec.py": (
        3,
        _CLI + "; a dataset's or trace's reader (~130-220 ms) loads only for --dataset/--trace",
    ),
    "tui/commands/mcp_cmd.py": (
        2,
        _CLI + "; the MCP SDK (pydantic, starlette) loads only for `servedeck mcp`",
    ),
    "tui/mcp/run.py": (1, "uvicorn and starlette load only with --http"),
    "tui/commands/doctor_cmd.py": (
        2,
        _CLI + "; the unit lint and the interconnect doctor for --unit/--interconnect",
    ),
    "tui/commands/exporter_cmd.py": (2, _CLI + "; the simulator only for the demo"),
    "tui/commands/fleet_cmd.py": (4, _CLI + "; opens the Fleet pane (a UI entry point)"),
    "tui/commands/fleet_prom_cmd.py": (1, _CLI),
    "tui/commands/hosts_cmd.py": (1, _CLI),
    "tui/commands/profiles_cmd.py": (1, _CLI),
    "tui/commands/replay_cmd.py": (1, "the UI entry point: opens the replay app"),
    "tui/commands/serve_cmd.py": (1, _CLI + "; aiohttp loads only for `serve`"),
    "tui/fleet/deck_probe.py": (1, "asyncssh (~90 ms) loads only for an SSH member"),
    "tui/fleet/demo.py": (2, "the simulator loads only for the demo fleet"),
    "tui/health/health_run.py": (1, "optional: nvidia-ml-py may be missing (ImportError)"),
    "tui/hosts/factory.py": (1, "asyncssh (~90 ms) loads only for an SSH profile"),
    "tui/hosts/ssh_config.py": (1, "asyncssh's config parser loads only for an alias"),
    "widgets/bench_view.py": (1, _COLD + ": the bench driver"),
    "widgets/plan_view.py": (3, _COLD + ": the planner"),
    "tui/app/__init__.py": (1, _COLD + ": `import tui.app` loads no Textual app yet"),
    "tui/app/console.py": (1, _COLD + ": Textual's terminal driver loads only in a terminal"),
    "tui/app/console_bench.py": (
        13,
        _COLD + ": a run's workload (httpx), context (hashlib), the bench and capacity"
        " drivers, spec and command, the comparison, the capacity view and its history load"
        " with the run or its history",
    ),
    "tui/app/console_handoff.py": (
        5,
        _COLD + ": the summary (SQLite, the recording) and markdown-it load when it is asked"
        " for, the planner (~20 ms) at the Plan tab",
    ),
    "tui/app/console_hardware.py": (
        5,
        _COLD + ": the journal follower, the interconnect rules and the health report load"
        " with the XIDs, the probe and the first report",
    ),
    "tui/app/console_load_live.py": (4, _COLD + ": the load explainer loads when a load is seen"),
    "tui/app/console_record.py": (
        4,
        _COLD + ": the recorder (SQLite, httpx) after the first frame; Timeline, replay and the"
        " alerts firing (the alert engine) when opened",
    ),
    "tui/app/console_restart_watch.py": (2, _COLD + ": the restart guard loads at the first S/R"),
    "tui/app/console_tune.py": (
        10,
        _COLD + ": the Tune view (its driver brings httpx, ~65 ms; its record SQLite) loads at U",
    ),
    "tui/health/badge.py": (1, _COLD + ": the health report loads with the first report"),
    "tui/app/fleet_app.py": (1, "the Fleet's start: the summary loads at export"),
    "tui/app/fleet_run.py": (
        4,
        "the Fleet's start: the console loads when a host opens, the simulator for the demo,"
        " Prometheus for a Prometheus fleet",
    ),
}


def _is_house(module: str | None) -> bool:
    return (module or "").split(".")[0] in ("tui", "widgets")


def _function_imports(tree: ast.AST) -> list[int]:
    """Line numbers of tui/widgets imports inside a function, outside TYPE_CHECKING."""
    found: list[int] = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for other in child.orelse:
                    walk(other, in_function)
                continue
            if in_function and isinstance(child, ast.ImportFrom) and child.level == 0:
                if _is_house(child.module):
                    found.append(child.lineno)
            elif in_function and isinstance(child, ast.Import):
                found.extend(child.lineno for alias in child.names if _is_house(alias.name))
            function = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            walk(child, in_function or function)

    walk(tree, False)
    return found


def function_imports(root: Path = REPO) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for path in sorted([*(root / "tui").rglob("*.py"), *(root / "widgets").rglob("*.py")]):
        lines = _function_imports(ast.parse(path.read_text(), str(path)))
        if lines:
            found[path.relative_to(root).as_posix()] = lines
    return found


def test_no_import_inside_a_function_beyond_the_listed_ones() -> None:
    over = {
        module: f"{len(lines)} (lines {lines}), {KEPT.get(module, (0, ''))[0]} listed"
        for module, lines in function_imports().items()
        if len(lines) > KEPT.get(module, (0, ""))[0]
    }
    assert over == {}, "hoist these imports to the module top, or list them with why"


def test_the_list_shrinks_with_the_code() -> None:
    """A listed module that now keeps fewer lowers its count, so the list stays true."""
    found = function_imports()
    stale = {
        module: (count, len(found.get(module, [])))
        for module, (count, _) in KEPT.items()
        if len(found.get(module, [])) < count
    }
    assert stale == {}


def test_the_count_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    """The check can fail: a cycle dodged inside a method is counted, TYPE_CHECKING is not."""
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from tui.deck import Deck\n"
        "class A:\n    def f(self):\n        from tui.deck import Deck\n        import json\n"
        "def g():\n    h = lambda: __import__('x')\n    from widgets import keys\n"
    )
    assert _function_imports(tree) == [6, 10]


def test_every_top_level_package_sits_on_a_floor() -> None:
    """A new package or module under tui/ joins the `layers` contract, or nothing holds it."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "layers")
    named = {
        name.strip() for layer in contract["layers"] for name in layer.replace(":", "|").split("|")
    }
    tops = {
        f"tui.{path.stem if path.suffix else path.name}"
        for path in (REPO / "tui").iterdir()
        if (path.suffix == ".py" and path.stem not in ("__init__", "__main__"))
        or (path.is_dir() and (path / "__init__.py").exists())
    }
    assert tops - named == set()
