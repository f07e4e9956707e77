"""`servedeck health` as a process: the JSON contract on the simulated box, and the text."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.support.cli_support import assert_fits, cli_env, run  # noqa: F401  (fixture)


def test_health_demo_json_per_gpu_events_and_counters(cli_env: dict[str, str]) -> None:  # noqa: F811
    env = cli_env | {"SERVEDECK_SIM_XID": "79@5,63@2,999@0,garbage"}
    result = run(env, "health", "--demo", "--json")
    assert result.returncode == 1, result.stderr  # a crit GPU
    data = json.loads(result.stdout)
    gpus = data["gpus"]
    assert [g["index"] for g in gpus] == list(range(8))
    assert [g["badge"] for g in gpus] == ["warn", "ok", "warn", "ok", "ok", "crit", "ok", "ok"]
    assert [e["xid"] for e in gpus[5]["events"]] == [79]
    assert gpus[5]["events"][0]["bus_id"] == "0000:a1:00.0"
    assert gpus[2]["counters"]["remapped_rows_pending"] is True
    assert gpus[0]["events"][0]["name"] == "unknown XID 999"
    assert data["event_source"] == "simulated"


def test_health_demo_text_clean(cli_env: dict[str, str]) -> None:  # noqa: F811
    result = run(cli_env, "health", "--demo")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("[OK  ] GPU") == 8 and "verdict: ok" in result.stdout
    assert_fits(result.stdout, "health --demo")


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has a driver")
def test_health_on_a_host_without_a_driver(cli_env: dict[str, str]) -> None:  # noqa: F811
    result = run(cli_env, "health")
    assert result.returncode == 0, result.stderr
    assert "no GPU counters" in result.stdout and "Traceback" not in result.stderr


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has a driver")
def test_probe_refuses_where_no_gpu_answers(cli_env: dict[str, str]) -> None:  # noqa: F811
    result = run(cli_env, "probe", "--yes")
    assert result.returncode == 3, result.stderr
    assert "probe refused on local: GPUs unreadable" in result.stderr
    assert "Traceback" not in result.stderr


def test_probe_refuses_on_a_read_only_profile(cli_env: dict[str, str]) -> None:  # noqa: F811
    result = run(cli_env, "probe", "--read-only", "--yes")
    assert result.returncode == 1
    assert "probe: the profile is read-only" in result.stderr and "Traceback" not in result.stderr


def test_health_demo_hostile_sim_xid_names_the_bad_entries(cli_env: dict[str, str]) -> None:  # noqa: F811
    """A 5,000-digit XID, a GPU that is not there, a superscript digit and garbage: the
    report still comes (exit 1 for GPU5's crit), with one note naming each entry left out."""
    huge = "7" * 5000
    env = cli_env | {"SERVEDECK_SIM_XID": f"{huge}@1,79@5,garbage,63@99,\u00b2@2"}
    result = run(env, "health", "--demo", "--json")
    assert "Traceback" not in result.stderr
    assert result.returncode == 1, result.stderr
    data = json.loads(result.stdout)
    assert [e["xid"] for g in data["gpus"] for e in g["events"]] == [79]
    (note,) = data["notes"]
    assert note.startswith("SERVEDECK_SIM_XID: ignored '7777777777") and "\n" not in note
    assert "characters cut)'" in note and len(note) < 300
    assert "'garbage', '63@99', '\u00b2@2' (each entry is XID@GPU" in note
    text = run(env, "health", "--demo")
    assert text.returncode == 1 and "note: SERVEDECK_SIM_XID: ignored" in text.stdout
