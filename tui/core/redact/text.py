"""`redact_text`: every form a secret takes in one text, and the secrets this process remembers.

Named values, the remembered exact values, the known shapes, URL credentials and PEM
private key bodies (to the END line, or to the text's end when it has none).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tui.core.redact.names import _RARE_WORDS, _STRONG_PREFIX, _WEAK_LAST, REDACTED
from tui.core.redact.shapes import _SHAPE_NEEDLES, _SHAPES, _URL_CREDENTIALS, _url_credentials
from tui.core.redact.values import _redact_named_values

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

    A secret name has a part holding a strong word, a last part holding one of
    _RARE_WORDS, or a last part ending in `key` or `token` (or being `keys`). Parts are runs
    of ASCII letters (_NAME_PARTS), so a last part is never followed by an ASCII letter: in
    ASCII text, `tokens` or `keyboard` cannot end one. Other text (a non-ASCII letter may
    lowercase to an ASCII one) is always scanned.
    """
    lower = text.lower()
    for word in (*_STRONG_PREFIX, *_RARE_WORDS):
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


_PEM_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]{0,64}PRIVATE KEY-----")
_PEM_END = re.compile(r"-----END[A-Z0-9 ]{0,64}PRIVATE KEY-----")


def _redact_pem(text: str) -> str:
    """Each PEM private key's body replaced, BEGIN to END (to the end of the text when the
    END line is not in it: a log line holding only the start of a key)."""
    pieces: list[str] = []
    position = 0
    while (begin := _PEM_BEGIN.search(text, position)) is not None:
        pieces.append(text[position : begin.end()])
        pieces.append(REDACTED)
        end = _PEM_END.search(text, begin.end())
        if end is None:
            return "".join(pieces)
        position = end.start()
    if not pieces:
        return text
    pieces.append(text[position:])
    return "".join(pieces)


def pem_left_open(text: str) -> bool:
    """Whether `text` starts a PEM private key it does not end (its body follows)."""
    begins = list(_PEM_BEGIN.finditer(text))
    return bool(begins) and _PEM_END.search(text, begins[-1].end()) is None


def redact_text(text: str, extra_secrets: Iterable[str] = ()) -> str:
    """Replace every secret-looking value (and each known secret value) with REDACTED.

    Each scan runs only when the text it would scan holds what every match of it holds
    (a log flood is mostly lines with no secret at all), so a skipped scan could not
    have matched.
    """
    for secret in _known(extra_secrets):
        text = text.replace(secret, REDACTED)
    if "-----BEGIN" in text:
        text = _redact_pem(text)
    if "://" in text:  # before the names: `://app:x/y=@db` holds a name-like `y=`
        text = _URL_CREDENTIALS.sub(_url_credentials, text)
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
