"""Secrets property test: planted secrets in every form never survive redaction, and
redacted JSON stays valid JSON (issue 16). Plus the leaks found in review, one by one.
"""

from __future__ import annotations

import json
import string

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tui.core.redact import REDACTED, SECRET_WORDS, is_secret_name, redact_data, redact_text

PROPERTY = settings(max_examples=400, deadline=1000, suppress_health_check=[HealthCheck.too_slow])

_SAFE = string.ascii_letters + string.digits + "-_./+=!@#%^&*~:"
secret_values = (
    st.text(alphabet=_SAFE, min_size=8, max_size=32)
    .filter(lambda v: not v.startswith("-") and any(c.isdigit() for c in v))
    .map(lambda v: "S3" + v)
)
spaced_values = st.text(alphabet=_SAFE + " ", min_size=8, max_size=32).map(lambda v: "P9" + v)


@st.composite
def secret_names(draw: st.DrawFn) -> list[str]:
    """A name holding a secret word, as parts: ["aws", "secret", "access", "key"]."""
    lead = draw(
        st.lists(st.sampled_from(["api", "x", "db", "aws", "hf", "my", "vllm"]), max_size=2)
    )
    word = draw(st.sampled_from(SECRET_WORDS))
    tail: list[str] = []
    if word not in ("key", "token"):
        tail = draw(st.lists(st.sampled_from(["id", "value", "data"]), max_size=1))
    return [*lead, word, *tail]


def _join(parts: list[str], style: str) -> str:
    if style == "kebab":
        return "-".join(parts)
    if style == "snake":
        return "_".join(parts)
    if style == "SNAKE":
        return "_".join(parts).upper()
    if style == "Header":
        return "-".join(part.capitalize() for part in parts)
    return parts[0] + "".join(part.capitalize() for part in parts[1:])  # camel


def _forms(name: list[str], value: str, other: str) -> list[str]:
    kebab, snake, upper = _join(name, "kebab"), _join(name, "snake"), _join(name, "SNAKE")
    header, camel = _join(name, "Header"), _join(name, "camel")
    return [
        f"vllm serve /m --{kebab} {value} --port 8000",
        f"vllm serve /m --{kebab}={value}",
        f"vllm serve /m --{kebab} {value} --{kebab} {other}",  # the flag twice
        f"env {upper}={value} PATH=/usr/bin",
        f'{upper}="{value}" next',
        f'{{"{snake}": "{value}", "other": 1}}',
        f"non-default args: {{'model': 'm', '{snake}': ['{value}', '{other}'], 'tp': 8}}",
        f"{{'{header}': '{value}', 'Accept': '*/*'}}",
        f"{{'{header}': 'Basic {value}'}}",
        f"{header}: {value}",
        f"{header}: Bearer {value}",
        f"{camel}={value}",
        f"config {camel}: {value}",
    ]


@PROPERTY
@given(secret_names(), secret_values, secret_values, st.sampled_from(["", "INFO 11-29 10:00:00 "]))
def test_no_planted_secret_survives_in_text(
    name: list[str], value: str, other: str, prefix: str
) -> None:
    assume(value not in other and other not in value)
    for form in _forms(name, value, other):
        out = redact_text(prefix + form)
        assert value not in out, (form, out)
        assert other not in out, (form, out)
        assert REDACTED in out


@PROPERTY
@given(secret_names(), spaced_values)
def test_quoted_values_with_spaces_go_whole(name: list[str], value: str) -> None:
    kebab = _join(name, "kebab")
    for form in (f"--{kebab} '{value}' --x 1", f'--{kebab} "{value}"', f"'{kebab}': '{value}'"):
        out = redact_text(form)
        assert value not in out and value.strip() not in out, (form, out)


@PROPERTY
@given(st.text(min_size=8, max_size=40).filter(lambda v: len(v.strip()) >= 8), st.text())
def test_known_secret_values_go_wherever_they_are(value: str, context: str) -> None:
    text = context[: len(context) // 2] + value + context[len(context) // 2 :]
    out = redact_text(text, (value,))
    assert value not in out


_json_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)


