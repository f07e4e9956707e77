"""Alert rules that can never fire, or that would shadow or drop another, are refused
with the key named (the profile's one-line error), never kept or dropped silently."""

from __future__ import annotations

from typing import Any

import pytest

from tui.core.config import profile_from_data

GOOD: dict[str, Any] = {"name": "hot", "metric": "gpu.temperature_c", "condition": ">= 85"}

# (what the [[alerts]] table changes, the key the problem must name, words it must say)
REFUSED: tuple[tuple[dict[str, Any], str, str], ...] = (
    ({"condition": ""}, "alerts[0].condition", "finite number"),
    ({"condition": "   "}, "alerts[0].condition", "finite number"),
    ({"condition": ">= nan"}, "alerts[0].condition", "finite number"),
    ({"condition": "> inf"}, "alerts[0].condition", "finite number"),
    ({"condition": "< -inf"}, "alerts[0].condition", "finite number"),
    ({"condition": ">= 1e400"}, "alerts[0].condition", "finite number"),
    ({"condition": ">="}, "alerts[0].condition", "finite number"),
    ({"condition": "95"}, "alerts[0].condition", "finite number"),
    ({"condition": 95}, "alerts[0].condition", "expected an operator"),
    ({"for_s": 1e300}, "alerts[0].for_s", "from 0 to 604800"),
    ({"for_s": float("inf")}, "alerts[0].for_s", "not a finite number"),
    ({"for_s": -1}, "alerts[0].for_s", "from 0 to 604800"),
    ({"hysteresis": float("nan")}, "alerts[0].hysteresis", "not a finite number"),
    ({"name": ""}, "alerts[0].name", "expected a name"),
    ({"name": "a\nb"}, "alerts[0].name", "expected a name"),
    ({"name": "x" * 100_000}, "alerts[0].name", "at most 64"),
    ({"name": "kv:gpu1"}, "alerts[0].name", "expected a name"),
    ({"name": " padded"}, "alerts[0].name", "expected a name"),
    ({"name": "\x1b[31mred"}, "alerts[0].name", "expected a name"),
    ({"message": "line\nbreak"}, "alerts[0].message", "one line"),
    ({"message": "m" * 100_000}, "alerts[0].message", "at most 200"),
    ({"severity": "page-everyone"}, "alerts[0].severity", "expected one of"),
)


@pytest.mark.parametrize(("change", "key", "words"), REFUSED)
def test_rule_is_refused_with_its_key(change: dict[str, Any], key: str, words: str) -> None:
    """Failed before for the empty condition (dropped silently), nan/inf/1e400 and 1e300 s
    (kept: never fire), the names and the messages (kept)."""
    _, problems = profile_from_data({"alerts": [GOOD | change]}, "box", None)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{key}: ") and words in problems[0], problems
    assert "\n" not in problems[0] and len(problems[0]) < 300


def test_duplicate_names_are_refused_naming_the_first() -> None:
    """Failed before: the second rule of a name was kept beside the first."""
    rules = [GOOD, GOOD | {"condition": ">= 90"}, GOOD | {"name": "other"}]
    profile, problems = profile_from_data({"alerts": rules}, "box", None)
    assert problems == ["alerts[1].name: 'hot' is already the name of alerts[0]"]
    names = [rule.name for rule in profile.alerting.rules]
    assert names == ["hot", "other"]


@pytest.mark.parametrize("timeout_s", [0, 0.05, 60.5, 1e9, float("inf")])
def test_webhook_timeout_is_bounded(timeout_s: float) -> None:
    """Failed before for 60.5, 1e9 (accepted: one hung POST held every later alert)."""
    alerting = {"webhook_url": "https://hooks.example/x", "webhook_timeout_s": timeout_s}
    _, problems = profile_from_data({"alerting": alerting}, "box", None)
    assert len(problems) == 1 and problems[0].startswith("alerting.webhook_timeout_s: ")


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"condition": "< -40.5"},
        {"for_s": 604800},
        {"name": "gpu-hot.2_b"},
        {"name": "kv full"},
        {"message": "hot"},
    ],
)
def test_sane_rules_still_parse(change: dict[str, Any]) -> None:
    profile, problems = profile_from_data({"alerts": [GOOD | change]}, "box", None)
    assert problems == [] and len(profile.alerting.rules) == 1
