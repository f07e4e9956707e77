"""`servedeck serve` under hostile requests: what it writes on stderr stays one safe line each.

A real `python -m tui serve --demo` process; the requests go over a raw socket, as
anyone who reaches the port can send them, before any token is checked: escape
sequences in the path (clear screen, window title, OSC 52 clipboard), a CR/LF that
would forge a "visit ... console pid 1" line, over-long lines, and the real token in
a malformed request's header and in an over-long request line.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import pytest

from tests.support.browser_support import ServeProcess, wait_for
from tui.web.serve_log import PREFIX

FORGED = "visit abcd1234 from 127.0.0.1: console pid 1"


@pytest.fixture(scope="module")
def hostile_stderr() -> Iterator[tuple[str, str]]:
    """(serve's whole stderr after the hostile requests, the token it printed)."""
    server = ServeProcess("--demo")
    port = int(server.base.rstrip("/").rsplit(":", 1)[1])
    token = server.token.encode()
    forged = FORGED.replace(" ", "%20").encode()
    requests = [
        b"GET /%1b[2J%1b]0;owned%07%1b]52;c;ZXZpbA==%07 HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /\x1b[2J\x1b]52;c;ZXZpbA==\x07 HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /x%0d%0a" + forged + b"%0a HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /x%0d" + forged + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 20000 + b"\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token + b"\x01\r\n\r\n",
        b"GET / HTTP/1.1\r\nAuthorization: Bearer " + token + b"\r\nBad Header\x01: y\r\n\r\n",
        b"GET /?token=" + token + b"&pad=" + b"A" * 20000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /?pad=" + b"B" * 60 + b"&token=" + token + b"A" * 20000 + b" HTTP/1.1\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + token + b"\r\n\r\n",  # TLS to HTTP
    ]
    try:
        for request in requests:
            _send(port, request)
        wait_for(lambda: server.process.poll() is None, 5, "serve to keep running")
    finally:
        err = server.stop()
    yield err, server.token


def _send(port: int, raw: bytes) -> bytes:
    """The response's head (serve logs before it answers), or what came before it closed."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(raw)
        received = b""
        try:
            while b"\r\n\r\n" not in received and (chunk := connection.recv(65536)):
                received += chunk
        except OSError:  # the server may reset a connection it gave up on
            pass
        return received


def test_no_escape_byte_no_control_character_reaches_the_terminal(
    hostile_stderr: tuple[str, str],
) -> None:
    err, _token = hostile_stderr
    assert "\x1b" not in err and "\x07" not in err and "\r" not in err, repr(err)
    assert all(char.isprintable() for line in err.splitlines() for char in line), repr(err)
    assert "\\x1b[2J" in err, "the bad path is shown, escaped"


def test_every_line_is_serves_own_and_none_is_forged(hostile_stderr: tuple[str, str]) -> None:
    err, _token = hostile_stderr
    lines = err.splitlines()
    assert lines and all(line.startswith(PREFIX) for line in lines), lines
    forged = [line for line in lines if re.match(rf"{PREFIX}visit \S+ from .*console pid 1$", line)]
    assert forged == [], forged
    assert all(len(line) <= len(PREFIX) + 300 for line in lines), max(map(len, lines))


def test_no_token_and_no_traceback(hostile_stderr: tuple[str, str]) -> None:
    err, token = hostile_stderr
    assert token not in err
    assert token[:12] not in err, "no part of the token either"
    assert "Traceback" not in err and 'File "' not in err, err


def test_each_bad_request_is_one_line_naming_it(hostile_stderr: tuple[str, str]) -> None:
    err, _token = hostile_stderr
    bad = [line for line in err.splitlines() if "400" in line]
    assert len([line for line in bad if "LineTooLong" in line]) == 3, bad
    assert any("InvalidURLError" in line for line in bad), bad
    assert len([line for line in err.splitlines() if " 401 " in line or ": 401 " in line]) >= 3
