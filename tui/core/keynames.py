"""Key names a profile's [keys] table may use, checked without importing Textual.

Textual names a key by its character (`a`, `E`) or by a name (`escape`,
`question_mark`, `f5`), with modifiers joined by `+` (`ctrl+k`), several keys
separated by commas. A typo must be an error at load time, not a binding that
silently never fires; and no remap may take the keys every screen relies on.
"""

from __future__ import annotations

import difflib

MODIFIERS = frozenset(("ctrl", "shift", "alt", "meta", "super", "hyper"))
_NAMED = (
    "escape enter tab backspace delete insert home end pageup pagedown up down left right "
    "space minus plus equals_sign comma full_stop slash backslash colon semicolon "
    "question_mark exclamation_mark at number_sign dollar_sign percent_sign circumflex_accent "
    "ampersand asterisk left_parenthesis right_parenthesis underscore apostrophe quotation_mark "
    "less_than_sign greater_than_sign left_square_bracket right_square_bracket "
    "left_curly_bracket right_curly_bracket vertical_line tilde grave_accent"
)
NAMED_KEYS = frozenset(_NAMED.split()) | frozenset(f"f{n}" for n in range(1, 25))

# Keys every screen relies on: quit, help and back/close. Only a binding that has one of them
# by default (the console's quit, the Fleet's, a dialog's close) may keep it in a remap.
RESERVED: dict[str, str] = {
    "q": "q",
    "question_mark": "question_mark",
    "?": "question_mark",
    "escape": "escape",
}


def _one_key_problem(key: str) -> str | None:
    parts = key.split("+")
    *modifiers, name = parts
    for modifier in modifiers:
        if modifier not in MODIFIERS:
            return f"unknown modifier {modifier!r} in {key!r} (use {', '.join(sorted(MODIFIERS))})"
    if len(name) == 1 and name.isprintable() and not name.isspace():
        return None
    if name in NAMED_KEYS:
        return None
    close = difflib.get_close_matches(name, sorted(NAMED_KEYS), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"cannot read the key name {name!r}{hint}"


def key_problem(value: str, own_keys: frozenset[str] = frozenset()) -> str | None:
    """Why `value` is not a usable key list for a binding with `own_keys` by default, or None."""
    keys = [key.strip() for key in value.split(",")]
    if not all(keys):
        return f"cannot read the key list {value!r}: an empty key between commas"
    for key in keys:
        problem = _one_key_problem(key)
        if problem:
            return problem
        reserved = RESERVED.get(key)
        if reserved is not None and reserved not in own_keys:
            shown = "?" if reserved == "question_mark" else key
            return f"{key!r} is reserved ({shown} must always work); pick another key"
    return None
