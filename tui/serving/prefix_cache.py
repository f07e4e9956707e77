"""Why the prefix cache does not hit: the reason, when one can be known, else "unknown".

Hits = 0 looks the same whether nothing is shared, caching is off, or the shared prefix is
shorter than one KV block (vLLM caches whole blocks only: a prefix of 100 tokens with a
block of 128 never hits). The figures come from vLLM's own names: counters
`vllm:prefix_cache_queries` / `vllm:prefix_cache_hits` (tokens) and the info gauge
`vllm:cache_config_info` whose labels carry `enable_prefix_caching` and `block_size`
(PrometheusStatLogger in vllm/v1/metrics/loggers.py; CacheConfig.metrics_info); without
that gauge, the log's `non-default args: {...}` line (vllm/entrypoints/serve/utils/api_utils.py) says
what the operator changed (`enable_prefix_caching`, `block_size`). `explain` is pure.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui.serving.metrics import MetricsScrape, ServerMetrics

QUERIES = "vllm:prefix_cache_queries"
HITS = "vllm:prefix_cache_hits"
CACHE_CONFIG = "vllm:cache_config_info"
PREFIX_CACHE_FAMILIES = frozenset((QUERIES, HITS, CACHE_CONFIG))
# Hits below this share of what the workload intends are "far below" it.
FAR_BELOW = 0.5
KV_NEAR_FULL_PCT = 90.0
_ARGS_LINE = re.compile(r"non-default args: (\{.*\})\s*$")


@dataclass(frozen=True, slots=True)
class PrefixCacheFigures:
    """The cache's answer over the interval and its configuration (None: not exposed)."""

    queries_tokens: int | None
    hits_tokens: int | None
    enabled: bool | None
    block_size_tokens: int | None

    @property
    def hit_rate(self) -> float | None:
        if not self.queries_tokens or self.hits_tokens is None:
            return None
        return self.hits_tokens / self.queries_tokens


@dataclass(frozen=True, slots=True)
class PrefixCacheInputs:
    """What `explain` weighs; every field None when it cannot be known."""

    hit_rate: float | None  # hits / queried tokens over the window
    queries_tokens: int | None
    enabled: bool | None  # prefix caching on in the engine
    block_size_tokens: int | None
    intended_hit_rate: float | None = None  # the workload's (bench), 0..1
    shared_prefix_tokens: int | None = None  # the workload's intended shared prefix
    common_prefix_tokens: int | None = None  # what the prompts sent share from token 0
    kv_usage_pct: float | None = None
    preemptions_in_window: int | None = None


@dataclass(frozen=True, slots=True)
class PrefixCacheVerdict:
    """`reason`: off, short-prefix, prefix-differs, evicted or unknown; `text` says it."""

    reason: str
    text: str
    hit_rate: float | None
    intended_hit_rate: float | None


def _bool(value: str | None) -> bool | None:
    return {"True": True, "False": False}.get(value or "")


