"""Log lines for the classifier and ingest tests: the captured vLLM logs and hard cases."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "vllm-0.32-cpu"

# A vLLM stats line (format with s: its second, i: a count), as a serving flood prints it
STATS = (
    "(APIServer pid=2000) INFO 11-29 10:00:{s:02d} [loggers.py:335] Engine 000: Avg prompt "
    "throughput: {i}.0 tokens/s, Avg generation throughput: 82.1 tokens/s, Running: {i} reqs, "
    "Waiting: 0 reqs, GPU KV cache usage: 12.5%, Prefix cache hit rate: 0.0%"
)

# Lines whose level is easy to get wrong: tracebacks inside and outside a level prefix,
# colour codes, glog, Python warnings, short level names, a fatal hidden in a warning.
TRICKY_LEVEL_LINES = [
    "Traceback (most recent call last):",
    '(Worker pid=1) ERROR 11-29 10:00:00 [x.py:1]   File "a.py", line 3',
    "(Worker pid=1) ERROR 11-29 10:00:00 [x.py:1] ValueError: boom",
    "(Worker pid=1) INFO 11-29 10:00:00 [x.py:1] next",
    "Traceback (most recent call last):",
    '  File "x.py", line 1, in <module>',
    "(Worker pid=1) INFO 11-29 10:00:00 [x.py:1] inside the traceback still",
    "ValueError: boom",
    'INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 200 OK',
    "\x1b[32mINFO\x1b[0m 11-29 10:00:00 [x.py:1] coloured",
    "W1129 10:00:00.000 glog warning",
    "x.py:9: UserWarning: out of memory soon",
    "WARN 11-29 10:00:00 short level",
    "CRITICAL 11-29 10:00:00 [x.py:1] down",
    "(APIServer pid=2000) WARNING 11-29 10:00:00 [x.py:1] CUDA out of memory, fatal",
    "",
    "plain text with OutOfMemoryError: inside",
]


def captured_lines() -> list[str]:
    lines: list[str] = []
    for path in sorted(FIXTURES.glob("*.log")):
        lines.extend(path.read_text(errors="replace").splitlines())
    assert len(lines) > 100
    return lines
