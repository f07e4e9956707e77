"""How the fleet reaches a Prometheus behind a gateway: extra headers, mTLS, OAuth2.

VictoriaMetrics cluster, Mimir, Cortex and Thanos want a tenant header
(`X-Scope-OrgID`) or a tenant path (`/select/<tenant>/prometheus`: part of the URL,
nothing to add here); many sites want a client certificate; hosted ones put OAuth2
client-credentials in front. Every secret comes from an environment variable and only
the variable's name is ever written in a message.
"""

from __future__ import annotations

import asyncio
import os
import re
import ssl
import time
from collections.abc import AsyncGenerator, Generator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from tui.core.errors import ServedeckError
from tui.core.formatting import printable
from tui.fleet.prom_body import PrometheusError

ACCESS_KEYS = (
    "headers_env",
    "tls_cert",
    "tls_key",
    "tls_ca",
    "oauth2_token_url",
    "oauth2_client_id",
    "oauth2_scopes",
)
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110 token
EXPIRY_MARGIN_S = 30.0  # a token is renewed this long (at most a tenth of its life) early


@dataclass(frozen=True, slots=True)
class OAuth2Config:
    """Client-credentials: the secret is in the `auth_env` variable."""

    token_url: str
    client_id: str
    scopes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PromAccess:
    """The [fleet] keys past url and auth: headers, client certificate, CA, OAuth2."""

    headers_env: tuple[tuple[str, str], ...] = ()  # (header name, environment variable)
    tls_cert: Path | None = None
    tls_key: Path | None = None  # None: the key is in tls_cert's file
    tls_ca: Path | None = None  # None: the system's CAs
    oauth2: OAuth2Config | None = None


def access_from_table(table: Mapping[str, Any], auth: str, where: str) -> PromAccess:
    """The access keys of a [fleet] table; a bad one is one line naming the field."""

    def text(key: str) -> str | None:
        value = table.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ServedeckError(f"{where}.{key}: expected a non-empty string")
        return value

    def path(key: str) -> Path | None:
        value = text(key)
        return None if value is None else Path(value).expanduser()

    raw_headers = table.get("headers_env", {})
    if not isinstance(raw_headers, Mapping):
        raise ServedeckError(f'{where}.headers_env: expected a table of "Header-Name" = "ENV_VAR"')
    headers = []
    for name, var in raw_headers.items():
        if not _HEADER_NAME.fullmatch(str(name)):
            raise ServedeckError(f"{where}.headers_env: {printable(str(name))!r} is no header name")
        if not isinstance(var, str) or not var:
            raise ServedeckError(f"{where}.headers_env.{name}: expected an environment variable")
        headers.append((str(name), var))
    cert, key, ca = path("tls_cert"), path("tls_key"), path("tls_ca")
    if key is not None and cert is None:
        raise ServedeckError(f"{where}.tls_key: needs tls_cert (the client certificate)")
    oauth2 = None
    token_url, client_id = text("oauth2_token_url"), text("oauth2_client_id")
    scopes = table.get("oauth2_scopes", [])
    if not isinstance(scopes, list) or not all(isinstance(s, str) for s in scopes):
        raise ServedeckError(f"{where}.oauth2_scopes: expected a list of strings")
    if auth == "oauth2":
        if not token_url or not token_url.startswith(("http://", "https://")):
            raise ServedeckError(f"{where}.oauth2_token_url: expected the token endpoint's URL")
        if not client_id:
            raise ServedeckError(f'{where}.oauth2_client_id: missing (auth = "oauth2")')
        oauth2 = OAuth2Config(token_url, client_id, tuple(scopes))
    elif token_url or client_id or scopes:
        raise ServedeckError(f'{where}.auth: the oauth2_* keys need auth = "oauth2"')
    return PromAccess(tuple(headers), cert, key, ca, oauth2)


def header_values(access: PromAccess) -> dict[str, str]:
    """The extra headers with their values read now from the environment."""
    values = {}
    for name, var in access.headers_env:
        value = os.environ.get(var)
        if not value:
            raise ServedeckError(f"fleet: environment variable {var} (header {name}) is not set")
        if "\r" in value or "\n" in value:
            raise ServedeckError(
                f"fleet: environment variable {var} (header {name}) holds a newline"
            )
        values[name] = value
    return values


def _no_password() -> bytes:
    raise ServedeckError("the key is encrypted: give an unencrypted key (chmod 600)")


