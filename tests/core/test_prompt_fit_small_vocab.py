"""Exact prompt lengths where few of the common words are one token (a small vocabulary).

The counter stands for a byte-level BPE of a few hundred tokens, like the real vLLM
harness's tiny Llama: a space-led word costs one token per character plus the space,
except " the" and the space-led digits, which are one token each. There, the common
words alone cannot make exact prompts (only " the" is one token), and the approximate
route used to send one word per asked token: 3.7 times the asked length on the real
server.
"""

from __future__ import annotations

import asyncio
import random
import string

from tui.bench.prompt_fit import SHORT_PIECES, Miss, PromptPlan, calibrate

SINGLE = {" the", *(" " + d for d in "123456789")}


def small_vocab_count(text: str, single: set[str] = SINGLE) -> int:
    """BOS plus each space-led piece: one token if in `single`, else one per character."""
    pieces = [" " + word for word in text.split(" ")[1:]]
    return 1 + sum(1 if piece in single else len(piece) for piece in pieces)


async def _counter(text: str) -> int | str:
    return small_vocab_count(text)


def test_a_small_vocabulary_still_gets_exact_prompts_from_digits() -> None:
    plan = asyncio.run(calibrate(_counter, "exact (test)", 64, seed=3))
    assert isinstance(plan, PromptPlan), plan
    assert set(plan.words) >= {" 1", " 9"} and set(plan.words) <= SINGLE | set(SHORT_PIECES)
    rng = random.Random(5)
    for asked in (12, 37, 64, 500):
        prompts = {plan.prompt(asked, rng) for _ in range(20)}
        assert {small_vocab_count(p) for p in prompts} == {asked}
        assert len(prompts) == 20  # all differ: no prefix cache shortcut


def test_without_one_token_pieces_the_approximation_uses_the_measured_ratio() -> None:
    async def letters_only(text: str) -> int | str:
        return small_vocab_count(text, single=set())

    miss = asyncio.run(calibrate(letters_only, "exact (test)", 64, seed=3))
    assert isinstance(miss, Miss)
    assert "0 of 36 digits and letters" in miss.reason
    # the common words average several characters: well under one word per token
    assert miss.words_per_token is not None and 0.1 < miss.words_per_token < 0.3
    assert set(string.digits) <= {p.strip() for p in SHORT_PIECES}
