"""Text for the GPU pane's cells: bars, sparklines, sizes and durations.

Formatting only: every number shown comes from a snapshot or a GpuTrend. Cells
are Rich markup strings, so the pane can diff them by plain string equality.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TypeVar

from rich.markup import escape

from tui.core.formatting import GIB

NA = "[dim]n/a[/]"
SPARK_LEVELS = "▁▂▃▄▅▆▇█"
T = TypeVar("T")


@lru_cache(maxsize=64)
def short_gpu_name(name: str, width: int) -> str:
    """ "NVIDIA RTX PRO 6000 Blackwell Server Edition" -> "RTX PRO 6000" at width 15:
    trailing words go before a cut, down to three words."""
    for prefix in ("NVIDIA ", "Nvidia "):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    words = name.split()
    while len(" ".join(words)) > width and len(words) > 3:  # "RTX PRO 6000", not "RTX PRO 6000 B…"
        words.pop()
    return clip(" ".join(words), width)


def clip(text: str, width: int) -> str:
    """At most width characters, with an ellipsis when cut; markup-escaped."""
    if len(text) > width:
        text = text[: max(0, width - 1)] + "…"
    return escape(text)


def bar(fraction: float | None, width: int, warn_at: float = 0.75, alarm_at: float = 0.92) -> str:
    """A horizontal bar, green to yellow (from warn_at) to red (from alarm_at) as it fills."""
    if fraction is None:
        return "[dim]" + "·" * width + "[/]"
    fraction = min(1.0, max(0.0, fraction))
    filled = round(fraction * width)
    color = "green" if fraction < warn_at else "yellow" if fraction < alarm_at else "red"
    return f"[{color}]{'█' * filled}[/][dim]{'░' * (width - filled)}[/]"


# A healthy vLLM holds gpu_memory_utilization (0.9 by default) of each GPU: memory is
# worth a colour only past that, when little headroom is left.
MEMORY_WARN_FRACTION = 0.95
MEMORY_ALARM_FRACTION = 0.98


def gib(value_bytes: int | float | None, digits: int = 1) -> str:
    return "?" if value_bytes is None else f"{value_bytes / GIB:.{digits}f}"


def memory_cell(used: int | None, total: int | None, bar_width: int, digits: int) -> str:
    fraction = used / total if used is not None and total else None
    shown = bar(fraction, bar_width, MEMORY_WARN_FRACTION, MEMORY_ALARM_FRACTION)
    return f"{shown} {gib(used, digits)}/{gib(total, digits)}G"


def percent_cell(pct: float | None, bar_width: int) -> str:
    if pct is None:
        return f"{bar(None, bar_width)}  {NA}"
    return f"{bar(pct / 100, bar_width)} {pct:3.0f}%"


def temperature_cell(celsius: float | None) -> str:
    if celsius is None:
        return NA
    color = "red" if celsius >= 85 else "yellow" if celsius >= 75 else ""
    text = f"{celsius:.0f}C"
    return f"[{color}]{text}[/]" if color else text


def power_cell(power_w: float | None, limit_w: float | None) -> str:
    if power_w is None:
        return NA
    limit = f"/{limit_w:.0f}" if limit_w else ""
    return f"{power_w:.0f}{limit}W"


def pcie_link_cell(gen: int | None, width: int | None, max_gen: int | None) -> str:
    if gen is None and width is None:
        return NA
    text = f"{gen or '?'}x{width or '?'}"
    # a loaded GPU below its max generation is worth a look; idle GPUs drop to gen 1 on purpose
    return f"[dim]{text}[/]" if max_gen and gen and gen < max_gen else text


def rate_bytes(value: float | None) -> str:
    """Bytes per second, compact: 950K, 12.3M, 1.2G."""
    if value is None:
        return "n/a"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if value >= scale:
            return (
                f"{value / scale:.1f}{unit}" if value < 10 * scale else f"{value / scale:.0f}{unit}"
            )
    return f"{value:.0f}"


def pcie_traffic_cell(tx: float | None, rx: float | None) -> str:
    if tx is None and rx is None:
        return NA
    return f"{rate_bytes(tx)}/{rate_bytes(rx)}"


def fill_cell(rate_bytes_per_s: float | None, rising: bool) -> str:
    """ "1.5G/s" while memory rises; empty once it is flat.

    No per-GPU ETA: the Deck has one answer ("ready in about X" on the load strip),
    which also counts the phases after the weights.
    """
    if not rising or rate_bytes_per_s is None:
        return ""
    return f"[cyan]{rate_bytes_per_s / GIB:.1f}G/s[/]"


def spark_buckets(values: Sequence[T], width: int) -> list[Sequence[T]]:
    """The series cut into at most `width` consecutive buckets (one value each if it fits)."""
    if len(values) <= width:
        return [values[i : i + 1] for i in range(len(values))]
    return [values[start:end] for start, end in _bucket_bounds(len(values), width)]


@lru_cache(maxsize=256)
def _bucket_bounds(count: int, width: int) -> tuple[tuple[int, int], ...]:
    """Where each of `width` buckets of a `count`-long series starts and ends (count > width).

    Kept per length: a GPU's series has the same length tick after tick, and the
    sparklines are drawn for every GPU twice a tick.
    """
    size = count / width
    return tuple((int(i * size), max(int((i + 1) * size), int(i * size) + 1)) for i in range(width))


def spark_cell(value: float, top: float) -> str:
    """One sparkline cell for value on a 0..top scale."""
    levels = len(SPARK_LEVELS) - 1
    level = round(min(value, top) / top * levels) if top > 0 else 0
    return SPARK_LEVELS[min(levels, max(0, level))]


def sparkline(values: Sequence[float], width: int, top: float = 100.0) -> str:
    """The series squeezed into width cells (max of each bucket), newest on the right."""
    if not values or width <= 0:
        return " " * max(width, 0)
    count = len(values)
    points: Sequence[float] = (
        [max(values[cut]) for cut in _bucket_slices(count, width)] if count > width else values
    )
    levels = len(SPARK_LEVELS) - 1
    # drawn for every GPU twice a tick, and a series moves by one value a tick: each value's
    # cell is kept (spark_cell's arithmetic on a miss; for top > 0 the level cannot pass
    # `levels`, so only a negative value needs clamping)
    if top > 0:
        kept = _spark_chars(top)
        if len(kept) > _SPARK_CHARS_KEPT:
            kept.clear()
        get = kept.get
        chars = "".join(
            [
                get(v)
                or kept.setdefault(v, SPARK_LEVELS[max(0, round(min(v, top) / top * levels))])
                for v in points
            ]
        )
    else:
        chars = "".join(
            [SPARK_LEVELS[min(levels, max(0, round(min(v, top) / top * levels)))] for v in points]
        )
    return chars.rjust(width)


_SPARK_CHARS_KEPT = 4096  # values whose cell is kept, per scale


@lru_cache(maxsize=8)
def _spark_chars(top: float) -> dict[float, str]:
    """The sparkline cell of each value seen, for one scale."""
    return {}


@lru_cache(maxsize=256)
def _bucket_slices(count: int, width: int) -> tuple[slice, ...]:
    return tuple(slice(start, end) for start, end in _bucket_bounds(count, width))
