"""Which names hold a secret: a flag's, variable's, key's or header's, by the words it is made of.

Strong words make a name secret anywhere in it; `key` and `token` only as its last part,
so `api_key` and `HF_TOKEN` are secret but `total_token_throughput` is not.
"""

from __future__ import annotations

import functools
import re

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
_LAST_EXACT = frozenset(
    ("key", "keys", "token", "apikey", "pass", "passphrase", "signature", "sig")
)
_LAST_SUFFIX = (*SECRET_WORDS, "credentials")
# Short last parts that name a secret only after a qualifier: `MYSQL_PWD`, `DB_PW`
# (a bare `PWD` is the working directory).
_QUALIFIED_LAST = frozenset(("pwd", "pw"))
# What the last parts above hold (lowercased), for the quick test that skips a scan.
_RARE_WORDS = ("pass", "pw", "sig")
_NAME_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_MAX_NAME = 4096
_MAX_VALUE = 4096
_WEAK_LAST = ("key", "keys", "token")  # how a secret last part ends (_LAST_EXACT, _LAST_SUFFIX)
_AUTH_SCHEMES = frozenset(("bearer", "basic", "token", "digest", "negotiate", "apikey"))


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
    if len(parts) > 1 and last in _QUALIFIED_LAST:
        return True
    return last in _LAST_EXACT or last.endswith(_LAST_SUFFIX)
