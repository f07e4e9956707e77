"""Secrets known by their shape: key prefixes (sk-, hf_, nvapi-, ...), JWTs, bearer tokens, URL credentials.

Each shape comes with the needles every match holds, so a text holding none is not scanned.
"""

from __future__ import annotations

import re

from tui.core.redact.names import REDACTED

_SSH_SCHEMES = ("ssh", "sftp", "scp", "git+ssh", "ssh+git")
_PORT_PATH = re.compile(r"\d{1,5}(?:/|$)")


def _url_credentials(match: re.Match[str]) -> str:
    """`scheme://user:pw@`, `scheme://:pw@` or `https://TOKEN@` with the secret part replaced.

    A password may hold `/` (`redis://:a/b@h`); `host:8000/p@x` is a port, not a password.
    A user alone is a token (`https://TOKEN@github.com`) except in an SSH URL's `user@`.
    """
    scheme, user, password = match.group(1), match.group(2), match.group(3)
    if password is not None:
        if _PORT_PATH.match(password):
            return match.group(0)
        return f"{scheme}{user}:{REDACTED}@"
    if not user or scheme[:-3].lower() in _SSH_SCHEMES:
        return match.group(0)
    return f"{scheme}{REDACTED}@"


_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)\b(bearer|basic)[ \t]{1,8}[A-Za-z0-9._~+/=\-]{8,4096}"), r"\1 " + REDACTED),
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{16,512}"), REDACTED),
    (re.compile(r"\bhf_[A-Za-z0-9]{20,512}"), REDACTED),
    (re.compile(r"\bnvapi-[A-Za-z0-9_\-]{16,512}"), REDACTED),
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
)
# scheme://user:password@host, scheme://:password@host, scheme://token@host
_URL_CREDENTIALS = re.compile(
    r"(?i)\b([a-z][a-z0-9+.\-]{0,31}://)([^:/\s@]{0,256})(?::([^@\s]{1,256}))?@"
)

# What every match of each of _SHAPES holds, in order: (needles, needles are lowercase and
# the pattern ignores case). A pattern whose text holds no needle is not run.
_SHAPE_NEEDLES: tuple[tuple[tuple[str, ...], bool], ...] = (
    (("bearer", "basic"), True),
    (("sk-",), False),
    (("hf_",), False),
    (("nvapi-",), False),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), False),
    (("github_pat_",), False),
    (("xoxa-", "xoxb-", "xoxp-", "xoxr-"), False),
    (("AKIA",), False),
    (("eyJ",), False),
)
