"""Planted secrets in every form a log, a command line or a note can hold them (issue 36):
secret names (short, long, of every spelling) in every syntax, and the shapes that carry a
secret without a name. A test draws the values and checks that no planted byte comes out.
"""

from __future__ import annotations

import re
import string

from hypothesis import strategies as st

# Names whose value is secret, as parts: joined per syntax (kebab, SNAKE, camel, Header).
NAMES: tuple[tuple[str, ...], ...] = (
    ("api", "key"),
    ("hf", "token"),
    ("db", "password"),
    ("db", "pass"),
    ("mysql", "pwd"),
    ("pass",),
    ("client", "secret"),
    ("aws", "secret", "access", "key"),
    ("a", "very", "long", "deployment", "specific", "service", "account", "name", "that", "goes",
     "past", "sixty", "four", "characters", "api", "key"),
)  # fmt: skip

# Characters a secret value may hold: `/` (URL passwords), `+` and `=` (base64), `%`.
_ALPHABET = string.ascii_letters + string.digits + "/+=_.~%!*"


def _value(draw_text: str) -> str:
    return "Zq7" + draw_text  # a prefix of its own: the value cannot start with `-`


def _varied(text: str) -> bool:
    """No run of three, five distinct characters and no word-like run of five letters: a
    part of the value found in an output is the value's (`00000000` would also be a
    timestamp's, `service/0` read as `service_0` a piece of a secret's long name)."""
    return (
        len(set(text)) >= 5
        and re.search(r"(.)\1\1", text) is None
        and re.search(r"[A-Za-z_/]{5}", text) is None
    )


_WORDY = string.ascii_letters + "_/"
_BREAKS = string.digits + "+=.~%!*"
# Built as runs of at most four word characters, each followed by a digit or symbol, so
# `_varied` rejects few draws (random text over _ALPHABET nearly always holds a run of five
# letters, and Hypothesis' filter health check failed on it now and then).
_raw_values = st.lists(
    st.tuples(st.text(alphabet=_WORDY, min_size=1, max_size=4), st.sampled_from(_BREAKS)),
    min_size=3,
    max_size=7,
).map(lambda runs: "".join(word + mark for word, mark in runs))
secret_values = _raw_values.filter(lambda text: 9 <= len(text) <= 28 and _varied(text)).map(_value)


def _kebab(parts: tuple[str, ...]) -> str:
    return "-".join(parts)


def _snake(parts: tuple[str, ...]) -> str:
    return "_".join(parts)


def _upper(parts: tuple[str, ...]) -> str:
    return "_".join(parts).upper()


def _header(parts: tuple[str, ...]) -> str:
    return "-".join(part.capitalize() for part in parts)


def _camel(parts: tuple[str, ...]) -> str:
    return parts[0] + "".join(part.capitalize() for part in parts[1:])


def named_forms(parts: tuple[str, ...], value: str, other: str) -> list[str]:
    """One name in every syntax that names a value (both values secret)."""
    kebab, snake, upper, header, camel = (
        _kebab(parts), _snake(parts), _upper(parts), _header(parts), _camel(parts)
    )  # fmt: skip
    return [
        f"vllm serve /m --{kebab} {value} --port 8000",
        f"vllm serve /m --{kebab}={value}",
        f"vllm serve /m --{kebab} {value} {other} --port 8000",  # a flag taking several
        f"vllm serve /m --{kebab} {value} {other}",
        f"env {upper}={value} PATH=/usr/bin",
        f'{upper}="{value}" next',
        f'{{"{snake}": "{value}", "other": 1}}',
        f'{{\\"{snake}\\": \\"{value}\\", \\"other\\": 1}}',  # escaped JSON in a log line
        f"args: {{'model': 'm', '{snake}': ['{value}', '{other}'], 'tp': 8}}",
        f"Namespace(model='m', {snake}='{value}', port=8000)",
        f"{snake}=b'{value}' next",
        f"{header}: {value}",
        f"{{'{header}': 'Bearer {value}'}}",
        f"{camel}={value}",
    ]


def shaped_forms(value: str, other: str) -> list[str]:
    """Secrets carried without a secret name: URLs, key shapes, tokens, a PEM body."""
    return [
        f"Authorization: Bearer {value}",
        # a user alone is a token (URL-safe: a `/` would end the authority)
        f"HF_ENDPOINT=https://{url_safe(value)}@hub.example.com/models",
        f"connecting to redis://:{value}@cache:6379/0",
        f"db url postgres://app:{value}/{other}@db:5432/x",
        f"NGC key nvapi-{key_chars(value)}{key_chars(other)}",
        f"GET https://acct.blob.core.windows.net/c/m.bin?sv=2022-11-02&sig={value}&se=x",
        f"token=b'{value}'",
        "-----BEGIN RSA PRIVATE KEY-----",
        f"MIIEow{value}",
        f"{other}AQAB",
        "-----END RSA PRIVATE KEY-----",
        f'"-----BEGIN PRIVATE KEY-----\\n{value}\\n{other}\\n-----END PRIVATE KEY-----"',
    ]


def url_safe(value: str) -> str:
    return value.replace("/", "_").replace("%", "_")


def key_chars(value: str) -> str:
    """The value in a key shape's alphabet (letters, digits, `_`, `-`)."""
    return "".join(char if char.isalnum() else "_" for char in value)


def all_forms(value: str, other: str) -> list[str]:
    """Every form, one line each (the PEM key over four lines, as a log prints it)."""
    lines = [form for parts in NAMES for form in named_forms(parts, value, other)]
    return lines + shaped_forms(value, other)


def planted(value: str, other: str) -> tuple[str, ...]:
    """Every secret all_forms plants (the values, and as the shapes spell them)."""
    return (value, other, url_safe(value), key_chars(value), key_chars(other))


def leaked(text: str, values: tuple[str, ...], window: int = 8) -> list[str]:
    """The planted values any part of which (`window` characters or more) is in `text`."""
    return [
        value
        for value in values
        if any(value[start : start + window] in text for start in range(len(value) - window + 1))
    ]
