"""What sits in front of a hosted Prometheus, for real: a TLS gateway and an OAuth2 server.

`make_pki` writes a CA, a server certificate for 127.0.0.1 and client certificates
(one from the CA, one from a stranger CA) with `cryptography`, at test time. `Gateway`
is an aiohttp server on 127.0.0.1 that terminates TLS, demands a client certificate the
CA signed, demands the tenant header (`X-Scope-OrgID`), optionally a bearer token the
`TokenServer` issued and has not expired, strips a `/select/<tenant>/prometheus` path,
and forwards the rest to a real Prometheus. `TokenServer` is an OAuth2 client-credentials
endpoint (RFC 6749 4.4, client_secret_basic) whose tokens live `expires_in` seconds.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import secrets
import ssl
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tui.sim.box import free_port

TENANT_HEADER = "X-Scope-OrgID"


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    stranger_cert: Path  # a client certificate another CA signed
    stranger_key: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _cert(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None,
    *,
    ca: bool = False,
    server: bool = False,
) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    issuer_name, issuer_key = issuer if issuer is not None else (name, key)
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
        builder = builder.add_extension(ski, critical=False).add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), True
        )
    else:
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        if issuer is not None:
            aki = x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key())
            builder = builder.add_extension(aki, critical=False)
    if server:
        san = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _write(
    folder: Path, name: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey
) -> tuple[Path, Path]:
    cert_path, key_path = folder / f"{name}.crt", folder / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)
    return cert_path, key_path


def make_pki(folder: Path) -> Pki:
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, stranger_ca_key = _key(), _key()
    ca = _cert("servedeck test CA", ca_key, None, ca=True)
    stranger_ca = _cert("stranger CA", stranger_ca_key, None, ca=True)
    ca_path, _ = _write(folder, "ca", ca, ca_key)
    server_key, client_key, stranger_key = _key(), _key(), _key()
    signer = (ca.subject, ca_key)
    server = _cert("127.0.0.1", server_key, signer, server=True)
    client = _cert("fleet-reader", client_key, signer)
    stranger = _cert("fleet-reader", stranger_key, (stranger_ca.subject, stranger_ca_key))
    server_paths = _write(folder, "server", server, server_key)
    client_paths = _write(folder, "client", client, client_key)
    stranger_paths = _write(folder, "stranger", stranger, stranger_key)
    return Pki(ca_path, *server_paths, *client_paths, *stranger_paths)


class _ThreadServer:
    """An aiohttp app on 127.0.0.1 in a thread of its own (its own event loop)."""

    def __init__(self, app: web.Application, ssl_context: ssl.SSLContext | None = None) -> None:
        self.port = free_port()
        self._app = app
        self._ssl = ssl_context
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def start() -> None:
            self._runner = web.AppRunner(self._app, access_log=None)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", self.port, ssl_context=self._ssl)
            await site.start()

        self._loop.run_until_complete(start())
        self._started.set()
        self._loop.run_forever()

    def start(self) -> None:
        self._thread.start()
        assert self._started.wait(20), "test server did not start"

    def close(self) -> None:
        if self._runner is None:
            return

        async def stop() -> None:
            assert self._runner is not None
            await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(20)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(20)
        self._runner = None


@dataclass
class TokenServer:
    """POST /token: client-credentials with HTTP Basic client authentication."""

    client_id: str
    secret: str
    expires_in_s: float = 3.0
    issued: dict[str, float] = field(default_factory=dict)  # token -> expiry (monotonic)
    fetches: list[str] = field(default_factory=list)  # the scope of each token asked
    _server: _ThreadServer | None = None

    def start(self) -> TokenServer:
        app = web.Application()
        app.router.add_post("/token", self._token)
        self._server = _ThreadServer(app)
        self._server.start()
        return self

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.port}/token"

    def valid(self, token: str) -> bool:
        return self.issued.get(token, 0.0) > time.monotonic()

    def revoke_all(self) -> None:
        self.issued.clear()

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        expected = base64.b64encode(f"{self.client_id}:{self.secret}".encode()).decode()
        if request.headers.get("Authorization") != f"Basic {expected}":
            return web.json_response({"error": "invalid_client"}, status=401)
        if form.get("grant_type") != "client_credentials":
            return web.json_response({"error": "unsupported_grant_type"}, status=400)
        self.fetches.append(str(form.get("scope", "")))
        token = secrets.token_urlsafe(24)
        self.issued[token] = time.monotonic() + self.expires_in_s
        body = {"access_token": token, "token_type": "Bearer", "expires_in": self.expires_in_s}
        return web.json_response(body)

    def close(self) -> None:
        if self._server is not None:
            self._server.close()


@dataclass
class Gateway:
    """mTLS + tenant header (+ OAuth2 bearer) in front of a Prometheus at `upstream`."""

    upstream: str
    pki: Pki
    tenant: str = "tenant-a"
    tokens: TokenServer | None = None
    seen: list[dict[str, str]] = field(default_factory=list)  # what each forwarded request had
    refused: list[str] = field(default_factory=list)
    _server: _ThreadServer | None = None

    def start(self) -> Gateway:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(self.pki.ca))
        context.load_cert_chain(self.pki.server_cert, self.pki.server_key)
        context.verify_mode = ssl.CERT_REQUIRED  # no client certificate: no handshake
        app = web.Application(middlewares=[self._guard])
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._server = _ThreadServer(app, context)
        self._server.start()
        return self

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"https://127.0.0.1:{self._server.port}"

    @web.middleware
    async def _guard(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if request.headers.get(TENANT_HEADER) != self.tenant:
            self.refused.append("tenant")
            return web.Response(status=401, text="no such tenant")
        if self.tokens is not None:
            auth = request.headers.get("Authorization", "")
            if not auth.startswith("Bearer ") or not self.tokens.valid(auth[7:]):
                self.refused.append("token")
                return web.Response(status=401, text="token expired or unknown")
        return await handler(request)

    async def _forward(self, request: web.Request) -> web.Response:
        path = request.path
        prefix = f"/select/{self.tenant}/prometheus"
        if path.startswith("/select/"):
            if not path.startswith(prefix + "/"):
                return web.Response(status=404, text="unknown tenant path")
            path = path[len(prefix) :]
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        subject = dict(item[0] for item in (peer or {}).get("subject", ()))
        self.seen.append(
            {
                "path": request.path,
                "tenant": request.headers.get(TENANT_HEADER, ""),
                "cn": subject.get("commonName", ""),
            }
        )
        body = await request.read()
        async with httpx.AsyncClient(timeout=30) as client:
            answer = await client.request(
                request.method,
                self.upstream + path,
                params=list(request.query.items()),
                content=body,
                headers={"Content-Type": request.headers.get("Content-Type", "")},
            )
        return web.Response(
            status=answer.status_code,
            body=answer.content,
            content_type=answer.headers.get("content-type", "application/json").split(";")[0],
        )

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
