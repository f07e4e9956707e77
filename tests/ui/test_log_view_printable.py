"""LogView's test for a batch it may measure on the spot answers as
`isascii() and isprintable()`, for every ASCII character and on generated text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from widgets.textual_log_copy import printable_ascii


def test_every_ascii_character_and_beyond() -> None:
    for code in [*range(128), 0x85, 0xA0, 0xE9, 0x2028, 0x4E2D]:
        text = f"plain {chr(code)} text"
        assert printable_ascii(text) == (text.isascii() and text.isprintable()), hex(code)
    assert printable_ascii("") and printable_ascii(" ~")


@given(st.text(alphabet=st.characters(max_codepoint=0x2100), max_size=60))
def test_generated_text(text: str) -> None:
    assert printable_ascii(text) == (text.isascii() and text.isprintable())
