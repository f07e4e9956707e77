"""The leftover-task check names a task that does not end when cancelled (a real pytest run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

INNER = '''
import asyncio

import tests.support.leftover_tasks as leftover_tasks

leftover_tasks.CANCEL_GRACE_S = 0.5


async def stubborn() -> None:
    """Swallows the first cancel (a cleanup with no bound), ends at the second."""
    cancels = 0
    while True:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancels += 1
            if cancels == 2:
                raise


async def polite() -> None:
    await asyncio.sleep(10)


async def test_leaves_a_stubborn_task() -> None:
    asyncio.get_running_loop().create_task(stubborn(), name="stubborn-one")


async def test_leaves_a_polite_task() -> None:
    asyncio.get_running_loop().create_task(polite(), name="polite-one")


def test_plain() -> None:
    assert True
'''


def test_a_task_that_ignores_cancel_fails_its_test_by_name(tmp_path: Path) -> None:
    (tmp_path / "test_inner.py").write_text(INNER)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-p", "tests.support.leftover_tasks", "-o", "asyncio_mode=auto", "--timeout", "60",
         "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path / "test_inner.py")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    out = result.stdout + result.stderr
    assert "3 passed, 1 error" in out, out
    assert "ERROR at teardown of test_leaves_a_stubborn_task" in out, out
    assert "stubborn-one" in out and "still run 0.5 s after being cancelled" in out, out
    assert "polite-one" not in out, out
