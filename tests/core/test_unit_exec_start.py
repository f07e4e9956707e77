"""The unit's effective ExecStart=, read once for the Plan and the tune.

`systemctl cat` text: a drop-in's empty `ExecStart=` resets the list, so the last line
after it is what systemd runs; systemd's prefixes are not part of the command.
"""

from __future__ import annotations

import pytest

from tests.core.test_plan_lora import UNIT
from tui.core.errors import ServedeckError
from tui.plan.lora import lora_from_unit
from tui.serving.unit.exec_start import ExecStartError, exec_start_argv
from tui.serving.unit.lint_run import UnitFile
from tui.tune.dropin import unit_argv

UNSPLITTABLE = "[Service]\nExecStart=/opt/vllm/bin/vllm serve '/models/Kimi --port 8000\n"


def test_the_last_exec_start_after_a_reset_with_its_prefix_dropped() -> None:
    argv = exec_start_argv("vllm.service", UNIT)
    assert argv[:3] == ["/opt/vllm/bin/vllm", "serve", "/models/MiniMax-M2.7"]
    assert "--enable-lora" in argv and argv[-1] == "sql=/adapters/sql"
    prefixed = "[Service]\nExecStart=-@/usr/bin/vllm serve m --port 8000\n"
    assert exec_start_argv("x.service", prefixed) == [
        "/usr/bin/vllm",
        "serve",
        "m",
        "--port",
        "8000",
    ]
    assert exec_start_argv("x.service", "[Service]\nExecStart=\n") == []
    assert exec_start_argv("x.service", "[Service]\nUser=vllm\n") == []


def test_the_tune_and_the_plan_take_the_same_command_line() -> None:
    unit = UnitFile("vllm.service", UNIT, None)
    assert unit_argv(unit) == exec_start_argv(unit.name, unit.text)
    assert lora_from_unit(unit.name, unit.text) is not None
    with pytest.raises(ServedeckError, match=r"^vllm.service has no ExecStart= line"):
        unit_argv(UnitFile("vllm.service", "[Service]\nExecStart=\n", None))


def test_an_exec_start_that_cannot_be_split_is_one_line_naming_the_unit() -> None:
    """The tune split the line itself and raised shlex's ValueError (a traceback) here."""
    with pytest.raises(ExecStartError, match=r"^vllm.service: ExecStart cannot be split"):
        unit_argv(UnitFile("vllm.service", UNSPLITTABLE, None))
    with pytest.raises(ExecStartError, match="No closing quotation"):
        lora_from_unit("vllm.service", UNSPLITTABLE)
