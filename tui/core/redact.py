"""Secret redaction for everything servedeck writes: summaries, exported logs, audit
records, benchmark results, and what `status` and `logs` print.

By design, not by example:
- Structured data is redacted before it is serialised (`redact_data`): a value
  under a secret-looking key is replaced whole, every string is redacted as text.
  JSON text is never rewritten by a regex, so the output stays valid JSON.
- In text, every value of a flag, key or header whose NAME looks secret is
  replaced, in every form: `--k v`, `--k v1 v2` (a flag taking several), `--k=v`,
  `-k v`, `k=v`, `"k": "v"`, `\\"k\\": \\"v\\"` (escaped JSON), `k=b'v'`,
  `'k': ['a', 'b']`, `K: v` (headers), quoted or not, each occurrence, names of any length.
- The exact values of the secrets servedeck knows (the profile's API key, SSH
  passwords) are always replaced, whatever surrounds them.
- Well-known key shapes (sk-..., hf_..., nvapi-..., JWTs), bearer tokens, URL
  credentials (`scheme://user:pw@`, `scheme://:pw@`, `https://TOKEN@`) and PEM private
  key bodies (to the END line, or to the end of the text when it has none).
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

# A name, then `=` or `:` (or whitespace after a dashed flag). The value is scanned by hand.
_ANCHOR = re.compile(
    r"(?<![\w.\-])(?P<flag>--?)?(?P<q>[\"']?)(?P<name>[A-Za-z_][\w.\-]{0,4095})\\{0,3}(?P=q)"
    r"(?P<sep>[ \t]{0,8}[=:][ \t]{0,8}|[ \t]{1,8})"
)
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


_STRING_PREFIX = "bBrRuUfF"  # Python's string prefixes: `b'...'`, `rb"..."`


def _quoted_end(text: str, start: int) -> tuple[int, str] | None:
    """(end, what stands before the quote) when a quoted value starts at `start`: `'v'`,
    `b'v'` (a prefix of up to two letters), `\\"v\\"` (escaped JSON, up to 3 backslashes)."""
    lead = start
    while lead < len(text) and lead - start < 3 and text[lead] == "\\":
        lead += 1
    if lead == start:
        while lead < len(text) and lead - start < 2 and text[lead] in _STRING_PREFIX:
            lead += 1
    if lead >= len(text) or text[lead] not in "'\"":
        return None
    quote = text[lead]
    escape = text[start:lead] if text[start] == "\\" else ""
    if not escape:
        return _closing_quote(text, lead, quote), text[start:lead]
    closing = escape + quote
    limit = min(len(text), lead + _MAX_VALUE)
    found = text.find(closing, lead + 1, limit)
    newline = text.find("\n", lead + 1, limit)
    if found < 0 or 0 <= newline < found:
        return (newline if newline >= 0 else limit), escape
    return found + len(closing), escape


def _flag_values_end(text: str, end: int) -> int:
    """Past the further values of a dashed flag taking several (`--api-key K1 K2`): every
    word up to the next flag, the line's end or a shell separator."""
    limit = min(len(text), end + _MAX_VALUE)
    while end < limit:
        index = end
        while index < limit and text[index] in " \t":
            index += 1
        if index == end or index >= limit or text[index] in "-\r\n|&;<>#)]}":
            return end
        quoted = _quoted_end(text, index)
        after = quoted[0] if quoted else _bare_end(text, index)
        if after <= index:
            return end
        end = after
    return end


def _value_span(text: str, match: re.Match[str]) -> tuple[int, int, str] | None:
    """(start, end, replacement) of the value after a secret name, or None to leave it."""
    start = match.end()
    if start >= len(text):
        return None
    flag, quoted, sep = match.group("flag"), match.group("q"), match.group("sep")
    char = text[start]
    spaced_flag = bool(flag) and not sep.strip()
    if not sep.strip() and not flag:
        return None  # `name value` is only a form for dashed flags
    if spaced_flag and text.startswith("-", start):
        return None  # `--api-key --next-flag`: no value here
    quoted_value = _quoted_end(text, start)
    if quoted_value is not None:
        end, lead = quoted_value
        quote = text[start + len(lead)]
        if spaced_flag and _flag_values_end(text, end) > end:
            return start, _flag_values_end(text, end), REDACTED
        closing = lead if lead.startswith("\\") else ""  # `b'v'` closes with `'` alone
        return start, end, f"{lead}{quote}{REDACTED}{closing}{quote}"
    if char in "[{(":
        return start, _closing_bracket(text, start), REDACTED
    end = _bare_end(text, start)
    if spaced_flag and end > start:
        return start, _flag_values_end(text, end), REDACTED
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
        items = [_redact_value(item, known, depth + 1) for item in value]
        return _redact_argv(items) if all(isinstance(item, str) for item in items) else items
    return value


def _redact_argv(words: list[str]) -> list[str]:
    """A list of strings read as an argv: the words after a secret dashed flag
    (`["--api-key", "K1", "K2"]`), up to the next flag, each replaced."""
    secret_flag = False
    out = []
    for word in words:
        if word.startswith("-"):
            name = word.lstrip("-")
            secret_flag = bool(name) and "=" not in name and is_secret_name(name)
        elif secret_flag:
            word = REDACTED
        out.append(word)
    return out
