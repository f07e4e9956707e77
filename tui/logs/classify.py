"""A log line's severity read from its text: vLLM's, uvicorn's, Python's and glog's level
words, warnings and tracebacks bare, then the journal priority.

vLLM prints `(Proc pid=N) LEVEL MM-DD HH:MM:SS [file.py:N] message`; uvicorn prints
`INFO:     ...`; Python prints warnings and tracebacks bare; SGLang prints no level
at all. Severity therefore comes from the text first and the journal priority second.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tui.logs.line import Level

_ANSI_CSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_VLLM_LEVEL = re.compile(
    r"^(?:\([^)]*\)\s+)?(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+\d\d-\d\d\s\d\d:\d\d:\d\d"
)
_PLAIN_LEVEL = re.compile(
    r"^(?:\[?\d{4}-\d\d-\d\d[ T][\d:,.]+\]?\s*)?(?:[\w.]+\s+)?(?:\[)?"
    r"(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)(?:\])?[:\s]"
)
_GLOG = re.compile(r"^\[?([IWEF])\d{4} \d\d:\d\d:\d\d")
_EXCEPTION_LINE = re.compile(r"^(?:[\w.]+\.)?\w*(?:Error|Exception|Exit|Interrupt)(?::|$)")
_PY_WARNING = re.compile(r"\b\w*Warning: ")
_PY_WARNING_LINE = re.compile(r"^\S{1,512}:\d{1,9}: \w{0,64}Warning: ")
_ERROR_WORDS = re.compile(
    r"(?i)\b(?:out of memory|cuda error|segmentation fault|core dumped|fatal)\b"
)
_TRACEBACK = "Traceback (most recent call last):"


def strip_ansi(text: str) -> str:
    """The text with every ANSI escape (colours, cursor moves, OSC titles) removed."""
    if "\x1b" not in text:
        return text
    return _ANSI_CSI.sub("", text)


def _normal(name: str) -> str:
    if name in ("WARN",):
        return Level.WARNING
    if name in ("CRITICAL", "FATAL"):
        return Level.ERROR
    return name


def explicit_level(text: str) -> str | None:
    """The level the line itself states, or None when it states none."""
    match = _VLLM_LEVEL.match(text)
    if match:
        return _normal(match.group(1))
    return _non_vllm_level(text)


def _non_vllm_level(text: str) -> str | None:
    """explicit_level for a line without vLLM's prefix (plain `LEVEL:` or glog)."""
    match = _PLAIN_LEVEL.match(text)
    if match:
        return _normal(match.group(1))
    glog = _GLOG.match(text)
    if glog:
        return {"I": Level.INFO, "W": Level.WARNING}.get(glog.group(1), Level.ERROR)
    return None


def priority_level(priority: int | None) -> str | None:
    """syslog priority (0 emerg .. 7 debug) to a Level."""
    if priority is None:
        return None
    if priority <= 3:
        return Level.ERROR
    if priority == 4:
        return Level.WARNING
    if priority == 7:
        return Level.DEBUG
    return Level.INFO


class LevelClassifier:
    """Reads severity line by line, remembering whether it is inside a Traceback block.

    A traceback's frames are indented and carry no level, so without state they
    would show as INFO and vanish under an "errors only" filter.
    """

    def __init__(self) -> None:
        self._in_traceback = False

    def classify(self, text: str, priority: int | None = None) -> str:
        plain = strip_ansi(text)
        vllm = _VLLM_LEVEL.match(plain)  # matched once: it gives the level and the body
        if vllm:
            stated: str | None = _normal(vllm.group(1))
            body = plain[vllm.end() :].lstrip()
        else:
            stated = _non_vllm_level(plain)
            body = plain.lstrip() if stated else plain
        if _TRACEBACK in plain:
            self._in_traceback = True
            return Level.ERROR
        if self._in_traceback:
            if body.startswith((" ", "\t", "^", "~")) or not body or body.startswith("During "):
                return Level.ERROR
            if _EXCEPTION_LINE.match(body):
                return Level.ERROR
            if body.startswith(("The above exception", "[rank")):
                return Level.ERROR
            self._in_traceback = False
        if stated:
            return stated
        if _PY_WARNING_LINE.match(body):  # `x.py:9: UserWarning: ... out of memory` warns
            return Level.WARNING
        if _EXCEPTION_LINE.match(body) or _ERROR_WORDS.search(body):
            return Level.ERROR
        if _PY_WARNING.search(body):
            return Level.WARNING
        return priority_level(priority) or Level.INFO

    def classify_many(
        self,
        texts: Sequence[str],
        joined: str | None = None,
        priorities: Sequence[int | None] | None = None,
    ) -> list[str]:
        """`classify` for consecutive lines, with the same answers, at a flood's pace.

        The chunk (`joined`: the texts joined, when the caller has it) is searched once for
        what needs the line-by-line reading: an escape, a Traceback, or a traceback still
        open. Without them a line with vLLM's prefix states its level and nothing else
        changes it, so one match per line is all it costs; other lines take `classify`.
        `priorities` (journal entries) are each line's syslog priority, as `classify` takes.
        """
        if joined is None:
            joined = "\n".join(texts)
        classify = self.classify
        if priorities is None:
            priorities = [None] * len(texts)
        if self._in_traceback or _TRACEBACK in joined or "\x1b" in joined:
            return [
                classify(text, priority) for text, priority in zip(texts, priorities, strict=True)
            ]
        stated = _STATED
        info = Level.INFO
        # one match per line, in map (no bytecode per line for the call), then its level
        matches = list(map(_VLLM_LEVEL.match, texts))
        levels: list[str] = [stated[match[1]] if match else info for match in matches]
        if None not in matches:
            return levels
        # the lines without vLLM's prefix, which may say more (their INFO is set below)
        others = [index for index, match in enumerate(matches) if match is None]
        # Only those lines are searched for the body patterns' words (in a vLLM log most lines
        # have the prefix): classify is pure on them here (no traceback in the chunk), so a
        # line without those words states its level or has only its priority to say more.
        if _quiet("\n".join([texts[index] for index in others])):
            for index in others:
                levels[index] = (
                    _non_vllm_level(texts[index]) or priority_level(priorities[index]) or Level.INFO
                )
        else:
            for index in others:
                levels[index] = classify(texts[index], priorities[index])
        return levels


# Literals in every match of the body patterns classify reads when a line states no level:
# _PY_WARNING(_LINE) "Warning: ", _EXCEPTION_LINE one of the four names, _ERROR_WORDS one of
# its words (case-insensitive: exact by lowercasing only for ASCII text).
_BODY_WORDS = ("Warning: ", "Error", "Exception", "Exit", "Interrupt")
_ERROR_WORDS_LOWER = ("out of memory", "cuda error", "segmentation fault", "core dumped", "fatal")


def _quiet(text: str) -> bool:
    """Whether no line of `text` can match a body pattern (so none reads as warning or error)."""
    if not text.isascii() or any(word in text for word in _BODY_WORDS):
        return False
    lower = text.lower()
    return not any(word in lower for word in _ERROR_WORDS_LOWER)


_STATED: dict[str, str] = {
    name: _normal(name) for name in ("DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL")
}
