"""Secret redaction for everything servedeck writes: summaries, exported logs, audit
records, benchmark results, and what `status` and `logs` print.

By design, not by example:
- Structured data is redacted before it is serialised (`redact_data`): a value
  under a secret-looking key is replaced whole, every string is redacted as text.
  JSON text is never rewritten by a regex, so the output stays valid JSON.
- In text, every value of a flag, key or header whose NAME looks secret is
  replaced, in every form: `--k v`, `--k=v`, `-k v`, `k=v`, `"k": "v"`,
  `'k': ['a', 'b']`, `K: v` (headers), quoted or not, each occurrence.
- The exact values of the secrets servedeck knows (the profile's API key, SSH
  passwords) are always replaced, whatever surrounds them.
- Well-known key shapes (sk-..., hf_..., JWTs), bearer tokens and URL passwords.
Every scan is linear-time: names and values have bounded lengths and the
value extent is found by a small scanner, not by backtracking.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

REDACTED = "[REDACTED]"

# Words that make a name secret, matched per component of the name
# (`AWS_SECRET_ACCESS_KEY` -> aws, secret, access, key; `X-Api-Key`; `apiKey`).
SECRET_WORDS = (
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "auth",
    "credential",
    "cookie",
    "session",
    "private",
)
# Strong words make a name secret anywhere in it; `key` and `token` only as the last
# part, so `api_key` and `HF_TOKEN` are secret but `total_token_throughput` is not.
_STRONG_PREFIX = (
    "auth", "credential", "password", "passwd", "secret", "cookie", "session", "private"
)  # fmt: skip
_STRONG_EXACT = frozenset(("private", "secrets", "credentials"))
_LAST_EXACT = frozenset(("key", "keys", "token", "apikey"))
_LAST_SUFFIX = (*SECRET_WORDS, "credentials")
_NAME_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_MAX_NAME = 64
_MAX_VALUE = 4096
_WEAK_LAST = ("key", "keys", "token")  # how a secret last part ends (_LAST_EXACT, _LAST_SUFFIX)
_AUTH_SCHEMES = frozenset(("bearer", "basic", "token", "digest", "negotiate", "apikey"))

# A name, then `=` or `:` (or whitespace after a dashed flag). The value is scanned by hand.
_ANCHOR = re.compile(
    r"(?<![\w.\-])(?P<flag>--?)?(?P<q>[\"']?)(?P<name>[A-Za-z_][\w.\-]{0,63})(?P=q)"
    r"(?P<sep>[ \t]{0,8}[=:][ \t]{0,8}|[ \t]{1,8})"
)
_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)\b(bearer|basic)[ \t]{1,8}[A-Za-z0-9._~+/=\-]{8,4096}"), r"\1 " + REDACTED),
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{16,512}"), REDACTED),
    (re.compile(r"\bhf_[A-Za-z0-9]{20,512}"), REDACTED),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,512}"), REDACTED),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,512}"), REDACTED),
    (re.compile(r"\bxox[abpr]-[A-Za-z0-9\-]{10,512}"), REDACTED),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), REDACTED),
    (
        re.compile(
            r"\beyJ[A-Za-z0-9_\-]{10,2048}\.[A-Za-z0-9_\-]{10,2048}\.[A-Za-z0-9_\-]{10,2048}"
        ),
        REDACTED,
    ),
    # scheme://user:password@host
    (
        re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{0,31}://[^:/\s@]{1,256}:)[^@\s/]{1,256}(@)"),
        r"\1" + REDACTED + r"\2",
    ),
)

# What every match of each of _SHAPES holds, in order: (needles, needles are lowercase and
# the pattern ignores case). A pattern whose text holds no needle is not run.
_SHAPE_NEEDLES: tuple[tuple[tuple[str, ...], bool], ...] = (
    (("bearer", "basic"), True),
    (("sk-",), False),
    (("hf_",), False),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), False),
    (("github_pat_",), False),
    (("xoxa-", "xoxb-", "xoxp-", "xoxr-"), False),
    (("AKIA",), False),
    (("eyJ",), False),
    (("://",), False),
)


@functools.lru_cache(maxsize=8192)
def is_secret_name(name: str) -> bool:
    """True when a flag, variable, key or header name looks like it holds a secret.

    Cached: every word of a log line is a candidate name, and a flood repeats its words.
    """
    name = name.strip().lstrip("-")
    if not name or len(name) > _MAX_NAME:
        return False
    parts = [part.lower() for part in _NAME_PARTS.findall(name)]
    if not parts:
        return False
    if any(
        part in _STRONG_EXACT or part.startswith(_STRONG_PREFIX) or part.endswith(_STRONG_PREFIX)
        for part in parts
    ):
        return True
    last = parts[-1]
    return last in _LAST_EXACT or last.endswith(_LAST_SUFFIX)


def _closing_quote(text: str, start: int, quote: str) -> int:
    """Index just past the quote closing the one at `start` (or the scan limit)."""
    limit = min(len(text), start + _MAX_VALUE)
    index = start + 1
    while index < limit:
        char = text[index]
        if char == "\\" and quote == '"':
            index += 2
            continue
        if char == quote:
            return index + 1
        if char == "\n":
            return index
        index += 1
    return limit


def _closing_bracket(text: str, start: int) -> int:
    """Index just past the bracket matching the one at `start`, quotes respected."""
    pairs = {"[": "]", "{": "}", "(": ")"}
    stack = [pairs[text[start]]]
    limit = min(len(text), start + _MAX_VALUE)
    index = start + 1
    while index < limit and stack:
        char = text[index]
        if char in "'\"":
            index = _closing_quote(text, index, char)
            continue
        if char in pairs:
            stack.append(pairs[char])
        elif char == stack[-1]:
            stack.pop()
        elif char == "\n":
            break
        index += 1
    return index


def _bare_end(text: str, start: int) -> int:
    limit = min(len(text), start + _MAX_VALUE)
    index = start
    while index < limit and text[index] not in " \t\r\n,;'\"}])":
        index += 1
    return index


def _value_span(text: str, match: re.Match[str]) -> tuple[int, int, str] | None:
    """(start, end, replacement) of the value after a secret name, or None to leave it."""
    start = match.end()
    if start >= len(text):
        return None
    flag, quoted, sep = match.group("flag"), match.group("q"), match.group("sep")
    char = text[start]
    if not sep.strip() and not flag:
        return None  # `name value` is only a form for dashed flags
    if flag and not sep.strip() and text.startswith("-", start):
        return None  # `--api-key --next-flag`: no value here
    if char in "'\"":
        end = _closing_quote(text, start, char)
        return start, end, f"{char}{REDACTED}{char}"
    if char in "[{(":
        return start, _closing_bracket(text, start), REDACTED
    end = _bare_end(text, start)
    if end == start:
        return None
    value = text[start:end]
    if ":" in sep and not quoted and not flag:
        if value.lower() in _AUTH_SCHEMES:  # `Authorization: Basic dXNlcjpw`
            after = end
            while after < len(text) and text[after] in " \t" and after - end < 8:
                after += 1
            token_end = _bare_end(text, after)
            if token_end > after:
                return start, token_end, f"{value} {REDACTED}"
        name = match.group("name")
        if name.islower() and name.isalpha() and len(value) < 6:
            return None  # prose such as "KV per token: MLA latent"
    return start, end, REDACTED


def _redact_named_values(text: str) -> str:
    pieces: list[str] = []
    position = 0
    for match in _ANCHOR.finditer(text):
        if match.start() < position or not is_secret_name(match.group("name")):
            continue
        span = _value_span(text, match)
        if span is None:
            continue
        start, end, replacement = span
        pieces.append(text[position:start])
        pieces.append(replacement)
        position = end
    if not pieces:
        return text
    pieces.append(text[position:])
    return "".join(pieces)


_REMEMBERED: set[str] = set()  # secret values this process knows (in memory only)


def remember_secret(value: str | None) -> None:
    """Redact this exact value from everything servedeck writes, from now on.

    The deck registers the profile's API key when it opens, so an audit record,
    a process listing or a log line redacts it with no caller passing it along.
    """
    if value and len(value.strip()) >= 6:  # shorter would mangle ordinary words
        _REMEMBERED.add(value)


def _known(extra_secrets: Iterable[str]) -> list[str]:
    """Known secret values, longest first (so a value containing another goes whole)."""
    values = {s for s in extra_secrets if s and len(s) >= 4} | _REMEMBERED
    return sorted(values, key=len, reverse=True)


def _may_hold_secret_name(text: str) -> bool:
    """False only when no name in `text` can pass is_secret_name, so the scan is skipped.

    A secret name has a part holding a strong word, or a last part ending in `key` or
    `token` (or being `keys`). Parts are runs of ASCII letters (_NAME_PARTS), so a last part
    is never followed by an ASCII letter: in ASCII text, `tokens` or `keyboard` cannot end
    one. Other text (a non-ASCII letter may lowercase to an ASCII one) is always scanned.
    """
    lower = text.lower()
    for word in _STRONG_PREFIX:
        if word in lower:
            return True
    if not text.isascii():
        return "key" in lower or "token" in lower
    for word in _WEAK_LAST:
        start = lower.find(word)
        while start >= 0:
            after = start + len(word)
            if after >= len(lower) or not ("a" <= lower[after] <= "z"):
                return True
            start = lower.find(word, after)
    return False


def redact_text(text: str, extra_secrets: Iterable[str] = ()) -> str:
    """Replace every secret-looking value (and each known secret value) with REDACTED.

    Each scan runs only when the text it would scan holds what every match of it holds
    (a log flood is mostly lines with no secret at all), so a skipped scan could not
    have matched.
    """
    for secret in _known(extra_secrets):
        text = text.replace(secret, REDACTED)
    if _may_hold_secret_name(text):
        text = _redact_named_values(text)
    for (pattern, replacement), (needles, folded) in zip(_SHAPES, _SHAPE_NEEDLES, strict=True):
        if folded:
            # Lowercasing is exact case-insensitive matching for ASCII text only.
            lower = text.lower()
            if text.isascii() and not any(needle in lower for needle in needles):
                continue
        elif not any(needle in text for needle in needles):
            continue
        text = pattern.sub(replacement, text)
    return text


# What redact_lines searches a batch for, lowercased: every strong word and every shape's
# needle, lowercased, holds one of these (or matches _BATCH_GH), so a line holding none of
# them passes redact_text unchanged. tests/core/test_redact_batch.py checks the cover.
_BATCH_NEEDLES = (
    "auth", "credential", "passw", "secret", "cookie", "session", "private",
    "bearer", "basic", "sk-", "hf_", "github_pat_", "xox", "akia", "eyj", "://",
)  # fmt: skip
_BATCH_GH = re.compile(r"gh[pousr]_")
# A weak last part (`key`, `keys`, `token`) not followed by an ASCII letter: exactly the
# test _may_hold_secret_name makes in ASCII text (a line's end reads as the joint's `\n`).
_BATCH_WEAK = tuple(re.compile(re.escape(word) + "(?![a-z])") for word in _WEAK_LAST)


def redact_lines(texts: Sequence[str], extra_secrets: Iterable[str] = ()) -> list[str]:
    """`[redact_text(t, extra_secrets) for t in texts]`, at a log flood's pace.

    The batch is searched once (joined, lowercased) for anything that could start a
    redaction: a known secret, a secret name's word, a shape's literal. Only the lines
    holding one (and every non-ASCII line, whose lowercasing is not one-to-one) go through
    redact_text; a line holding none would come back unchanged from it.
    """
    extra = tuple(extra_secrets)
    known = _known(extra)
    marked = [not text.isascii() for text in texts]
    scanned = [index for index, flag in enumerate(marked) if not flag]
    if len(scanned) == len(texts):
        joined = "\n".join(texts)
    else:
        joined = "\n".join(texts[index] for index in scanned)
    starts: list[int] = []  # where each scanned line starts in `joined`
    position = 0
    for index in scanned:
        starts.append(position)
        position += len(texts[index]) + 1

    def mark(begin: int, end: int) -> None:
        """Every scanned line overlapping joined[begin:end]."""
        first = bisect.bisect_right(starts, begin) - 1
        last = bisect.bisect_right(starts, max(begin, end - 1)) - 1
        for slot in range(first, last + 1):
            marked[scanned[slot]] = True

    if scanned:
        lower = joined.lower()  # ASCII only: one character for one
        for needle in _BATCH_NEEDLES:
            found = lower.find(needle)
            while found >= 0:
                mark(found, found + len(needle))
                found = lower.find(needle, found + 1)
        for pattern in (_BATCH_GH, *_BATCH_WEAK):
            for match in pattern.finditer(lower):
                mark(match.start(), match.end())
        for secret in known:  # case as given; may span a joint, which only marks more
            found = joined.find(secret)
            while found >= 0:
                mark(found, found + len(secret))
                found = joined.find(secret, found + 1)
    if not any(marked):
        return list(texts)
    return [
        redact_text(text, extra) if flag else text for text, flag in zip(texts, marked, strict=True)
    ]


def redact_data(data: Any, extra_secrets: Iterable[str] = ()) -> Any:
    """A copy of JSON-like data with secrets replaced, ready to serialise.

    A value under a secret-looking key is replaced whole (lists and tables too);
    every other string goes through redact_text; keys themselves are redacted as text.
    """
    known = tuple(_known(extra_secrets))
    return _redact_value(data, known, 0)


def _redact_value(value: Any, known: tuple[str, ...], depth: int) -> Any:
    if depth > 200:
        return REDACTED  # deeper than any fact servedeck collects: not worth the risk
    if isinstance(value, str):
        return redact_text(value, known)
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            name = key if isinstance(key, str) else str(key)
            safe_key = redact_text(name, known) if isinstance(key, str) else key
            if is_secret_name(name) and item not in (None, "", [], {}):
                out[safe_key] = REDACTED
            else:
                out[safe_key] = _redact_value(item, known, depth + 1)
        return out
    if isinstance(value, list | tuple):
        return [_redact_value(item, known, depth + 1) for item in value]
    return value
