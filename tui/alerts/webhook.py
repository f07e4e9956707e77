"""The alert webhook: one JSON POST per alert change to the profile's URL, off the caller's thread.

Deliveries run apart (a hung endpoint for one alert never holds the next), each within
a deadline; the ones that fail are handed back for the Timeline.

Only the configured URL is contacted (redirects are not followed). A connection
error, a timeout, a 429 or a 5xx is retried with exponential backoff; any other
answer ends the delivery, so a firing is posted once and only retried on failure.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from tui.core.alert_rules import WebhookConfig
from tui.core.redact import redact_text

MAX_IN_FLIGHT = 4  # POSTs at once; more alerts wait for a slot (their deadline runs)
MAX_WAITING = 256  # changes not yet delivered; beyond, a change is dropped and said
DELIVERIES_KEPT = 256  # the latest outcomes in memory; failures also go to the Timeline


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


def url_for_display(url: str) -> str:
    """Scheme, host and port only: a webhook's path and query are often its secret
    (`/services/T0/B0/XXXX`, `?token=`)."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}/..."


class WebhookSender:
    """Posts each alert change in a daemon thread of its own, at most MAX_IN_FLIGHT at once.

    One hung endpoint holds only its own alert (changes of one alert stay in order: they
    queue behind it); every delivery ends by its deadline. A failed one is kept for
    `take_failures()`, which the monitor turns into a Timeline event."""

    def __init__(
        self,
        config: WebhookConfig,
        extra_secrets: tuple[str, ...] = (),
        *,
        deadline_s: float | None = None,
    ) -> None:
        self.config = config
        self.extra_secrets = extra_secrets
        self.deadline_s = deadline_s or delivery_deadline_s(config)
        self.deliveries: deque[Delivery] = deque(maxlen=DELIVERIES_KEPT)
        self._failures: queue.SimpleQueue[Delivery] = queue.SimpleQueue()
        self._lock = threading.Condition()
        self._lanes: dict[str, deque[tuple[dict[str, Any], float]]] = {}  # waiting, by alert
        self._waiting = 0  # changes accepted and not yet delivered or given up
        self._slots = threading.BoundedSemaphore(MAX_IN_FLIGHT)
        self._closed = False
        timeout = httpx.Timeout(config.timeout_s, connect=min(config.timeout_s, 5.0))
        self._client = httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False)

    def send(self, alert_id: str, payload: dict[str, Any]) -> None:
        deadline = time.monotonic() + self.deadline_s
        with self._lock:
            if self._closed:
                return
            if self._waiting >= MAX_WAITING:
                self._record(
                    Delivery(alert_id, False, 0, f"dropped: {MAX_WAITING} deliveries waiting")
                )
                return
            self._waiting += 1
            lane = self._lanes.get(alert_id)
            if lane is not None:  # this alert's previous change is still on its way
                lane.append((payload, deadline))
                return
            self._lanes[alert_id] = deque()
        threading.Thread(
            target=self._lane,
            args=(alert_id, payload, deadline),
            name="servedeck-webhook",
            daemon=True,  # a hung POST never holds the process's exit
        ).start()

    def take_failures(self) -> list[Delivery]:
        """The failed deliveries since the last call (thread-safe)."""
        failures = []
        while True:
            try:
                failures.append(self._failures.get_nowait())
            except queue.Empty:
                return failures

    def close(self, timeout_s: float = 10.0) -> None:
        """Wait up to timeout_s for the deliveries under way; later sends are ignored."""
        with self._lock:
            self._closed = True
            self._lock.wait_for(lambda: self._waiting == 0, timeout_s)
            idle = self._waiting == 0
        if idle:
            self._client.close()

    def _record(self, delivery: Delivery) -> None:
        self.deliveries.append(delivery)
        if not delivery.ok:
            self._failures.put(delivery)

    def _lane(self, alert_id: str, payload: dict[str, Any], deadline: float) -> None:
        while True:
            with self._slots:
                delivery = self._deliver(alert_id, payload, deadline)
            with self._lock:
                self._record(delivery)
                self._waiting -= 1
                lane = self._lanes[alert_id]
                if not lane:
                    del self._lanes[alert_id]
                    self._lock.notify_all()
                    return
                payload, deadline = lane.popleft()

    def _deliver(self, alert_id: str, payload: dict[str, Any], deadline: float) -> Delivery:
        body = redacted_body(payload, self.extra_secrets)
        headers = {"Content-Type": "application/json", "User-Agent": "servedeck-alerts"}
        attempts = 0
        detail = "not sent"
        while attempts <= self.config.retries:
            left_s = deadline - time.monotonic()
            if left_s <= 0:
                return self._failed(
                    alert_id, attempts, f"deadline of {self.deadline_s:g} s passed: {detail}"
                )
            attempts += 1
            timeout = httpx.Timeout(min(self.config.timeout_s, left_s), connect=min(5.0, left_s))
            try:
                response = self._client.post(
                    self.config.url, content=body, headers=headers, timeout=timeout
                )
            except httpx.HTTPError as error:
                detail = f"{type(error).__name__}: {error}"
            else:
                detail = f"HTTP {response.status_code}"
                if response.status_code < 500 and response.status_code != 429:
                    if response.is_success:
                        return Delivery(alert_id, True, attempts, detail)
                    return self._failed(alert_id, attempts, detail)
            if attempts <= self.config.retries:
                pause_s = self.config.backoff_s * 2 ** (attempts - 1)
                time.sleep(max(0.0, min(pause_s, deadline - time.monotonic())))
        return self._failed(alert_id, attempts, f"gave up after {attempts} attempts: {detail}")

    def _failed(self, alert_id: str, attempts: int, detail: str) -> Delivery:
        """A failed Delivery whose detail never carries the URL's path or a secret."""
        detail = detail.replace(self.config.url, url_for_display(self.config.url))
        return Delivery(alert_id, False, attempts, redact_text(detail, self.extra_secrets)[:300])


def delivery_deadline_s(config: WebhookConfig) -> float:
    """Every attempt and pause of one delivery, plus a margin; never more than 10 minutes."""
    pauses_s = sum(config.backoff_s * 2**i for i in range(config.retries))
    return min(600.0, (config.retries + 1) * config.timeout_s + pauses_s + 5.0)
