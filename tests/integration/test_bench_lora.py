"""`servedeck bench --lora`: requests across a real simulated server's LoRA adapters.

The simulator serves `--enable-lora --lora-modules sql=... chat=...` as vLLM does
(/v1/models lists each adapter with its parent) and records which adapter each request
named (/_sim/truth `lora`): the server's own account is checked against the asked shares.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import httpx
import pytest

from tests.support.sim_fixtures import module_sim_box
from tui.cli import main
from tui.sim.box import SimBox, SimServerOptions

OPTIONS = SimServerOptions(
    shards=2,
    decode_step_s=0.002,
    extra_args=(
        *("--enable-lora", "--lora-modules", "sql=/adapters/sql", "chat=/adapters/chat"),
        *("--max-loras", "2"),
    ),
)


box = module_sim_box("bench-lora", OPTIONS, seed=5)


def _last_number(url: str) -> int:
    records = httpx.get(f"{url}/_sim/truth", timeout=30).json()["requests"]
    return max((int(r["number"]) for r in records), default=0)


def test_requests_go_across_the_adapters_by_weight_with_figures_per_adapter(
    box: SimBox, capsys: pytest.CaptureFixture[str]
) -> None:
    url = box.base_url
    since = _last_number(url)
    code = main([
        "bench", "--url", url, "--lora", "sql,chat:3", "--concurrency", "1", "4",
        "--num-requests", "8", "--input-tokens", "16", "--output-tokens", "6", "--json",
    ])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    levels = json.loads(captured.out)
    for level in levels:
        adapters = {a["name"]: a for a in level["servedeck"]["adapters"]}
        assert {name: a["completed"] for name, a in adapters.items()} == {"sql": 2, "chat": 6}
        assert all(
            a["failed"] == 0 and a["ttft"]["count"] == a["completed"] for a in adapters.values()
        )
        total = sum(a["output_throughput"] for a in adapters.values())
        assert total == pytest.approx(level["output_throughput"], rel=1e-6)
    records = httpx.get(f"{url}/_sim/truth", params={"since": since}, timeout=30).json()
    named = Counter(r["lora"] for r in records["requests"])
    # Every request named an adapter: 16 measured, and the warm-up the order's first (chat).
    assert named == {"sql": 4, "chat": 13}


def test_the_report_has_a_line_per_adapter(box: SimBox, capsys: pytest.CaptureFixture[str]) -> None:
    code = main([
        "bench", "--url", box.base_url, "--lora", "chat,sql", "--num-requests", "4",
        "--input-tokens", "8", "--output-tokens", "4",
    ])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "    LoRA chat: 2 ok, 0 failed, out " in out and "    LoRA sql: 2 ok, 0 failed" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--lora", "sql,nope"], "--lora nope: not served by "),
        (["--lora", "sql:-1"], "--lora 'sql:-1': the weight must be positive"),
        (["--lora", "sql,sql"], "sql is named twice"),
        (["--lora", "sql", "--workload", "chat"], "--lora is not for --workload chat"),
        (["--lora", "sql", "--capacity"], "--lora is not for --capacity"),
    ],
)
def test_an_adapter_the_server_does_not_list_is_refused_in_one_line(
    box: SimBox, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["bench", "--url", box.base_url, "--num-requests", "2", *argv])
    err = capsys.readouterr().err.strip()
    assert code != 0
    assert message in err and "\n" not in err and "Traceback" not in err, err
    if "not served" in message:
        assert "(/v1/models lists adapters: chat, sql)" in err


def test_requests_file_names_each_requests_adapter(box: SimBox, tmp_path: Path) -> None:
    out = tmp_path / "requests.jsonl"
    code = main([
        "bench", "--url", box.base_url, "--lora", "sql,chat", "--num-requests", "4",
        "--input-tokens", "8", "--output-tokens", "4", "--requests", str(out), "--json",
    ])  # fmt: skip
    assert code == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert Counter(row["model"] for row in rows) == {"sql": 2, "chat": 2}
