"""Secret redaction for everything servedeck writes: summaries, exported logs, audit records.

Patterns cover bearer tokens, common API key shapes, `--api-key X` style flags,
`KEY=value` env assignments whose name suggests a secret, and URL passwords.
"""

from __future__ import annotations

import re

REDACTED = "[REDACTED]"

# A name that ends in a secret word: api_key, HF_TOKEN, db-password; not "tokenizer".
_SECRET_NAME = (
    r"(?:[A-Za-z0-9_.-]*[_.-])?"
    r"(?:api[_-]?key|token|secret|passw(?:or)?d|passwd|credentials?)(?![A-Za-z0-9])"
)
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Authorization: Bearer xyz / Basic xyz
    (
        re.compile(r"(?i)(authorization\s*[:=]\s*)(bearer|basic|token)\s+[^\s'\"]+"),
        r"\1\2 " + REDACTED,
    ),
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 " + REDACTED),
    # --api-key X, --token=X, --hf-token X
    (
        re.compile(rf"(?i)(--{_SECRET_NAME})(=|\s+)(?!-)([^\s'\"]+)"),
        r"\1\2" + REDACTED,
    ),
    # NAME=value or "name": "value" where NAME looks secret
    (
        re.compile(rf"(?i)\b({_SECRET_NAME})(\s*=\s*)(['\"]?)[^\s'\",]+\3"),
        r"\1\2\3" + REDACTED + r"\3",
    ),
    (re.compile(rf"(?i)(\"{_SECRET_NAME}\"\s*:\s*\")[^\"]*(\")"), r"\1" + REDACTED + r"\2"),
    # `token: value` (YAML, headers): a value of 6+ characters, so prose such as
    # "KV per token: MLA latent" stays readable
    (re.compile(rf"(?i)\b({_SECRET_NAME})(:\s+)[^\s'\",]{{6,}}"), r"\1\2" + REDACTED),
    # well-known key shapes
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), REDACTED),
    (re.compile(r"\bhf_[A-Za-z0-9]{20,}"), REDACTED),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), REDACTED),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"), REDACTED),
    # scheme://user:password@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^:/\s@]+:)[^@\s/]+(@)"), r"\1" + REDACTED + r"\2"),
)


def redact_text(text: str, extra_secrets: tuple[str, ...] = ()) -> str:
    """Replace every secret-looking span (and each known secret value) with REDACTED."""
    for secret in extra_secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text
