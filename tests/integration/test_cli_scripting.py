"""The command line as scripts and 80-column terminals use it: exit codes, widths, early refusals.

Every command runs as a real `python -m tui` process; the demo ones start the
real simulator (a loopback HTTP server and its worker processes).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli_support import REPO, assert_fits, closed_port, run, write_profile


# -- profiles check ------------------------------------------------------------------------
def test_profiles_check_without_arguments_checks_every_profile(cli_env: dict[str, str]) -> None:
    result = run(cli_env, "profiles", "check")
    assert result.returncode == 0, result.stderr
    shipped = sorted(path.stem for path in (REPO / "profiles").glob("*.toml"))
    assert len(shipped) >= 3
    for name in shipped:
        assert f"{name}.toml: ok" in result.stdout


def test_profiles_check_good_and_bad_still_prints_the_good_ones_ok(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    bad = write_profile(tmp_path, "bad", '[host]\nkind = "teleport"\n')
    result = run(cli_env, "profiles", "check", "demo", str(bad))
    assert result.returncode == 2
    assert "demo: ok" in result.stdout
    assert "bad.toml" in result.stderr and "ok" not in result.stdout.replace("demo: ok", "")


# -- status exit codes ---------------------------------------------------------------------
def test_status_exits_3_when_the_host_is_unreachable(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    profile = write_profile(
        tmp_path,
        "down",
        f'[host]\nkind = "ssh"\nhostname = "127.0.0.1"\nport = {closed_port()}\n'
        f'user = "nobody"\nconnect_timeout_s = 3\n'
        f'[service]\nunit = "vllm.service"\nbase_url = "http://127.0.0.1:{closed_port()}"\n',
    )
    result = run(cli_env, "status", "-p", str(profile))
    assert result.returncode == 3, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith("verdict host unreachable")
    assert "Traceback" not in result.stderr
    assert_fits(result.stdout, "status (unreachable)")
    as_json = run(cli_env, "status", "-p", str(profile), "--json")
    assert as_json.returncode == 3
    assert json.loads(as_json.stdout)["host_reachable"] is False


def test_status_exits_1_when_the_server_does_not_answer(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    profile = write_profile(
        tmp_path,
        "quiet",
        f'[host]\nkind = "local"\n[service]\nbase_url = "http://127.0.0.1:{closed_port()}"\n',
    )
    result = run(cli_env, "status", "-p", str(profile))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "not answering" in result.stdout
    assert result.stdout.rstrip().endswith("verdict not serving")


def test_status_demo_serving_exit_0_fits_80_and_times_phases_from_the_log(
    cli_env: dict[str, str],
) -> None:
    """The CLI demo loads for ~4 s: weights must take seconds by the log, not the read time."""
    result = run(cli_env, "status", "--demo", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["serving"] is True
    spans = {span["phase"]: span["duration_s"] for span in report["load"]["timeline"]}
    assert spans["weights"] >= 2.0, spans
    text = run(cli_env, "status", "--demo")
    assert text.returncode == 0
    assert text.stdout.rstrip().endswith("verdict serving")
    assert_fits(text.stdout, "status --demo")


# -- widths --------------------------------------------------------------------------------
def test_profiles_list_and_doctor_fit_80_columns(cli_env: dict[str, str]) -> None:
    listed = run(cli_env, "profiles", "list")
    assert listed.returncode == 0
    assert "root@10.10.0.21 via root@pve.lab.example" in listed.stdout  # nothing cut
    assert "vllm-minimax-m25.service" in listed.stdout
    assert_fits(listed.stdout, "profiles list")
    doctor = run(cli_env, "doctor")
    assert "Traceback" not in doctor.stderr
    assert_fits(doctor.stdout, "doctor")


def test_gpus_and_bench_on_the_demo_fit_80_columns(cli_env: dict[str, str]) -> None:
    gpus = run(cli_env, "gpus", "--demo")
    assert gpus.returncode == 0, gpus.stderr
    assert "every GPU: RTX PRO 6000 Blackwell Server Edition" in gpus.stdout
    assert_fits(gpus.stdout, "gpus --demo")
    bench = run(cli_env, "bench", "--demo", "--preset", "quick")
    assert bench.returncode == 0, bench.stderr
    assert_fits(bench.stdout, "bench --demo")
    # The header says what was sent (the server's prompt count): prompts are made to the
    # asked count, so it is the target itself, and the report says how it was made exact.
    assert "input 128 tok," in bench.stdout and "tok sent" not in bench.stdout
    assert "prompt tokens: calibrated (/tokenize)" in bench.stdout
    lines = bench.stdout.splitlines()
    row = next(line for line in lines if line.strip().startswith("c=1 "))
    single = next(line for line in lines if line.startswith("single stream "))
    # One definition: the single-stream figure is the c=1 row's output tok/s.
    assert single.split()[2] == row.split()[-2]
    assert any(line.startswith("decode ") and "1 / mean TPOT" in line for line in lines)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--concurrency", "0"), "--concurrency must be positive, got 0"),
        (("--preset", "no-such-preset"), "unknown preset 'no-such-preset'"),
    ],
)
def test_bench_rejects_bad_arguments_before_the_simulator_starts(
    cli_env: dict[str, str], tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    # Watch TMPDIR while the command runs: a started simulator makes its state dir there
    # (and removes it when it closes, so looking only afterwards would prove nothing).
    command = subprocess.Popen(
        [sys.executable, "-m", "tui", "bench", "--demo", *args],
        cwd=REPO,
        env=cli_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: set[str] = set()
    while command.poll() is None:
        seen.update(path.name for path in (tmp_path / "tmp").glob("servedeck-sim-*"))
        time.sleep(0.02)
    _, stderr = command.communicate(timeout=60)
    assert command.returncode == 2
    assert message in stderr
    assert not seen, f"a simulator was started: {seen}"


# -- summary exit code -----------------------------------------------------------------------
def test_summary_exits_1_and_names_the_parts_it_could_not_collect(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    profile = write_profile(
        tmp_path,
        "partial",
        f'[host]\nkind = "local"\n[service]\nbase_url = "http://127.0.0.1:{closed_port()}"\n',
    )
    result = run(cli_env, "summary", "-p", str(profile), "-o", "-")
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("# ")  # the partial summary is still printed
    assert "summary incomplete" in result.stderr
    assert "  serving metrics: " in result.stderr
