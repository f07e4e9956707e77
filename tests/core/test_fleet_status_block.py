"""The fleet status loop's blocks: split into unit and log parts, unfinished lines carried over."""

from __future__ import annotations

from tui.fleet.status_loop import complete_lines, parse_block

M = "servedeck-fleet-0a1b2c:"


def test_a_block_splits_into_the_units_state_and_the_logs_new_lines() -> None:
    lines = [
        f"{M}unit",
        "Id=vllm.service",
        "ActiveState=active",
        "",
        f"{M}unit-status:0",
        f"{M}log-delta",
        "INFO first",
        f"{M}not-a-tag-a-log-line-would-never-start-with",
        "INFO second",
        "",
    ]
    block = parse_block(lines, M)
    assert block.show == "Id=vllm.service\nActiveState=active"
    assert block.show_status == 0
    assert block.log_mode == "delta"
    assert block.log_lines[0] == "INFO first" and block.log_lines[-2:] == ["INFO second", ""]


def test_a_failed_show_and_an_unreadable_log_keep_their_reasons() -> None:
    lines = [
        f"{M}unit",
        "Failed to connect to bus: Host is down",
        "",
        f"{M}unit-status:1",
        f"{M}log-error",
        "sh: 6: cannot open /var/log/vllm.log: Permission denied",
    ]
    block = parse_block(lines, M)
    assert block.show_status == 1 and block.show.startswith("Failed to connect")
    assert block.log_mode == "error"
    assert block.log_lines == ["sh: 6: cannot open /var/log/vllm.log: Permission denied"]


def test_garbage_gives_an_empty_block_not_an_exception() -> None:
    block = parse_block(["\x00\xff", f"{M}unit-status:x", "junk"], M)
    assert block.show_status is None and block.log_mode == ""


def test_a_line_written_in_two_halves_is_read_once_whole() -> None:
    complete, fragment = complete_lines("", ["a", "b", "hal"])
    assert (complete, fragment) == (["a", "b"], "hal")
    complete, fragment = complete_lines(fragment, [""])  # nothing new: still unfinished
    assert (complete, fragment) == ([], "hal")
    complete, fragment = complete_lines(fragment, ["f done", "c", ""])
    assert (complete, fragment) == (["half done", "c"], "")
