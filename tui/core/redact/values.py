"""The value of a secret-looking name, in every form it is written: flags, `k=v`, JSON, headers.

A hand-written scanner finds each value's extent (quoted, bracketed, several flag
values), linear in the text's length: no backtracking regex.
"""

from __future__ import annotations

import re

from tui.core.redact.names import _AUTH_SCHEMES, _MAX_VALUE, REDACTED, is_secret_name

# A name, then `=` or `:` (or whitespace after a dashed flag). The value is scanned by hand.
_ANCHOR = re.compile(
    r"(?<![\w.\-])(?P<flag>--?)?(?P<q>[\"']?)(?P<name>[A-Za-z_][\w.\-]{0,4095})\\{0,3}(?P=q)"
    r"(?P<sep>[ \t]{0,8}[=:][ \t]{0,8}|[ \t]{1,8})"
)


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
