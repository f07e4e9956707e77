"""The simulator's speculative-decoding counters, as vLLM's SpecDecodingProm counts them.

Each decode step of a request is one draft of `num_speculative_tokens` tokens;
position i is accepted only when every earlier one was, each with probability
`acceptance` (a seeded draw, so a run repeats). The counters are the ones vLLM
exposes (vllm/v1/spec_decode/metrics.py): drafts, draft tokens, accepted tokens
and accepted tokens per position. The token stream itself is unchanged: only the
figures an operator reads are simulated.
"""

from __future__ import annotations

import random


class SimSpecDecode:
    """Counters of one engine's drafts."""

    def __init__(self, num_speculative_tokens: int, acceptance: float, seed: int) -> None:
        self.num_speculative_tokens = num_speculative_tokens
        self.acceptance = min(max(acceptance, 0.0), 1.0)
        self.drafts = 0
        self.draft_tokens = 0
        self.accepted_tokens = 0
        self.accepted_per_pos = [0] * num_speculative_tokens
        self._rng = random.Random(seed)

    def observe(self, drafts: int) -> None:
        """`drafts` requests each verified one draft this step."""
        for _ in range(drafts):
            self.drafts += 1
            self.draft_tokens += self.num_speculative_tokens
            for position in range(self.num_speculative_tokens):
                if self._rng.random() >= self.acceptance:
                    break
                self.accepted_tokens += 1
                self.accepted_per_pos[position] += 1
