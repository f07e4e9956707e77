"""The interconnect parsers on output captured from a real 2x H200 box (NVLink, idle).

The files in tests/support/fixtures/interconnect/h200x2/ are what `nvidia-smi topo -p2p r|w`,
`nvidia-smi topo -m` and `nvidia-smi -q -d MEMORY` printed there (tests/perf/h200_probe.py
saves them); the hand-written fixtures beside them model faults this box does not have.
"""

from __future__ import annotations

from pathlib import Path

from tui.health.interconnect.parse import p2p_matrix, parse_links, parse_memory_q

CAPTURE = Path(__file__).parents[1] / "support" / "fixtures" / "interconnect" / "h200x2"


def test_real_p2p_matrices_read_ok_both_ways() -> None:
    for name in ("p2p_r.txt", "p2p_w.txt"):
        matrix = p2p_matrix((CAPTURE / name).read_text())
        assert len(matrix) == 2 and all(len(row) == 2 for row in matrix), matrix
        assert matrix[0][1] == "OK" and matrix[1][0] == "OK", matrix


def test_real_bar1_is_read_per_gpu_and_larger_than_vram() -> None:
    memory = parse_memory_q((CAPTURE / "memory.txt").read_text())
    assert len(memory) == 2, memory
    for fb_bytes, bar1_bytes in memory.values():
        assert fb_bytes == 143771 * 2**20, memory  # H200: 140.4 GiB of VRAM
        assert bar1_bytes == 256 * 2**30, memory  # a BAR1 larger than VRAM: no BAR1 finding


def test_real_links_read_gen5_x16() -> None:
    links = parse_links((CAPTURE / "links.txt").read_text())
    assert [(link.gen_current, link.width_current) for link in links] == [(5, 16), (5, 16)]
