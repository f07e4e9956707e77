"""The alert webhook: one JSON POST per alert change to the profile's URL, off the caller's thread.

Only the configured URL is contacted (redirects are not followed). A connection
error, a timeout, a 429 or a 5xx is retried with exponential backoff; any other
answer ends the delivery, so a firing is posted once and only retried on failure.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, cast

import httpx

from tui.alerts.rules import WebhookConfig
from tui.core.redact import redact_text

_STOP = object()


@dataclass(frozen=True, slots=True)
class Delivery:
    alert_id: str
    ok: bool
    attempts: int
    detail: str  # "HTTP 200", "ConnectError: ...", "gave up after 4 attempts: HTTP 500"


def redacted_body(payload: dict[str, Any], extra_secrets: tuple[str, ...] = ()) -> bytes:
    """The JSON body with every string value passed through the redactor."""

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return redact_text(value, extra_secrets)
        if isinstance(value, dict):
            return {key: clean(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [clean(item) for item in value]
        return value

    return json.dumps(clean(payload), sort_keys=True, default=str).encode()


class WebhookSender:
    """A daemon thread that posts queued payloads in order."""

    def __init__(self, config: WebhookConfig, extra_secrets: tuple[str, ...] = ()) -> None:
        self.config = config
        self.extra_secrets = extra_secrets
        self.deliveries: list[Delivery] = []
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="servedeck-webhook", daemon=True)
        self._thread.start()

    def send(self, alert_id: str, payload: dict[str, Any]) -> None:
        self._queue.put((alert_id, payload))

    def close(self, timeout_s: float = 10.0) -> None:
        self._queue.put(_STOP)
        self._thread.join(timeout_s)

    def _run(self) -> None:
        timeout = httpx.Timeout(self.config.timeout_s, connect=min(self.config.timeout_s, 5.0))
        with httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False) as client:
            while True:
                item = self._queue.get()
                if item is _STOP:
                    return
                alert_id, payload = cast("tuple[str, dict[str, Any]]", item)
                self.deliveries.append(self._deliver(client, alert_id, payload))

    def _deliver(self, client: httpx.Client, alert_id: str, payload: dict[str, Any]) -> Delivery:
        body = redacted_body(payload, self.extra_secrets)
        headers = {"Content-Type": "application/json", "User-Agent": "servedeck-alerts"}
        attempts = 0
        detail = ""
        while attempts <= self.config.retries:
            attempts += 1
            try:
                response = client.post(self.config.url, content=body, headers=headers)
            except httpx.HTTPError as error:
                detail = f"{type(error).__name__}: {error}"
            else:
                detail = f"HTTP {response.status_code}"
                if response.status_code < 500 and response.status_code != 429:
                    return Delivery(alert_id, response.is_success, attempts, detail)
            if attempts <= self.config.retries:
                time.sleep(self.config.backoff_s * 2 ** (attempts - 1))
        return Delivery(alert_id, False, attempts, f"gave up after {attempts} attempts: {detail}")