@st.composite
def planted_documents(draw: st.DrawFn) -> tuple[object, list[str]]:
    """JSON-like data with secrets under secret keys, inside strings, and as known values."""
    planted: list[str] = []

    def node(depth: int) -> object:
        kind = draw(st.integers(0, 5 if depth < 4 else 1))
        if kind == 0:
            return draw(_json_leaf)
        if kind == 1:
            value = draw(secret_values)
            planted.append(value)
            name = _join(draw(secret_names()), draw(st.sampled_from(["kebab", "SNAKE", "camel"])))
            return f"--{name} {value}" if draw(st.booleans()) else f"{name}={value}"
        if kind == 2:
            value = draw(secret_values)
            planted.append(value)
            key = _join(draw(secret_names()), draw(st.sampled_from(["snake", "Header", "camel"])))
            inner = draw(st.sampled_from(["str", "list", "dict"]))
            held: object = value if inner == "str" else [value] if inner == "list" else {"v": value}
            return {key: held, "n": draw(_json_leaf)}
        if kind == 3:
            return [node(depth + 1) for _ in range(draw(st.integers(0, 3)))]
        return {f"k{i}": node(depth + 1) for i in range(draw(st.integers(0, 3)))}

    return node(0), planted


@PROPERTY
@given(planted_documents(), secret_values)
def test_redacted_json_is_valid_and_holds_no_secret(document, known: str) -> None:
    data, planted = document
    wrapped = {"facts": data, "note": f"the server said: invalid key {known}"}
    text = json.dumps(redact_data(wrapped, (known,)), allow_nan=True)
    json.loads(text)  # still valid JSON
    for value in [*planted, known]:
        assert value not in text, (value, text)


# ---- the leaks found in review, each a regression test -------------------------------
@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("vllm serve m --api-key first-key-1 --api-key second-key-2", "second-key-2"),
        ("vllm serve m --secret-key VALUE123 --port 1", "VALUE123"),
        ("vllm serve m --password 'p w 1' --port 1", "p w 1"),
        (
            "INFO 11-29 10:00:00 [utils.py:1] non-default args: {'model': 'm', "
            "'api_key': ['k-one-111', 'k-two-222'], 'tensor_parallel_size': 8}",
            "k-two-222",
        ),
        ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCY python3", "wJalrXUtnFEMI"),
        ("headers={'Authorization': 'Basic dXNlcjpwYXNzd29yZA=='}", "dXNlcjpwYXNzd29yZA"),
        ("headers={'X-Api-Key': 'abc123xyz'}", "abc123xyz"),
    ],
)
def test_review_leaks_are_redacted(text: str, secret: str) -> None:
    assert secret not in redact_text(text)


def test_summary_json_stays_valid_with_secrets_inside_strings() -> None:
    data = {"cmd": 'vllm serve --api-key "sk-abcdefghijklmnop1234" --x', "note": 'a "quoted" key=1'}
    out = json.loads(json.dumps(redact_data(data)))
    assert "sk-abcdefghijklmnop1234" not in json.dumps(out)


@pytest.mark.parametrize(
    "text",
    [
        "KV per token: MLA latent",
        "GPU KV cache size: 1,234 tokens",
        "vllm serve m --tokenizer /t --max-num-batched-tokens 8192 --max-tokens 16",
        '{"total_token_throughput": 12.5, "output_tokens": 256}',
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact_text(text) == text


def test_secret_name_rules() -> None:
    for name in ("api_key", "HF_TOKEN", "X-Api-Key", "Authorization", "AWS_SECRET_ACCESS_KEY"):
        assert is_secret_name(name), name
    for name in ("tokenizer", "max_tokens", "total_token_throughput", "kv_cache_dtype"):
        assert not is_secret_name(name), name


def test_real_vllm_logs_are_left_alone() -> None:
    """The captured vLLM logs hold no secret: redaction must not touch a line of them
    (the engine config line once lost `'pass_config': {...}` to the word "pass")."""
    from pathlib import Path

    folder = Path(__file__).parents[1] / "support" / "fixtures" / "vllm-0.32-cpu"
    files = sorted(folder.glob("*.log"))
    assert files
    for path in files:
        for line in path.read_text(errors="replace").splitlines():
            assert redact_text(line) == line, (path.name, line[:200])
