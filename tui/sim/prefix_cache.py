"""The simulator's prefix cache: vLLM's automatic prefix caching, block by block.

A prompt's token ids are cut into blocks of BLOCK_TOKENS; each full block is
keyed by a hash chained over every block before it, so a block hits only when
the whole prefix up to it was seen. As in vLLM, only full blocks are cached,
the last prompt token is always computed (at most len - 1 tokens hit), and the
least recently used blocks are evicted when the cache holds `capacity_blocks`.
`POST /reset_prefix_cache` empties it.
"""

from __future__ import annotations

import collections
import hashlib

BLOCK_TOKENS = 16


class PrefixCache:
    """Chained block hashes in LRU order."""

    def __init__(self, capacity_blocks: int, block_tokens: int = BLOCK_TOKENS) -> None:
        self.capacity_blocks = max(capacity_blocks, 0)
        self.block_tokens = block_tokens
        self._blocks: collections.OrderedDict[bytes, None] = collections.OrderedDict()

    def _keys(self, ids: list[int]) -> list[bytes]:
        keys, parent = [], b""
        usable = (len(ids) - 1) // self.block_tokens  # the last token is always computed
        for index in range(usable):
            block = ids[index * self.block_tokens : (index + 1) * self.block_tokens]
            parent = hashlib.blake2b(parent + repr(block).encode(), digest_size=16).digest()
            keys.append(parent)
        return keys

    def lookup_and_insert(self, ids: list[int]) -> int:
        """Tokens of `ids` already cached (a full-block prefix); then cache its blocks."""
        keys = self._keys(ids)
        hits = 0
        for key in keys:
            if key not in self._blocks:
                break
            hits += 1
        for key in keys:
            self._blocks[key] = None
            self._blocks.move_to_end(key)
        while len(self._blocks) > self.capacity_blocks:
            self._blocks.popitem(last=False)
        return hits * self.block_tokens

    def reset(self) -> None:
        self._blocks.clear()
