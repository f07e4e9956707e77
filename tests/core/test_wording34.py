"""Words the operator reads: an audit event on the Timeline never ends in an empty ': ', the
load explainer says what of its reading is unknown and why, and `serve`'s ssh -L line names
a host another machine can reach."""

from __future__ import annotations

import socket

import pytest

from tui.record.feed import RecordFeed
from tui.record.model import Event
from tui.serving.load.explain import LoadExplain, PhaseCost, WaterfallStep, diagnose
from tui.web import launch
from tui.web.server import ServeSettings


class _Events:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def add_gpu(self, snapshot: object) -> None: ...

    def add_metrics(self, row: object) -> None: ...

    def add_event(self, event: Event) -> None:
        self.events.append(event)


def test_an_audit_event_says_its_reason_or_no_colon() -> None:
    sink = _Events()
    feed = RecordFeed(sink, "box")  # type: ignore[arg-type]
    feed.observe_audit(
        {"ts": 1.0, "event": "bench.failed", "operator": "root", "host": "box",
         "preset": "quick", "error": "connection refused"}
    )  # fmt: skip
    feed.observe_audit({"ts": 2.0, "event": "console.opened", "operator": "root", "host": "box"})
    texts = [event.text for event in sink.events]
    assert texts == [
        "bench.failed by root: preset=quick, error=connection refused",
        "console.opened by root",
    ]


def _explain(read_bytes: int | None, before_pct: float | None, size: int | None) -> LoadExplain:
    return LoadExplain(
        read_bytes_per_s=None, device=None, device_read_bytes_per_s=None,
        device_peak_bytes_per_s=None, cache_resident_pct=None,
        cache_resident_before_pct=before_pct, checkpoint_bytes=size,
        phases=(PhaseCost("weights", 40.0, "cpu", read_bytes, 30.0),),
        waterfall=(WaterfallStep("weights", 0.0, 40.0, True),), wall_s=40.0,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("read_bytes", "before_pct", "size", "said"),
    [
        (4096, None, 600 * 10**9, "the server's processes read only 0 MB"),
        (None, None, None, "read rate unknown: no I/O reading of the server's processes"),
        (4096, None, None, "page cache unknown: the checkpoint directory could not be measured"),
        (4096, None, 600 * 10**9, "page cache before the load unknown: not measured before it"),
        (
            40 * 10**9,
            35.0,
            600 * 10**9,
            "weights read at 1.00 GB/s from the page cache, 35 % cached",
        ),
    ],
)
def test_the_load_diagnosis_says_what_is_unknown_and_why(
    read_bytes: int | None, before_pct: float | None, size: int | None, said: str
) -> None:
    text = diagnose(_explain(read_bytes, before_pct, size))
    assert said in text, text
    assert "0.00 GB/s" not in text and "cache unknown" not in text.replace("page cache unknown", "")


def test_serve_names_a_host_reachable_from_another_machine() -> None:
    """This machine's own resolver: here getfqdn() answers `localhost`."""
    line = next(
        line
        for line in launch.announcement(ServeSettings((), "t", "box"), "box")
        if "ssh -N" in line
    )
    assert "@localhost" not in line
    assert f"@{launch.tunnel_host()} " in line
    if socket.gethostname() not in ("localhost", ""):
        assert launch.tunnel_host() in (socket.getfqdn(), socket.gethostname())


def test_serve_says_this_host_when_every_name_is_the_loopback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A machine whose names all resolve to the loopback, which this one is not: a stand-in
    for the resolver (no other machine to run on)."""
    monkeypatch.setattr(socket, "getfqdn", lambda: "localhost.localdomain")
    monkeypatch.setattr(socket, "gethostname", lambda: "localhost")
    assert launch.tunnel_host() == "<this-host>"


def test_an_unknown_bound_is_not_called_unknown_bound() -> None:
    """Walked in the demo: "weights 8.0 s (unknown-bound)" reads as a kind of bound."""
    explain = _explain(None, None, None)
    weights = explain.phases[0]
    unknown = PhaseCost(weights.name, weights.wall_s, "unknown", None, weights.cpu_s)
    text = diagnose(LoadExplain(**{**_fields(explain), "phases": (unknown,)}))
    assert "unknown-bound" not in text, text
    assert "weights 40 s, read rate unknown: no I/O reading" in text, text


def _fields(explain: LoadExplain) -> dict[str, object]:
    return {name: getattr(explain, name) for name in explain.__dataclass_fields__}
