"""A profile's alerting tables read and checked: `[[alerts]]`, `[alerting]`, `[record]`.

The rules' schema is tui/core/alert_rules.py; this reads the profile's tables into it,
each problem naming the rule or key.
"""

from __future__ import annotations

import re
from dataclasses import replace

from tui.core.alert_rules import (
    MAX_FOR_S,
    MAX_MESSAGE_CHARS,
    RULE_NAME,
    SEVERITIES,
    SIGNALS,
    WEBHOOK_TIMEOUT_S,
    AlertingConfig,
    AlertRule,
    LiveSlo,
    RecordConfig,
    WebhookConfig,
)
from tui.core.alert_rules import parse_condition as parse_alert_condition
from tui.core.config.schema import BenchmarkSlo
from tui.core.config.table import TomlTable, describe_value


def _alert_rule(table: TomlTable, seen: dict[str, str]) -> AlertRule | None:
    """One `[[alerts]]` table; a rule that could never fire, or would shadow another of
    the same name, is refused with its key named rather than kept or dropped silently."""
    name = table.string(
        "name",
        pattern=RULE_NAME,
        expected="a name of letters, digits, '_', '.', '-', inner spaces (at most 64)",
    )
    metric = table.string("metric", choices=tuple(SIGNALS))
    condition_text = table.string("condition", expected="an operator and a number, like '>= 95'")
    rule = None
    if name is None and table.raw("name") is None:
        table.problem("name", "missing (every alert needs a name)")
    elif name is not None and name in seen:
        table.problem("name", f"{name!r} is already the name of {seen[name]}")
        name = None
    elif name is not None:
        seen[name] = table.where_of("")
    if not metric and table.string("metric") is None:
        table.problem("metric", f"missing; one of {', '.join(SIGNALS)}")
    condition = parse_alert_condition(condition_text) if condition_text is not None else None
    if condition_text is None:
        if table.raw("condition") is None:
            table.problem("condition", "missing (like '>= 95')")
    elif condition is None:
        table.problem(
            "condition",
            "expected an operator and a finite number, like '>= 95', "
            f"got {describe_value(condition_text)}",
        )
    for_s = table.number("for_s", 0.0, minimum=0, maximum=MAX_FOR_S)
    hysteresis = table.number("hysteresis", 0.0, minimum=0)
    severity = table.string("severity", "warning", choices=SEVERITIES) or "warning"
    message = table.string(
        "message",
        "",
        pattern=re.compile(rf"[^\x00-\x1f\x7f]{{0,{MAX_MESSAGE_CHARS}}}"),
        expected=f"one line of at most {MAX_MESSAGE_CHARS} characters",
    )
    if name and metric and condition:
        rule = AlertRule(
            name=name,
            metric=metric,
            op=condition[0],
            threshold=condition[1],
            for_s=for_s,
            severity=severity,
            hysteresis=hysteresis,
            message=message or "",
        )
    table.finish()
    return rule


def record_config(table: TomlTable) -> RecordConfig:
    config = RecordConfig(
        enabled=table.boolean("enabled", True),
        retention_days=table.number("retention_days", 7.0, minimum=1, maximum=366),
    )
    table.finish()
    return config


def _live_slo(table: TomlTable, benchmark: BenchmarkSlo) -> LiveSlo:
    """`[alerting.slo]`; TTFT and ITL targets default to `[benchmark.slo]`'s."""
    base = replace(LiveSlo(), ttft_p99_ms=benchmark.ttft_p99_ms, itl_p99_ms=benchmark.itl_p99_ms)
    low, high = 1.0, 86400.0  # a window, in seconds: a second to a day
    slo = LiveSlo(
        ttft_p99_ms=table.number("ttft_p99_ms", base.ttft_p99_ms, minimum=0),
        itl_p99_ms=table.number("itl_p99_ms", base.itl_p99_ms, minimum=0),
        e2e_p99_ms=table.number("e2e_p99_ms", base.e2e_p99_ms, minimum=0),
        failed_pct=table.number("failed_pct", base.failed_pct, minimum=0, maximum=100),
        short_window_s=table.number(
            "short_window_s", base.short_window_s, minimum=low, maximum=high
        ),
        long_window_s=table.number("long_window_s", base.long_window_s, minimum=low, maximum=high),
    )
    if slo.long_window_s <= slo.short_window_s:
        table.problem(
            "long_window_s",
            f"must be longer than short_window_s ({slo.short_window_s:g}), "
            f"got {slo.long_window_s:g}",
        )
        slo = replace(slo, long_window_s=base.long_window_s, short_window_s=base.short_window_s)
    table.finish()
    return slo


def alerting_config(
    table: TomlTable, rules: list[TomlTable], benchmark: BenchmarkSlo
) -> AlertingConfig:
    url = table.string(
        "webhook_url", pattern=re.compile(r"^https?://\S+$"), expected="an http(s) URL", secret=True
    )
    webhook = None
    if url:
        webhook = WebhookConfig(
            url=url,
            timeout_s=table.number(
                "webhook_timeout_s",
                5.0,
                minimum=WEBHOOK_TIMEOUT_S[0],
                maximum=WEBHOOK_TIMEOUT_S[1],
            ),
            retries=table.number("webhook_retries", 3, minimum=0, maximum=10, integer=True),
        )
    seen: dict[str, str] = {}
    parsed = tuple(rule for rule in (_alert_rule(item, seen) for item in rules) if rule is not None)
    config = AlertingConfig(
        rules=parsed,
        use_defaults=table.boolean("defaults", True),
        webhook=webhook,
        bell=table.boolean("bell", True),
        slo=_live_slo(table.table("slo"), benchmark),
    )
    table.finish()
    return config
