"""A batch of log lines redacted at once: one search of its line shapes finds the few to scan.

`redact_lines` and `LineRedactor` (which keeps a PEM block open across batches) give
what redact_text gives each line, at well under a microsecond a line in a flood.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence

from tui.core.redact.names import _WEAK_LAST, REDACTED
from tui.core.redact.text import _PEM_END, _known, pem_left_open, redact_text

# What redact_lines searches a batch for, lowercased: every strong and rare word and every
# shape's needle, lowercased, holds one of these (or matches _BATCH_GH), so a line holding
# none of them passes redact_text unchanged. tests/core/test_redact_batch.py checks the
# cover. None holds a digit: they are searched in the batch's line shapes (_line_shapes).
_BATCH_NEEDLES = (
    "auth", "credential", "pass", "pw", "sig", "secret", "cookie", "session", "private",
    "bearer", "basic", "sk-", "hf_", "nvapi-", "github_pat_", "xox", "akia", "eyj", "://",
    "-----begin",
)  # fmt: skip
_BATCH_GH = re.compile(r"gh[pousr]_")
# A weak last part (`key`, `keys`, `token`) not followed by an ASCII letter: exactly the
# test _may_hold_secret_name makes in ASCII text (a line's end reads as the joint's `\n`).
_BATCH_WEAK = tuple(re.compile(re.escape(word) + "(?![a-z])") for word in _WEAK_LAST)
# The same, for the batch's bytes (it is searched as ASCII bytes: bytes.translate folds it)
_NEEDLE_BYTES = tuple(needle.encode() for needle in _BATCH_NEEDLES)
_PATTERN_BYTES = tuple(
    re.compile(pattern.pattern.encode()) for pattern in (_BATCH_GH, *_BATCH_WEAK)
)
# ASCII lowercased and every digit read as 0, in one bytes.translate
_SHAPE_TABLE = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZ123456789", b"abcdefghijklmnopqrstuvwxyz000000000"
)


def _line_shapes(folded: bytes) -> bytes:
    """The distinct lines of `folded` (digits already read as 0), each after a newline: a
    flood's lines differ mostly in their numbers, so a batch of 1,000 is a few dozen
    shapes, and a needle (no digit in it) is in a line exactly when it is in its shape."""
    return b"\n" + b"\n".join(set(folded.split(b"\n")))


def _marked_lines(texts: Sequence[str], known: Sequence[str]) -> list[bool]:
    """Which lines could come back changed from redact_text: those holding a needle, a
    weak word's end, a known secret (or part of one across a joint), and every non-ASCII
    line (its lowercasing is not one character for one)."""
    joined = "\n".join(texts)
    if joined.isascii():  # the common batch: one test, not one a line
        marked = [False] * len(texts)
        scanned: Sequence[int] = range(len(texts))
    else:
        marked = [not text.isascii() for text in texts]
        scanned = [index for index, flag in enumerate(marked) if not flag]
        if not scanned:
            return marked
        joined = "\n".join(texts[index] for index in scanned)
    starts: list[int] | None = None  # where each scanned line starts in `joined`, once needed

    def mark(begin: int, end: int) -> None:
        """Every scanned line overlapping joined[begin:end]."""
        nonlocal starts
        if starts is None:
            starts, position = [], 0
            for index in scanned:
                starts.append(position)
                position += len(texts[index]) + 1
        first = bisect.bisect_right(starts, begin) - 1
        last = bisect.bisect_right(starts, max(begin, end - 1)) - 1
        for slot in range(first, last + 1):
            marked[scanned[slot]] = True

    folded = joined.encode("ascii").translate(_SHAPE_TABLE)  # one byte for one character
    shapes = _line_shapes(folded)
    for needle in _NEEDLE_BYTES:
        if needle in shapes:
            found = folded.find(needle)
            while found >= 0:
                mark(found, found + len(needle))
                found = folded.find(needle, found + 1)
    for pattern in _PATTERN_BYTES:
        if pattern.search(shapes):
            for match in pattern.finditer(folded):
                mark(match.start(), match.end())
    for secret in known:  # case as given; may span a joint, which only marks more
        found = joined.find(secret)
        while found >= 0:
            mark(found, found + len(secret))
            found = joined.find(secret, found + 1)
    return marked


def redact_lines(texts: Sequence[str], extra_secrets: Iterable[str] = ()) -> list[str]:
    """`[redact_text(t, extra_secrets) for t in texts]`, at a log flood's pace.

    The batch is searched once for anything that could start a redaction (a known secret,
    a secret name's word, a shape's literal), over its distinct line shapes first. Only the
    lines holding one (and every non-ASCII line) go through redact_text; a line holding
    none would come back unchanged from it.
    """
    return _redact_marked(texts, tuple(extra_secrets))[0]


def _redact_marked(texts: Sequence[str], extra: tuple[str, ...]) -> tuple[list[str], list[int]]:
    """redact_lines, and the indices of the lines that went through redact_text."""
    marked = _marked_lines(texts, _known(extra))
    if True not in marked:
        return list(texts), []
    out = list(texts)
    indices = [index for index, flag in enumerate(marked) if flag]
    for index in indices:
        out[index] = redact_text(out[index], extra)
    return out, indices


class LineRedactor:
    """redact_lines over a stream of batches (a log as it is read): a PEM private key
    printed over several lines is redacted from its BEGIN line to its END line, however
    the reads cut it."""

    def __init__(self, extra_secrets: Iterable[str] = ()) -> None:
        self.extra_secrets = tuple(extra_secrets)
        self._in_key = False  # inside a private key's body, its END line not read yet

    def __call__(self, texts: Sequence[str]) -> list[str]:
        out, redacted = _redact_marked(texts, self.extra_secrets)
        if not self._in_key and not any("-----BEGIN" in texts[index] for index in redacted):
            return out
        for index, text in enumerate(texts):
            rest = text
            if self._in_key:
                end = _PEM_END.search(text)
                if end is None:
                    out[index] = REDACTED
                    continue
                out[index] = REDACTED + redact_text(text[end.start() :], self.extra_secrets)
                rest = text[end.end() :]
            self._in_key = pem_left_open(rest)
        return out
