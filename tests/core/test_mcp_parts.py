"""The MCP server's small parts: its bearer token's sources, one-line errors and logs."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import anyio
import pytest

from tui.core.errors import UsageError
from tui.mcp.answer import one_line
from tui.mcp.http import TOKEN_ENV, chosen_token
from tui.mcp.run import _OneLine


def test_the_token_comes_from_the_env_then_the_file_else_it_is_generated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    token, generated = chosen_token(None)
    assert generated and len(token) >= 32
    given = tmp_path / "token"
    given.write_text("from-the-file-0123456789\nsecond line ignored\n")
    assert chosen_token(str(given)) == ("from-the-file-0123456789", False)
    monkeypatch.setenv(TOKEN_ENV, "from-the-environment-0123")
    assert chosen_token(str(given)) == ("from-the-environment-0123", False)


@pytest.mark.parametrize("text", ["short", "has a space in it 0123456789", ""])
def test_a_weak_token_is_refused_in_one_line_naming_where_it_came_from(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    given = tmp_path / "token"
    given.write_text(text)
    with pytest.raises(UsageError, match=f"^{given}: the token must be at least 16"):
        chosen_token(str(given))
    with pytest.raises(UsageError, match=r"cannot read it \(No such file or directory\)"):
        chosen_token(str(tmp_path / "absent"))


def test_one_line_flattens_a_validation_error_and_redacts() -> None:
    text = (
        "1 validation error for log_tailArguments\nlines\n  Input should be less than or "
        "equal to 2000 [type=less_than_equal]\n    For further information visit https://x"
    )
    assert one_line(text) == (
        "1 validation error for log_tailArguments lines Input should be less than or "
        "equal to 2000 [type=less_than_equal]"
    )
    assert "plain-key-value" not in one_line(
        "failed with key plain-key-value", ("plain-key-value",)
    )


def _record(error: BaseException) -> logging.LogRecord:
    try:
        raise error
    except BaseException:
        return logging.LogRecord(
            "mcp", logging.ERROR, "x", 1, "Error in %s", ("writer",), sys.exc_info()
        )


def test_a_logged_traceback_becomes_one_line_and_a_closed_session_is_not_a_fault() -> None:
    record = _record(ValueError("bad frame"))
    assert _OneLine().filter(record)
    assert (
        record.exc_info is None and record.getMessage() == "Error in writer: ValueError: bad frame"
    )
    assert not _OneLine().filter(_record(anyio.ClosedResourceError()))
