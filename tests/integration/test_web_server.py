"""`servedeck serve` without a browser: the CLI contract (curl: 401 without the token,
200 and the terminal page with it), websocket refusals and garbage, a console that
quits by itself, a server stopped with live visitors, TLS, and the token and visitor
cap logic on their own.

The server is always the real `python -m tui serve` process; visits here run the
plain local console (the lightest one), except the contract, which names --demo.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import httpx
import pytest

from tests.support.browser_support import REPO, ServeProcess, alive, wait_for
from tui.web.access import AccessToken
from tui.web.server import MAX_COLUMNS, MAX_ROWS, terminal_size
from tui.web.visitors import VisitorSlots


def audit_records() -> list[dict[str, object]]:
    path = Path(os.environ["SERVEDECK_LOG_DIR"]) / "audit.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _serve(*args: str) -> Iterator[ServeProcess]:
    server = ServeProcess(*args)
    try:
        yield server
    finally:
        err = server.stop()
        assert server.token not in err
    wait_for(lambda: not server.consoles(), 30, "every console to end with the server")


@pytest.fixture
def demo_server() -> Iterator[ServeProcess]:
    yield from _serve("--demo")


@pytest.fixture
def local_server() -> Iterator[ServeProcess]:
    yield from _serve()


def _visit_id(page: str) -> str:
    match = re.search(r'"/ws/" \+ "([^"]+)"', page)
    assert match, page
    return match.group(1)


# ----------------------------------------------------------------- the CLI contract


def test_cli_contract_curl_401_without_token_200_with_it(demo_server: ServeProcess) -> None:
    wait_for(lambda: any("ssh -N -L" in line for line in demo_server.printed), 10, "ssh -L")
    assert any("read-only" in line for line in demo_server.printed)
    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("curl is not installed")

    def fetch(*args: str) -> tuple[str, str]:
        result = subprocess.run(
            [curl, "-s", "-w", "\n%{http_code}", *args], capture_output=True, text=True, timeout=30
        )
        body, _, code = result.stdout.rpartition("\n")
        return code, body

    code, body = fetch(demo_server.base)
    assert code == "401" and "Access token required" in body
    for path in ("?token=wrong", "static/js/textual.js", "ws/anything"):
        assert fetch(demo_server.base + path)[0] == "401", path
    assert demo_server.consoles() == [], "no console process without the token"

    code, body = fetch(demo_server.url)
    assert code == "200"
    assert 'src="static/js/textual.js"' in body and 'class="textual-terminal"' in body
    assert "browser, read-only" in body
    code, script = fetch(
        "-H",
        f"Authorization: Bearer {demo_server.token}",
        demo_server.base + "static/js/textual.js",
    )
    assert code == "200" and "WebSocket" in script
    # A page load reserves a visit, but only its websocket starts a console.
    assert demo_server.consoles() == []
    assert not [r for r in audit_records() if r["event"] == "web.visit.start"]


def test_the_token_becomes_a_strict_httponly_cookie(local_server: ServeProcess) -> None:
    with httpx.Client() as client:
        response = client.get(local_server.url)
        assert response.status_code == 200
        cookie = response.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Secure" not in cookie
        assert response.headers["x-frame-options"] == "DENY"
        # The cookie alone now authorises the page's own requests.
        assert client.get(local_server.base + "static/css/xterm.css").status_code == 200
    with httpx.Client() as stranger:
        assert stranger.get(local_server.base + "static/css/xterm.css").status_code == 401


# ----------------------------------------------------------------- websockets


def _ws_url(server: ServeProcess, visit: str) -> str:
    return server.base.replace("http://", "ws://") + f"ws/{visit}?width=100&height=30"


async def _first_screen(websocket: aiohttp.ClientWebSocketResponse) -> int:
    """Bytes of console output received until the console has drawn something."""
    received = 0
    while received < 2000:
        message = await asyncio.wait_for(websocket.receive(), 90)
        if message.type == aiohttp.WSMsgType.BINARY:
            received += len(message.data)
        elif message.type != aiohttp.WSMsgType.TEXT:
            raise AssertionError(f"websocket ended early: {message}")
    return received


async def _handshake_status(url: str, headers: dict[str, str]) -> int:
    """101 when the websocket opened, else the HTTP status that refused it."""
    async with aiohttp.ClientSession(headers=headers) as session:
        try:
            async with session.ws_connect(url):
                return 101
        except aiohttp.WSServerHandshakeError as error:
            return error.status


async def test_websockets_need_token_same_origin_and_a_reserved_visit(
    local_server: ServeProcess,
) -> None:
    auth = {"Authorization": f"Bearer {local_server.token}"}
    async with aiohttp.ClientSession(headers=auth) as session:
        async with session.get(local_server.base) as response:
            visit = _visit_id(await response.text())
    url = _ws_url(local_server, visit)
    assert await _handshake_status(url, {}) == 401
    assert await _handshake_status(_ws_url(local_server, "not-reserved"), auth) == 409
    evil = {**auth, "Origin": "http://evil.example"}
    assert await _handshake_status(url, evil) == 403
    await asyncio.sleep(1)
    assert local_server.consoles() == [], "no refused websocket started a console"


async def test_garbage_from_the_page_is_ignored_and_closing_ends_the_console(
    local_server: ServeProcess,
) -> None:
    auth = {"Authorization": f"Bearer {local_server.token}"}
    async with aiohttp.ClientSession(headers=auth) as session:
        async with session.get(local_server.base) as response:
            visit = _visit_id(await response.text())
        async with session.ws_connect(_ws_url(local_server, visit)) as websocket:
            assert await _first_screen(websocket) >= 2000
            (console,) = local_server.consoles()
            for garbage in ("not json", "[]", '["stdin"]', "[1, 2]", '{"a": 1}', '["resize", 7]'):
                await websocket.send_str(garbage)
            await websocket.send_str('["resize", {"width": "wide", "height": -4}]')
            await websocket.send_bytes(b"\x00\xff binary")
            await websocket.send_str('["ping", "still-there"]')
            while True:
                message = await asyncio.wait_for(websocket.receive(), 30)
                if message.type == aiohttp.WSMsgType.TEXT:
                    assert json.loads(message.data) == ["pong", "still-there"]
                    break
                assert message.type == aiohttp.WSMsgType.BINARY, message
            assert alive(console)
            # The same visit cannot be claimed twice.
            assert await _handshake_status(_ws_url(local_server, visit), auth) == 409
        # The websocket closed (the tab went away): the console ends.
        wait_for(lambda: not alive(console), 60, "the console to end with its websocket")
    wait_for(
        lambda: any(r["event"] == "web.visit.end" for r in audit_records()), 30, "the end record"
    )


async def test_a_huge_terminal_asked_for_is_capped(local_server: ServeProcess) -> None:
    """A page asking for 1000x1000 cells gets a console of at most 500x200."""
    auth = {"Authorization": f"Bearer {local_server.token}"}
    async with aiohttp.ClientSession(headers=auth) as session:
        async with session.get(local_server.base) as response:
            visit = _visit_id(await response.text())
        url = _ws_url(local_server, visit).split("?")[0] + "?width=1000&height=1000"
        async with session.ws_connect(url) as websocket:
            await _first_screen(websocket)
            (console,) = local_server.consoles()
            environ = Path(f"/proc/{console}/environ").read_bytes().split(b"\0")
            assert b"COLUMNS=500" in environ and b"ROWS=200" in environ, environ
    assert terminal_size(1000, 1000) == (MAX_COLUMNS, MAX_ROWS) == (500, 200)
    assert terminal_size("9" * 5000, 10**6) == (80, 200)  # no int() of 5000 digits
    assert terminal_size(None, "wide") == (80, 24) and terminal_size(0, -4) == (1, 1)


async def test_a_console_that_quits_by_itself_closes_its_page(local_server: ServeProcess) -> None:
    auth = {"Authorization": f"Bearer {local_server.token}"}
    async with aiohttp.ClientSession(headers=auth) as session:
        async with session.get(local_server.base) as response:
            visit = _visit_id(await response.text())
        async with session.ws_connect(_ws_url(local_server, visit)) as websocket:
            await _first_screen(websocket)
            (console,) = local_server.consoles()
            await websocket.send_str('["stdin", "q"]')
            while True:
                message = await asyncio.wait_for(websocket.receive(), 60)
                if message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                    break
    wait_for(lambda: not alive(console), 30, "the console to be gone")
    end = wait_for(
        lambda: [r for r in audit_records() if r["event"] == "web.visit.end"], 30, "the end record"
    )
    assert end[0]["pid"] == console and end[0]["exit_code"] == 0


async def test_stopping_the_server_ends_every_live_console() -> None:
    server = ServeProcess()
    try:
        auth = {"Authorization": f"Bearer {server.token}"}
        async with aiohttp.ClientSession(headers=auth) as session:
            async with session.get(server.base) as response:
                visit = _visit_id(await response.text())
            async with session.ws_connect(_ws_url(server, visit)) as websocket:
                await _first_screen(websocket)
                (console,) = server.consoles()
                await asyncio.to_thread(server.stop)
                assert server.process.returncode == 0
                assert not alive(console)
    finally:
        server.stop()


# ----------------------------------------------------------------- TLS


def _self_signed(folder: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    import ipaddress

    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def test_tls_serves_https_with_a_secure_cookie(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    server = ServeProcess("--tls-cert", str(cert), "--tls-key", str(key))
    try:
        assert server.url.startswith("https://127.0.0.1:")
        with httpx.Client(verify=ssl.create_default_context(cafile=str(cert))) as client:
            assert client.get(server.base).status_code == 401
            response = client.get(server.url)
            assert response.status_code == 200
            assert "Secure" in response.headers["set-cookie"]
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tls-cert", "CERT"], "--tls-cert and --tls-key go together"),
        (
            ["--tls-cert", "/nonexistent/c.pem", "--tls-key", "KEY"],
            "--tls-cert /nonexistent/c.pem: no such file",
        ),
        (["--tls-cert", "KEY", "--tls-key", "KEY"], "not a usable pair"),
    ],
)
def test_bad_tls_files_are_one_line_errors(tmp_path: Path, args: list[str], message: str) -> None:
    cert, key = _self_signed(tmp_path)
    argv = [str(cert) if a == "CERT" else str(key) if a == "KEY" else a for a in args]
    result = subprocess.run(
        [sys.executable, "-m", "tui", "serve", "--port", "0", *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("seconds", ["nan", "inf", "-1", "0", "soon"])
def test_a_load_time_that_is_no_time_is_refused_naming_the_option(seconds: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tui", "serve", "--demo", "--port", "0", "--load-seconds", seconds],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stdout
    (error,) = [line for line in result.stderr.splitlines() if "error" in line]
    assert "--load-seconds" in error and repr(seconds) in error, result.stderr
    assert "open:" not in result.stdout and "Traceback" not in result.stderr


def test_a_port_in_use_is_a_one_line_error(local_server: ServeProcess) -> None:
    port = local_server.base.rsplit(":", 1)[1].strip("/")
    result = subprocess.run(
        [sys.executable, "-m", "tui", "serve", "--port", port],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


def test_listening_beyond_this_machine_warns() -> None:
    server = ServeProcess("--host", "0.0.0.0")
    try:
        assert server.url.startswith("http://127.0.0.1:")
        with httpx.Client() as client:
            assert client.get(server.base).status_code == 401
    finally:
        err = server.stop()
    assert "warning: listening on 0.0.0.0, not only on this machine" in err
    assert "token crosses the network in clear text" in err


# ----------------------------------------------------------------- token and cap logic


def test_the_token_matches_only_itself_and_never_prints() -> None:
    token = AccessToken("s3cret-token-value", 8765)
    assert token.matches("s3cret-token-value")
    assert (
        not token.matches("s3cret-token-valuE")
        and not token.matches("")
        and not token.matches(None)
    )
    assert "s3cret" not in repr(token)
    cookies = {token.cookie_name: "s3cret-token-value"}
    assert token.presented({}, cookies, {}) == (True, False)
    assert token.presented({"token": "s3cret-token-value"}, {}, {}) == (True, True)
    assert token.presented({}, {}, {"Authorization": "Bearer s3cret-token-value"}) == (True, False)
    assert token.presented({}, {}, {"Authorization": "Basic s3cret-token-value"}) == (False, False)
    assert AccessToken("x", 1).cookie_name != AccessToken("x", 2).cookie_name


def test_visitor_slots_cap_claim_once_and_lapse() -> None:
    now = [0.0]
    slots = VisitorSlots(2, claim_window_s=30, clock=lambda: now[0])
    first, second = slots.reserve("a"), slots.reserve("b")
    assert first and second and slots.reserve("c") is None
    assert slots.claim(first.visit_id) is first and slots.claim(first.visit_id) is None
    assert slots.claim("unknown") is None
    now[0] = 31.0  # the unclaimed reservation lapses, the claimed visit stays
    assert slots.in_use == 1 and slots.claim(second.visit_id) is None
    third = slots.reserve("c")
    assert third is not None and slots.reserve("d") is None
    slots.release(first.visit_id)
    assert slots.reserve("d") is not None
    with pytest.raises(ValueError):
        VisitorSlots(0)
