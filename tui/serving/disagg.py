"""Prefill/decode disaggregation: the engine's KV-transfer role and its NIXL transfers.

The role is `kv_role` of `--kv-transfer-config` (vllm/config/kv_transfer.py: kv_producer,
kv_consumer, kv_both). vLLM exposes it in no info metric (only `vllm:cache_config_info`,
vllm/v1/metrics/loggers.py log_metrics_info), so the log's `non-default args` line
(vllm/entrypoints/serve/utils/api_utils.py) says it, as the repr of a KVTransferConfig.
/metrics shows half of it: `vllm:num_requests_kv_fetch_by_stage` is registered only when
the engine consumes KV (loggers.py, `is_kv_consumer`). The NIXL connector's families are
vllm/distributed/kv_transfer/kv_connector/v1/nixl/stats.py NixlPromMetrics, labelled
["model_name", "engine"]; a transfer is recorded by the side that reads the KV (decode).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui.serving.engines import EngineMetrics
    from tui.serving.metrics import MetricsScrape

XFER_TIME = "vllm:nixl_xfer_time_seconds"  # histogram: one observation per transfer
BYTES = "vllm:nixl_bytes_transferred"  # histogram of bytes per transfer
FAILED = "vllm:nixl_num_failed_transfers"  # counter (handshake and notification failures too)
EXPIRED = "vllm:nixl_num_kv_expired_reqs"  # counter, on the prefill side
KV_FETCH = "vllm:num_requests_kv_fetch_by_stage"  # gauge, only on a KV consumer
DISAGG_FAMILIES = frozenset((XFER_TIME, BYTES, FAILED, EXPIRED, KV_FETCH))

ROLES = {"kv_producer": "prefill", "kv_consumer": "decode", "kv_both": "prefill+decode"}
_ROLE = re.compile(r"""\bkv_role['"]?\s*[:=]\s*['"](kv_producer|kv_consumer|kv_both)['"]""")
_ARGS = "non-default args:"


def role_from_log(lines: list[str] | tuple[str, ...]) -> str | None:
    """prefill, decode or prefill+decode from the last `non-default args` line; None unsaid."""
    for line in reversed(lines):
        if _ARGS in line:
            found = _ROLE.search(line)
            return ROLES[found.group(1)] if found else None
    return None


@dataclass(frozen=True, slots=True)
class KvTransfers:
    """One engine's NIXL figures: totals, and the interval's change (None: no interval yet)."""

    engine: str
    consumer: bool  # the engine reads KV: `vllm:num_requests_kv_fetch_by_stage` is exposed
    transfers_total: int | None
    transfers_in_interval: int | None
    failed_total: int | None
    failed_in_interval: int | None
    expired_total: int | None


def _count(scrape: MetricsScrape | None, name: str) -> float | None:
    """A histogram's observation count (its +Inf bucket) or a counter's value."""
    if scrape is None:
        return None
    buckets = scrape.buckets.get(name)
    if buckets:
        return buckets[-1][1]
    return scrape.values.get(name)


def _delta(now: float | None, before: float | None) -> int | None:
    if now is None or before is None:
        return None
    return int(now - before) if now >= before else int(now)  # a reset: the new life


def kv_transfers(current: MetricsScrape, previous: MetricsScrape | None) -> tuple[KvTransfers, ...]:
    """One row per engine that exposes any NIXL or KV-fetch family; () without P/D."""
    scrapes = current.engines or {"0": current}
    rows = []
    for engine, scrape in scrapes.items():
        if not any(name in scrape.values or name in scrape.buckets for name in DISAGG_FAMILIES):
            continue
        before = (previous.engines or {"0": previous}).get(engine) if previous else None
        transfers, failed = _count(scrape, XFER_TIME), _count(scrape, FAILED)
        expired = _count(scrape, EXPIRED)
        rows.append(
            KvTransfers(
                engine=engine,
                consumer=KV_FETCH in scrape.values,
                transfers_total=None if transfers is None else int(transfers),
                transfers_in_interval=_delta(transfers, _count(before, XFER_TIME)),
                failed_total=None if failed is None else int(failed),
                failed_in_interval=_delta(failed, _count(before, FAILED)),
                expired_total=None if expired is None else int(expired),
            )
        )
    return tuple(rows)


def role_from_metrics(transfers: tuple[KvTransfers, ...]) -> str | None:
    """What /metrics alone shows: decode (reads KV), prefill (NIXL only), None without P/D."""
    if not transfers:
        return None
    return "decode" if any(t.consumer for t in transfers) else "prefill"


def pd_warnings(
    role: str | None,
    transfers: tuple[KvTransfers, ...],
    engines: tuple[EngineMetrics, ...],
) -> tuple[str, ...]:
    """Transfers failing, or a decode engine serving with no KV from any prefill engine.

    A proxy that sends every request straight to decode leaves the prefill engine at 0
    requests (modelplane #175): the decode engine then computes each prompt itself and
    its NIXL transfer count does not move while it serves.
    """
    out = []
    serving = {e.engine: e for e in engines}
    for t in transfers:
        if t.failed_in_interval:
            out.append(
                f"KV transfers failing on engine {t.engine}: {t.failed_in_interval} failed "
                f"in the interval ({FAILED} {t.failed_total})"
            )
        engine = serving.get(t.engine)
        if engine is None or not (engine.running_reqs or engine.generation_tokens_per_s):
            continue
        if (role or ("decode" if t.consumer else None)) == "decode" and (
            t.transfers_in_interval == 0
        ):
            out.append(
                f"prefill engine handled 0 requests: decode engine {t.engine} serves "
                f"(running {engine.running_reqs}) with no KV transfer in the interval "
                f"({XFER_TIME} count {t.transfers_total})"
            )
    return tuple(out)


def pd_line(role: str | None, transfers: tuple[KvTransfers, ...]) -> str | None:
    """`P/D decode: KV in 12 (+3), failed 0`; None without P/D."""
    role = role or role_from_metrics(transfers)
    if role is None:
        return None

    def n(value: int | None) -> str:
        return "n/a" if value is None else str(value)

    moved = sum(t.transfers_total or 0 for t in transfers) if transfers else None
    failed = [t.failed_total for t in transfers if t.failed_total is not None]
    return (
        f"P/D {role}: KV transfers {n(moved)}, failed {n(sum(failed) if failed else None)}"
        if transfers
        else f"P/D {role}: no NIXL metrics"
    )
