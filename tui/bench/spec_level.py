"""A level's speculative decoding, from the server's /metrics deltas over that level.

With speculative decoding a request gets 1 + accepted / drafts tokens per engine step and
vLLM streams them as one chunk, so the client's ITL (time between chunks) is a chunk's,
not a token's: the lines say how many tokens a chunk bundled and the ITL per token.
Nothing is said for a level without a draft (speculative decoding off, or no /metrics).
"""

from __future__ import annotations

from tui.bench.model import LevelResult


def spec_lines(level: LevelResult) -> list[str]:
    """At most two lines of 80 columns: acceptance, then ITL per chunk and per token."""
    server = level.server
    rate = server.spec_acceptance_rate if server is not None else None
    chunk = server.tokens_per_chunk if server is not None else None
    if server is None or rate is None or chunk is None:
        return []
    lines = [
        f"  spec    acceptance {100 * rate:.1f}% ({server.spec_accepted_tokens:,.0f} of "
        f"{server.spec_draft_tokens:,.0f} draft tokens), {chunk:.2f} tokens per chunk"
    ]
    if level.itl.count:
        median = level.itl.median_ms
        lines.append(
            f"  ITL is per chunk: median {median:,.2f} ms / {chunk:.2f} tokens = "
            f"{median / chunk:,.2f} ms per token"
        )
    return lines