def _unloadable(field: str, file: Path, error: Exception) -> ServedeckError:
    reason = getattr(error, "reason", None) or getattr(error, "strerror", None) or error
    return ServedeckError(f"fleet: {field} {file}: cannot load it ({printable(str(reason))})")


def tls_verify(access: PromAccess, verify_tls: bool) -> bool | ssl.SSLContext:
    """What httpx verifies with: a context holding the CA and client certificate, if any."""
    if access.tls_cert is None and access.tls_ca is None:
        return verify_tls
    for field, file in (("tls_ca", access.tls_ca), ("tls_cert", access.tls_cert)):
        if file is not None and not file.is_file():
            raise ServedeckError(f"fleet: {field} {file}: no such file")
    context = ssl.create_default_context()
    if access.tls_ca is not None:
        try:
            context = ssl.create_default_context(cafile=str(access.tls_ca))
        except (OSError, ssl.SSLError) as error:
            raise _unloadable("tls_ca", access.tls_ca, error) from None
    if access.tls_cert is not None:
        key = access.tls_key
        try:
            context.load_cert_chain(access.tls_cert, key, password=_no_password)
        except ServedeckError as error:
            raise ServedeckError(f"fleet: tls_key {key or access.tls_cert}: {error}") from None
        except (OSError, ssl.SSLError) as error:
            raise _unloadable("tls_cert/tls_key", access.tls_cert, error) from None
    if not verify_tls:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _shown(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}{':' + str(parts.port) if parts.port else ''}{parts.path}"


class OAuth2Auth(httpx.Auth):
    """OAuth2 client-credentials for httpx: one token, reused until shortly before it
    expires, renewed once when the server answers 401 to it."""

    def __init__(
        self, oauth2: OAuth2Config, secret_env: str | None, verify: bool | ssl.SSLContext
    ) -> None:
        self.oauth2 = oauth2
        self.secret_env = secret_env or ""
        self.where = f"OAuth2 token endpoint {_shown(oauth2.token_url)}"
        self.fetches = 0
        self._verify = verify
        self._token: str | None = None
        self._renew_at_s: float | None = None  # monotonic; None: until a 401
        self._lock = asyncio.Lock()
        self._client: httpx.AsyncClient | None = None

    def sync_auth_flow(
        self, request: httpx.Request
    ) -> Generator[httpx.Request, httpx.Response, None]:
        raise RuntimeError("OAuth2Auth is for httpx.AsyncClient")

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        token = await self._current(stale=None)
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:
            token = await self._current(stale=token)
            request.headers["Authorization"] = f"Bearer {token}"
            yield request

    async def _current(self, stale: str | None) -> str:
        async with self._lock:
            fresh = self._renew_at_s is None or time.monotonic() < self._renew_at_s
            if self._token is not None and self._token != stale and fresh:
                return self._token
            self._token, self._renew_at_s = await self._fetch()
            return self._token

    async def _fetch(self) -> tuple[str, float | None]:
        secret = os.environ.get(self.secret_env)
        if not secret:
            raise ServedeckError(
                f"fleet: environment variable {self.secret_env or '(auth_env)'} "
                "(the OAuth2 client secret) is not set"
            )
        if self._client is None:
            self._client = httpx.AsyncClient(verify=self._verify, timeout=10.0)
        form = {"grant_type": "client_credentials"}
        if self.oauth2.scopes:
            form["scope"] = " ".join(self.oauth2.scopes)
        self.fetches += 1
        try:
            answer = await self._client.post(
                self.oauth2.token_url, data=form, auth=(self.oauth2.client_id, secret)
            )
        except httpx.HTTPError as error:
            raise PrometheusError(self.where, printable(type(error).__name__)) from None
        try:
            body = answer.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            body = {}
        if answer.status_code != 200:
            code = printable(str(body.get("error", "")))[:60]
            raise PrometheusError(self.where, f"HTTP {answer.status_code} {code}".strip())
        token = body.get("access_token")
        if not isinstance(token, str) or not token:
            raise PrometheusError(self.where, "the answer holds no access_token")
        expires = body.get("expires_in")
        if isinstance(expires, int | float) and not isinstance(expires, bool) and expires > 0:
            return token, time.monotonic() + expires - min(EXPIRY_MARGIN_S, expires / 10)
        return token, None

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
