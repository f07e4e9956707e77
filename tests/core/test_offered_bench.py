"""The footer offers the benchmark keys only when they can work now."""

from __future__ import annotations

from tui.offered import action_offered


def offered(action: str, **state: object) -> bool:
    base: dict[str, object] = {"read_only": False, "has_unit": True, "active": True}
    return action_offered(action, (), **{**base, **state})  # type: ignore[arg-type]


def test_c_is_offered_while_a_benchmark_runs_and_only_then() -> None:
    assert offered("bench_cancel", bench_running=True)
    assert not offered("bench_cancel", bench_running=False)


def test_no_benchmark_against_a_stopped_service() -> None:
    for action in ("bench", "bench_pick", "bench_capacity"):
        assert not offered(action, active=False), action
        assert offered(action, active=True), action
        assert offered(action, active=None), action  # unknown: the run itself says why
        assert offered(action, has_unit=False, active=None), action  # a bare base_url


def test_read_only_offers_no_load_on_the_server() -> None:
    for action in ("bench", "bench_pick", "bench_capacity"):
        assert not offered(action, read_only=True), action
        assert not offered(action, read_only=True, has_unit=False, active=None), action
    assert offered("bench_cancel", read_only=True, bench_running=True), "a run can still be ended"