def _int(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


def prefix_cache_figures(
    current: MetricsScrape, previous: MetricsScrape | None = None
) -> PrefixCacheFigures | None:
    """Over the interval since `previous` (else the server's life); None: nothing exposed."""
    config = current.labelled(CACHE_CONFIG)
    labels = config[0][0] if config else {}
    if QUERIES not in current.values and not labels:
        return None

    def delta(name: str) -> int | None:
        now = current.values.get(name)
        if now is None:
            return None
        before = previous.values.get(name) if previous is not None else None
        return int(now - before) if before is not None and before <= now else int(now)

    return PrefixCacheFigures(
        queries_tokens=delta(QUERIES),
        hits_tokens=delta(HITS),
        enabled=_bool(labels.get("enable_prefix_caching")),
        block_size_tokens=_int(labels.get("block_size")),
    )


def args_from_log(lines: list[str] | tuple[str, ...]) -> tuple[bool | None, int | None]:
    """(enable_prefix_caching, block_size) from the last `non-default args` line; None unsaid."""
    for line in reversed(lines):
        found = _ARGS_LINE.search(line)
        if found is None:
            continue
        try:
            args = ast.literal_eval(found.group(1))
        except (ValueError, SyntaxError, RecursionError):
            # A config object's repr (`KVTransferConfig(...)` with --kv-transfer-config) is
            # no literal: the two keys are read from the text itself.
            return _key_from_text(found.group(1))
        if not isinstance(args, dict):
            return None, None
        enabled = args.get("enable_prefix_caching")
        block = args.get("block_size")
        return (
            enabled if isinstance(enabled, bool) else None,
            block if isinstance(block, int) and not isinstance(block, bool) else None,
        )
    return None, None


_ENABLED_TEXT = re.compile(r"""['"]enable_prefix_caching['"]\s*:\s*(True|False)\b""")
_BLOCK_TEXT = re.compile(r"""['"]block_size['"]\s*:\s*(\d+)\b""")


def _key_from_text(text: str) -> tuple[bool | None, int | None]:
    enabled = _ENABLED_TEXT.search(text)
    block = _BLOCK_TEXT.search(text)
    return (
        None if enabled is None else enabled.group(1) == "True",
        None if block is None else int(block.group(1)),
    )


def _pct(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate * 100:.0f}%"


def explain(inputs: PrefixCacheInputs) -> PrefixCacheVerdict | None:
    """The reason hits are 0 or far below the intended rate; None when nothing needs one."""
    rate, intended = inputs.hit_rate, inputs.intended_hit_rate
    if inputs.enabled is False:
        return PrefixCacheVerdict(
            "off",
            "prefix caching is off in the engine's args (enable_prefix_caching=False)",
            rate,
            intended,
        )
    if rate is None:
        return None  # nothing queried: no miss to explain
    if intended is not None:
        if intended <= 0 or rate >= intended * FAR_BELOW:
            return None
    elif rate > 0:
        return None  # hits, and no intent to compare them with
    head = f"prefix cache hits {_pct(rate)}" + (
        f", the workload intends {_pct(intended)}" if intended is not None else ""
    )
    block, shared = inputs.block_size_tokens, inputs.shared_prefix_tokens
    if block and shared is not None and shared < block:
        return PrefixCacheVerdict(
            "short-prefix",
            f"{head}: the shared prefix ({shared} tokens) is shorter than one KV block "
            f"({block} tokens); vLLM caches whole blocks only",
            rate,
            intended,
        )
    common = inputs.common_prefix_tokens
    if common is not None and (block is None or common < block):
        return PrefixCacheVerdict(
            "prefix-differs",
            f"{head}: the prompts differ from token {common} (a chat template or a timestamp "
            "before the shared text), so no whole block is shared",
            rate,
            intended,
        )
    kv, preempted = inputs.kv_usage_pct, inputs.preemptions_in_window
    if (kv is not None and kv >= KV_NEAR_FULL_PCT) or (preempted or 0) > 0:
        evidence = ", ".join(
            part
            for part in (
                f"KV cache {kv:.0f}% full" if kv is not None else "",
                f"{preempted} preemptions" if preempted else "",
            )
            if part
        )
        return PrefixCacheVerdict(
            "evicted",
            f"{head}: cached blocks are evicted under pressure ({evidence})",
            rate,
            intended,
        )
    return PrefixCacheVerdict("unknown", f"{head}: the reason cannot be known", rate, intended)


def explain_metrics(
    metrics: ServerMetrics, log_args: tuple[bool | None, int | None] = (None, None)
) -> PrefixCacheVerdict | None:
    """The Deck's and status's verdict: /metrics first, the log's args where it says nothing."""
    figures = metrics.prefix_cache
    if figures is None and log_args == (None, None):
        return None
    enabled = figures.enabled if figures is not None else None
    block = figures.block_size_tokens if figures is not None else None
    return explain(
        PrefixCacheInputs(
            hit_rate=figures.hit_rate if figures is not None else None,
            queries_tokens=figures.queries_tokens if figures is not None else None,
            enabled=enabled if enabled is not None else log_args[0],
            block_size_tokens=block if block is not None else log_args[1],
            kv_usage_pct=metrics.kv_cache_usage_pct,
            preemptions_in_window=metrics.preemptions_in_interval,
        )
    )
