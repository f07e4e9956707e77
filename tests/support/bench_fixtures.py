"""Fixtures for benchmark tests: a real streaming HTTP server process on 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SERVER = Path(__file__).with_name("sse_server.py")


def start_sse_server(*extra: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, str(SERVER), *extra], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    port = process.stdout.readline().strip()
    if not port.isdigit():
        process.kill()
        raise RuntimeError("test SSE server did not start")
    return process, f"http://127.0.0.1:{port}"


@pytest.fixture
def sse_server() -> Iterator[str]:
    """Base URL of a fresh test SSE server (with /tokenize)."""
    process, url = start_sse_server("--tokenize")
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def plain_sse_server() -> Iterator[str]:
    """Base URL of a test SSE server without /tokenize."""
    process, url = start_sse_server()
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
