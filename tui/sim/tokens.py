"""The simulator's tokenizer: a deterministic, documented approximation.

Text is cut into 4-character pieces; each piece is one token (a trailing
shorter piece is a token too), so `count_tokens(text) == ceil(len(text) / 4)`.
Generated text is made only of 4-character vocabulary pieces, so tokenizing a
streamed output gives back exactly the number of tokens that were streamed,
and `/detokenize` of the ids `/tokenize` returned gives the text back whenever
every piece is in the vocabulary.
"""

from __future__ import annotations

import random
import zlib

CHARS_PER_TOKEN = 4

_WORDS = (
    " the model GPU  each fast tensor load cache kernel batch token shard weight"
    " layer expert route serve queue graph node rank peer ring sync step time"
    " data path host core warp lane tile page byte word line file unit done"
)
# Every vocabulary entry is exactly CHARS_PER_TOKEN characters long.
_PIECES = (" " + word for word in _WORDS.split())
_EXTRA = (" is ", " an ", " of ", " to ", " in ", ". A ", ", a ", " on ")
VOCAB: tuple[str, ...] = (
    *dict.fromkeys(p.ljust(CHARS_PER_TOKEN)[:CHARS_PER_TOKEN] for p in _PIECES),
    *_EXTRA,
)
_PIECE_TO_ID = {piece: index for index, piece in enumerate(VOCAB)}
UNKNOWN_BASE = 1_000
UNKNOWN_SPAN = 100_000


def count_tokens(text: str) -> int:
    """How many tokens the simulator charges for `text`."""
    return -(-len(text) // CHARS_PER_TOKEN)


def tokenize(text: str) -> list[int]:
    """Token ids of `text`: vocabulary pieces keep their index, others hash above it."""
    ids: list[int] = []
    for start in range(0, len(text), CHARS_PER_TOKEN):
        piece = text[start : start + CHARS_PER_TOKEN]
        known = _PIECE_TO_ID.get(piece)
        if known is None:
            known = UNKNOWN_BASE + zlib.crc32(piece.encode()) % UNKNOWN_SPAN
        ids.append(known)
    return ids


def detokenize(ids: list[int]) -> str:
    """Text of token ids; ids outside the vocabulary read as "<?>" (not invertible)."""
    return "".join(VOCAB[i] if 0 <= i < len(VOCAB) else "<?>" for i in ids)


def output_pieces(seed: int, request_number: int, count: int) -> list[str]:
    """The `count` token texts the simulator streams for one request, reproducibly."""
    rng = random.Random(seed * 1_000_003 + request_number)
    return [VOCAB[rng.randrange(len(VOCAB))] for _ in range(count)]


def chat_prompt_tokens(messages: list[dict[str, object]]) -> int:
    """Prompt tokens of a chat request: the contents plus 4 template tokens per message."""
    total = 0
    for message in messages:
        content = message.get("content", "")
        if isinstance(content, list):
            content = "".join(
                str(part.get("text", "")) for part in content if isinstance(part, dict)
            )
        total += count_tokens(str(content)) + 4
    return max(total, 1)


# Ids standing for the chat template's tokens around each message (role markers).
TEMPLATE_IDS = {"system": 900, "user": 901, "assistant": 902, "tool": 903}


def chat_token_ids(messages: list[dict[str, object]]) -> list[int]:
    """The ids of a rendered chat prompt: 4 template ids then the content, per message.

    Its length is `chat_prompt_tokens(messages)` (for a non-empty list), and a
    conversation's earlier turns are a prefix of its later ones, as with vLLM's
    chat templates, so the prefix cache can hit a whole history.
    """
    ids: list[int] = []
    for message in messages:
        content = message.get("content", "")
        if isinstance(content, list):
            content = "".join(
                str(part.get("text", "")) for part in content if isinstance(part, dict)
            )
        ids += [TEMPLATE_IDS.get(str(message.get("role")), 904)] * 4
        ids += tokenize(str(content))
    return ids
