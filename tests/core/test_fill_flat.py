"""The GPU table's fill rate goes the sample memory is flat, and shows no ETA (item 2)."""

from __future__ import annotations

from tests.core.test_gpu_history import _snapshot
from tui.gpu.history import GpuHistory
from widgets import gpu_format as fmt

GIB = 1024**3


def test_the_first_flat_sample_ends_the_fill_rate() -> None:
    history = GpuHistory(target_fraction=0.9)
    for t in range(20):
        history.add(_snapshot(float(t), [t * 4 * GIB]))
    rising = history.trend(0)
    assert rising.memory_rising
    cell = fmt.fill_cell(rising.memory_fill_bytes_per_s, rising.memory_rising)
    assert cell.endswith("G/s[/]"), cell  # a rate, no per-GPU ETA beside the Deck's one
    history.add(_snapshot(20.0, [76 * GIB]))  # one sample later, memory is flat
    flat = history.trend(0)
    assert not flat.memory_rising
    assert fmt.fill_cell(flat.memory_fill_bytes_per_s, flat.memory_rising) == ""
