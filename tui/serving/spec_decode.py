"""Speculative decoding's acceptance from vLLM's spec-decode counters.

Names and formulas from vllm/v1/spec_decode/metrics.py (SpecDecodingProm, vLLM
0.32): counters `vllm:spec_decode_num_drafts`, `vllm:spec_decode_num_draft_tokens`,
`vllm:spec_decode_num_accepted_tokens` and `vllm:spec_decode_num_accepted_tokens_per_pos`
(label `position`, 0 .. num_speculative_tokens-1). Acceptance rate = accepted /
draft tokens; mean accepted length = 1 + accepted / drafts (the bonus token
counted, as vLLM's docstring defines it); per position = accepted at that
position / drafts. Over an interval when two scrapes are given, else over the
server's life; absent families (no speculative decoding) give None, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui.serving.metrics import MetricsScrape

DRAFTS = "vllm:spec_decode_num_drafts"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
ACCEPTED_TOKENS = "vllm:spec_decode_num_accepted_tokens"
ACCEPTED_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos"
FAMILIES = frozenset((DRAFTS, DRAFT_TOKENS, ACCEPTED_TOKENS, ACCEPTED_PER_POS))


@dataclass(frozen=True, slots=True)
class SpecDecode:
    """Acceptance over the interval (or the server's life on a first scrape)."""

    drafts: int
    draft_tokens: int
    accepted_tokens: int
    acceptance_rate: float | None  # None: no draft token in the interval
    mean_accepted_length: float | None
    per_position: tuple[float, ...]  # acceptance at draft position 0, 1, ...
    over_interval: bool

    @property
    def tokens_per_chunk(self) -> float | None:
        """Tokens one step hands a stream: what bundles a streamed ITL (mean accepted length)."""
        return self.mean_accepted_length


def _per_position(scrape: MetricsScrape) -> dict[int, float]:
    out: dict[int, float] = {}
    for labels, value in scrape.labelled(ACCEPTED_PER_POS):
        position = labels.get("position", "")
        if position.isdigit():
            out[int(position)] = out.get(int(position), 0.0) + value
    return out


def spec_decode(current: MetricsScrape, previous: MetricsScrape | None = None) -> SpecDecode | None:
    """The acceptance figures, or None when the server exposes no spec-decode counters."""
    if DRAFTS not in current.values or DRAFT_TOKENS not in current.values:
        return None
    over_interval = previous is not None and DRAFTS in previous.values
    reset = (
        over_interval and previous is not None and previous.values[DRAFTS] > current.values[DRAFTS]
    )
    earlier = previous if over_interval and not reset else None

    def delta(name: str) -> float:
        now = current.values.get(name, 0.0)
        return now - earlier.values.get(name, 0.0) if earlier is not None else now

    drafts, draft_tokens, accepted = delta(DRAFTS), delta(DRAFT_TOKENS), delta(ACCEPTED_TOKENS)
    now_pos = _per_position(current)
    before_pos = _per_position(earlier) if earlier is not None else {}
    per_position = tuple(
        (now_pos[p] - before_pos.get(p, 0.0)) / drafts if drafts > 0 else float("nan")
        for p in sorted(now_pos)
    )
    return SpecDecode(
        drafts=int(drafts),
        draft_tokens=int(draft_tokens),
        accepted_tokens=int(accepted),
        acceptance_rate=accepted / draft_tokens if draft_tokens > 0 else None,
        mean_accepted_length=1 + accepted / drafts if drafts > 0 else None,
        per_position=per_position if drafts > 0 else (),
        over_interval=earlier is not None,
    )


def spec_decode_line(figures: SpecDecode | None) -> str | None:
    """`spec accept 62% len 2.9 (pos 81/63/42%)`; None when there is nothing to say."""
    if figures is None:
        return None
    if figures.acceptance_rate is None or figures.mean_accepted_length is None:
        return "spec accept n/a (no drafts)"
    positions = "/".join(f"{rate * 100:.0f}" for rate in figures.per_position)
    tail = f" (pos {positions}%)" if positions else ""
    return (
        f"spec accept {figures.acceptance_rate * 100:.0f}% "
        f"len {figures.mean_accepted_length:.2f}{tail}"
    )
