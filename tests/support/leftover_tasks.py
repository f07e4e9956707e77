"""Name the asyncio tasks a test leaves behind that do not end when cancelled.

pytest-asyncio cancels a test's leftover tasks when it closes the test's loop and
waits for every one of them: a task that does not end on cancel (an await with no
bound in its cleanup) holds the run until pytest-timeout, whose report shows only
the loop waiting, not the task. Here the leftovers are cancelled first with a
deadline, and any still running are failed with their stacks.
"""

from __future__ import annotations

import asyncio
import io
import sys
from collections.abc import Iterator

import pytest

RUNNER_FIXTURE = "_function_scoped_runner"
CANCEL_GRACE_S = 30.0


def describe(tasks: set[asyncio.Task[object]]) -> str:
    out = io.StringIO()
    for task in tasks:
        out.write(f"- {task.get_name()}: {task.get_coro()!r}\n")
        task.print_stack(file=out)
    return out.getvalue()


@pytest.fixture(autouse=True)
def _leftover_tasks_end_on_cancel(request: pytest.FixtureRequest) -> Iterator[None]:
    # Requested before the test's other fixtures, so it is torn down after them and
    # before the loop is closed.
    runner = (
        request.getfixturevalue(RUNNER_FIXTURE) if RUNNER_FIXTURE in request.fixturenames else None
    )
    yield
    if runner is None:
        return
    loop = runner.get_loop()
    if loop.is_closed():
        return
    left = {task for task in asyncio.all_tasks(loop) if not task.done()}
    if not left:
        return
    for task in left:
        task.cancel()
    _done, pending = loop.run_until_complete(asyncio.wait(left, timeout=CANCEL_GRACE_S))
    if pending:
        stacks = describe(pending)
        print(stacks, file=sys.stderr)  # shown even if the loop's close then hangs
        pytest.fail(
            f"{len(pending)} task(s) left by the test still run {CANCEL_GRACE_S:g} s after "
            f"being cancelled:\n{stacks}",
            pytrace=False,
        )
