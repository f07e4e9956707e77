"""Is the server answering? /health and /v1/models, polled only once the log says it is starting.

vLLM binds its port only when the engine is up, so polling during a 30-minute
load just collects refused connections: the LoadTracker decides when to begin.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tui.core.errors import ServedeckError
from tui.serving.load.tracker import LoadProgress, Phase
from tui.serving.lora import adapters_from_models
from tui.serving.metrics import parse_metrics
from tui.serving.sleep import SLEEP_STATE, sleep_level

if TYPE_CHECKING:  # httpx loads on the first probe, not at console start
    import httpx


@dataclass(frozen=True, slots=True)
class Readiness:
    checked: bool  # False: not polled, the load has not reached the server start
    health_ok: bool
    models: tuple[str, ...]
    latency_s: float | None
    error: str | None
    at_s: float
    epoch: int = 0  # the LoadProgress.epoch the request was sent in
    # vLLM's sleep mode (GET /is_sleeping, a dev-mode endpoint: vllm/entrypoints/serve/dev/
    # sleep/api_router.py): True asleep, False awake, None not exposed (sleep mode unknown).
    asleep: bool | None = None
    # 1 weights offloaded, 2 discarded, from vllm:engine_sleep_state (tui.serving.sleep);
    # None awake or not exposed.
    sleep_level: int | None = None
    # LoRA adapters loaded: the /v1/models entries with a `parent` (tui.serving.lora).
    adapters: tuple[str, ...] = ()

    @property
    def ready(self) -> bool:
        """Answering and awake: a sleeping engine answers /health but serves nothing."""
        return self.health_ok and bool(self.models) and not self.asleep


class ReadinessProbe:
    """Short-timeout checks of /health and /v1/models."""

    def __init__(
        self, base_url: str, *, api_key: str | None = None, timeout_s: float = 2.0
    ) -> None:
        self.base_url = base_url.rstrip("/")
        import httpx

        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, 1.0))

    @staticmethod
    def should_poll(progress: LoadProgress | None, unit_active: bool | None = None) -> bool:
        """Poll when no log is available, or once the server start is in the log; never
        once the log says the server stopped or failed, nor while its unit is inactive
        (a server answering /health on its way down is not a load that finished)."""
        if unit_active is False:
            return False
        if progress is None:
            return True
        if progress.phase in (Phase.STOPPED, Phase.FAILED):
            return False
        return progress.http_starting or progress.phase == Phase.SERVING

    async def check(
        self, progress: LoadProgress | None = None, client: httpx.AsyncClient | None = None
    ) -> Readiness:
        """Poll /health and /v1/models; pass a long-lived client to avoid a new one per poll."""
        import httpx

        now = time.time()
        epoch = progress.epoch if progress is not None else 0
        if not self.should_poll(progress):
            return Readiness(False, False, (), None, None, now, epoch)
        started = time.monotonic()
        own_client = client is None
        http = client or httpx.AsyncClient(timeout=self._timeout)
        try:
            health = await http.get(
                f"{self.base_url}/health", headers=self._headers, timeout=self._timeout
            )
            latency = time.monotonic() - started
            models: tuple[str, ...] = ()
            asleep: bool | None = None
            level: int | None = None
            adapters: tuple[str, ...] = ()
            if health.status_code == 200:
                listing = await http.get(
                    f"{self.base_url}/v1/models", headers=self._headers, timeout=self._timeout
                )
                if listing.status_code == 200:
                    data = listing.json().get("data", [])
                    models = tuple(str(m.get("id", "?")) for m in data if isinstance(m, dict))
                    adapters = tuple(name for name, _ in adapters_from_models(data))
                asleep = await self._asleep(http)
                if asleep:
                    level = await self._sleep_level(http)
        except (httpx.HTTPError, ValueError) as error:
            return Readiness(True, False, (), None, f"{type(error).__name__}: {error}", now, epoch)
        finally:
            if own_client:
                await http.aclose()
        ok = health.status_code == 200
        return Readiness(
            True,
            ok,
            models,
            latency,
            None,
            now,
            epoch,
            asleep=asleep if ok else None,
            sleep_level=level,
            adapters=adapters,
        )

    async def _sleep_level(self, http: httpx.AsyncClient) -> int | None:
        """The level from /metrics' vllm:engine_sleep_state; None when it cannot be read."""
        import httpx

        try:
            page = await http.get(
                f"{self.base_url}/metrics", headers=self._headers, timeout=self._timeout
            )
            if page.status_code != 200:
                return None
            level = sleep_level(parse_metrics(page.text, families=frozenset((SLEEP_STATE,))))
        except (httpx.HTTPError, ServedeckError):
            return None
        return level or None

    async def _asleep(self, http: httpx.AsyncClient) -> bool | None:
        """GET /is_sleeping: {"is_sleeping": bool}; anything else (404 without
        VLLM_SERVER_DEV_MODE, another server) is unknown."""
        answer = await http.get(
            f"{self.base_url}/is_sleeping", headers=self._headers, timeout=self._timeout
        )
        if answer.status_code != 200:
            return None
        try:
            value = answer.json().get("is_sleeping")
        except (ValueError, AttributeError):
            return None
        return value if isinstance(value, bool) else None
