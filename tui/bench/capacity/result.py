"""The capacity search's answer in one sentence and its `bench --capacity --json` body.

The sentence names what the level above the answer showed: the objective that limited
it, or that its requests were too few to decide (the answer is then the highest level
shown to pass, and the true limit may lie above it).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from tui.bench.capacity.answer import FAILURE_LABELS, none_proved
from tui.bench.capacity.search import CapacityLevel, CapacitySlo, limit_label
from tui.bench.uncertainty import UNDECIDED


def answer_sentence(
    slo: CapacitySlo,
    best: CapacityLevel | None,
    above: CapacityLevel | None,
    bound: CapacityLevel | None = None,
) -> str:
    """The result in one sentence, as an operator would say it; a client-bound level is
    named as the client's limit, never the server's."""
    text = _answer(slo, best, above)
    if bound is None or (above is not None and above.concurrency < bound.concurrency):
        return text
    return (
        f"{text.split('; ')[0]}; the client could not drive {bound.load} ({bound.client_bound}):"
        " the server's limit is not known above it"
    )


def _answer(slo: CapacitySlo, best: CapacityLevel | None, above: CapacityLevel | None) -> str:
    if best is None:
        if above is None:
            return "no level finished: capacity unknown"
        if above.verdict == UNDECIDED:
            return f"no level was shown to meet the SLO ({slo.describe()}); {limit_words(above)}"
        lowest = "the lowest rate" if above.request_rate is not None else "1 user"
        return f"not even {lowest} meets the SLO ({slo.describe()}); {limit_words(above)}"
    text = (
        f"{best.load} ({slo.describe()}): {best.output_throughput:,.0f} tok/s total, "
        f"{best.per_user_tok_s:,.0f} tok/s per user"
    )
    if above is None:
        return text + "; no limit reached in the levels tried"
    return text + f"; {limit_words(above)}"


def limit_words(level: CapacityLevel) -> str:
    """What the level above the answer showed: a limit, or too few requests to say."""
    if level.verdict != UNDECIDED:
        return f"limited by {limit_label(level)} at {level.at}"
    what = ", ".join(FAILURE_LABELS.get(kind, kind) for kind in level.undecided)
    needed = level.needed_requests()
    need = f", need >= {needed}" if needed else ""
    return f"{UNDECIDED} at {level.at} ({what}: {level.measured} requests{need})"


def level_dict(level: CapacityLevel) -> dict[str, Any]:
    """One finished level as `--json` and the live `level` event give it: with its verdict,
    so a view never has to guess whether a level met the SLO."""
    body = asdict(level)
    body["server"] = asdict(level.server) if level.server else {}
    body["gpu"] = asdict(level.gpu) if level.gpu else {}
    body["meets_slo"] = level.meets_slo
    body["verdict"] = level.verdict
    body["undecided"] = list(level.undecided)
    body["limited_by"] = limit_label(level)
    body["failures"] = list(level.failures)
    if level.request_rate is not None:
        body["search_step"] = level.concurrency
        body["concurrency"] = level.peak_in_flight
    return body


def capacity_json(
    slo: CapacitySlo,
    levels: list[CapacityLevel],
    best: CapacityLevel | None,
    above: CapacityLevel | None,
    *,
    truth: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The CLI contract of `servedeck bench --capacity --json`."""
    bound = next((level for level in levels if level.client_bound), None)
    body: dict[str, Any] = {
        "answer": answer_sentence(slo, best, above, bound),
        # None where nothing was proved: no capacity is not a capacity of 0
        "capacity": {
            "concurrency": (
                best.peak_in_flight if best.request_rate is not None else best.concurrency
            )
            if best
            else None,
            **({"request_rate": best.request_rate} if best and best.request_rate else {}),
            "output_tok_s": best.output_throughput if best else None,
            "per_user_tok_s": best.per_user_tok_s if best else None,
            "limited_by": limit_label(above) if above else "",
        },
        # the first level whose client could not keep up: no server limit is known above it
        "client_bound_at": bound.at if bound else None,
        # the level above the answer when its intervals could not decide it
        "undecided_at": above.at if above is not None and above.verdict == UNDECIDED else None,
        "slo": asdict(slo),
        "levels": [level_dict(level) for level in levels],
    }
    # why levels were measured and none met the SLO (None: one did, or none ran)
    body["none_proved"] = none_proved(body)
    if body["none_proved"] is not None and above is None:  # no miss of the SLO: say what
        body["answer"] = (
            f"capacity none proved: {body['none_proved']}; the server's limit is not known"
        )
    if truth is not None:
        body["truth"] = truth
    body.update(extra or {})
    return body
