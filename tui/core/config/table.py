"""`TomlTable`: reads one TOML table, remembering which keys were used and every problem met.

Every reader names the key path and what was expected, and renders a wrong value
safely (`describe_value`: never a long string that may be a secret); keys no reader
used are reported as unknown, with the closest known key, so a typo never passes.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from typing import Any

from tui.core.redact import redact_text


def describe_value(value: Any) -> str:
    """A short, safe rendering of a wrong value (never a long string that may be a secret)."""
    if isinstance(value, str):
        shown = value if len(value) <= 24 else value[:8] + "..."
        return f"the string {redact_text(shown)!r}"  # `http://u:pw@h` must not echo pw
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__


class TomlTable:
    """Reads one TOML table, remembering which keys were used and every problem met."""

    def __init__(self, data: Mapping[str, Any], key_path: str, problems: list[str]) -> None:
        self._data = data
        self._key_path = key_path
        self._problems = problems
        self._used: set[str] = set()

    def _where(self, key: str) -> str:
        return f"{self._key_path}.{key}" if self._key_path else key

    def where_of(self, key: str) -> str:
        """This table's path (`alerts[0]`), or a key's in it."""
        return self._where(key) if key else self._key_path

    def problem(self, key: str, message: str) -> None:
        self._problems.append(f"{self._where(key)}: {message}")

    def raw(self, key: str) -> Any:
        return self._data.get(key)

    def replace_last_problem(self, key: str, message: str) -> None:
        """Swap the generic message just recorded for `key` with a more helpful one."""
        prefix = f"{self._where(key)}: "
        for index in range(len(self._problems) - 1, -1, -1):
            if self._problems[index].startswith(prefix):
                self._problems[index] = prefix + message
                return
        self.problem(key, message)

    def _get(self, key: str) -> Any:
        self._used.add(key)
        return self._data.get(key)

    def string(
        self,
        key: str,
        default: str | None = None,
        *,
        choices: tuple[str, ...] = (),
        pattern: re.Pattern[str] | None = None,
        expected: str = "a string",
        secret: bool = False,
    ) -> str | None:
        value = self._get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            self.problem(key, f"expected {expected}, got {describe_value(value)}")
            return default
        if choices and value not in choices:
            options = ", ".join(repr(choice) for choice in choices)
            self.problem(key, f"expected one of {options}, got {describe_value(value)}")
            return default
        if pattern is not None and not pattern.fullmatch(value):
            got = "a value that does not match" if secret else describe_value(value)
            self.problem(key, f"expected {expected}, got {got}")
            return default
        return value

    def number(
        self,
        key: str,
        default: float | None,
        *,
        minimum: float | None = None,
        maximum: float | None = None,
        integer: bool = False,
    ) -> Any:
        value = self._get(key)
        if value is None:
            return default
        kind = "an integer" if integer else "a number"
        bad_type = isinstance(value, bool) or not isinstance(value, int | float)
        if integer and isinstance(value, float):
            bad_type = True
        limits = ""
        if minimum is not None and maximum is not None:
            limits = f" from {minimum:g} to {maximum:g}"
        elif minimum is not None:
            limits = f" >= {minimum:g}"
        if bad_type:
            self.problem(key, f"expected {kind}{limits}, got {describe_value(value)}")
            return default
        if not math.isfinite(value):
            self.problem(key, f"expected {kind}{limits}, got {value} (not a finite number)")
            return default
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            self.problem(key, f"expected {kind}{limits}, got {value}")
            return default
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self._get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.problem(key, f"expected true or false, got {describe_value(value)}")
            return default
        return value

    def strings(self, key: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        value = self._get(key)
        if value is None:
            return default
        if isinstance(value, str):
            return (value,)
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            self.problem(key, f"expected an array of strings, got {describe_value(value)}")
            return default
        return tuple(value)

    def numbers(
        self, key: str, default: tuple[Any, ...], *, integer: bool, minimum: float
    ) -> tuple[Any, ...]:
        value = self._get(key)
        if value is None:
            return default
        items = value if isinstance(value, list) else [value]
        kind = "integers" if integer else "numbers"
        for item in items:
            ok_type = isinstance(item, int) if integer else isinstance(item, int | float)
            if isinstance(item, bool) or not ok_type or not math.isfinite(item) or item < minimum:
                self.problem(
                    key, f"expected an array of {kind} >= {minimum:g}, got {describe_value(value)}"
                )
                return default
        return tuple(items)

    def table(self, key: str) -> TomlTable:
        value = self._get(key)
        if value is None:
            value = {}
        elif not isinstance(value, dict):
            self.problem(
                key, f"expected a table ([{self._where(key)}]), got {describe_value(value)}"
            )
            value = {}
        return TomlTable(value, self._where(key), self._problems)

    def tables(self, key: str) -> list[TomlTable]:
        value = self._get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            self.problem(
                key,
                f"expected an array of tables ([[{self._where(key)}]]), got {describe_value(value)}",
            )
            return []
        return [
            TomlTable(item, f"{self._where(key)}[{i}]", self._problems)
            for i, item in enumerate(value)
        ]

    def has(self, key: str) -> bool:
        return key in self._data

    def key_names(self) -> list[str]:
        self._used.update(self._data)
        return list(self._data)

    def finish(self) -> None:
        """Report every key nobody asked for, with the closest known key as a hint."""
        for key in self._data:
            if key in self._used:
                continue
            close = difflib.get_close_matches(key, sorted(self._used), n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            self.problem(key, f"unknown key{hint}")
