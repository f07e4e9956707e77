"""The access token a served console demands on every request.

Generated at start, printed once as part of the URL; a browser that came with it
keeps it in an HttpOnly, SameSite=Strict cookie so the page's own requests (script,
styles, websocket) carry it without the token staying in the address bar.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

TOKEN_QUERY = "token"
_TOKEN_BYTES = 24  # 192 bits: not guessable, short enough to paste


def new_token() -> str:
    return secrets.token_urlsafe(_TOKEN_BYTES)


@dataclass(frozen=True, slots=True)
class AccessToken:
    value: str
    port: int

    def __repr__(self) -> str:  # never in a log or a traceback
        return f"AccessToken(port={self.port}, value=<hidden>)"

    @property
    def cookie_name(self) -> str:
        """Per port: cookies are not isolated by port, two servers must not share one."""
        return f"servedeck_token_{self.port}"

    def matches(self, candidate: str | None) -> bool:
        """Constant-time comparison, so timing does not leak the token a byte at a time."""
        if not candidate:
            return False
        return hmac.compare_digest(candidate.encode(), self.value.encode())

    def presented(
        self, query: Mapping[str, str], cookies: Mapping[str, str], headers: Mapping[str, str]
    ) -> tuple[bool, bool]:
        """(authorised, came in the query): the query, the cookie or `Authorization: Bearer`."""
        if self.matches(query.get(TOKEN_QUERY)):
            return True, True
        if self.matches(cookies.get(self.cookie_name)):
            return True, False
        auth = headers.get("Authorization", "")
        scheme, _, credential = auth.partition(" ")
        return scheme.lower() == "bearer" and self.matches(credential.strip()), False
