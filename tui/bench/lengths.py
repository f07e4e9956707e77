"""Per-request prompt and output lengths: fixed, drawn from a distribution, or a class mix.

Why: a fixed 128/128 workload hides how a server copes with the spread of real traffic
(vLLM's `bench serve` and AIPerf draw lengths too). A mix is written
`NAME:SHARE:IN/OUT,...` (e.g. `chat:0.8:512/256,rag:0.2:8192/256`); shares are weights,
normalised, and each class gets its share of a level's requests by largest remainder,
so 10 requests of an 80/20 mix are 8 and 2, in a seeded order. A distribution
(`normal`, `uniform`, `lognormal`) is drawn around each request's length (its class's,
or the asked one): normal and lognormal with that mean and `stddev`, uniform over
`low:high` (a class mix shifts the range by the class's length minus the asked one).
Every length is rounded and at least 1. A bad spec raises LengthSpecError naming the flag.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

DISTRIBUTIONS = ("fixed", "normal", "uniform", "lognormal")


class LengthSpecError(ValueError):
    """A length distribution or mix that cannot be used; the message names the flag."""


@dataclass(frozen=True, slots=True)
class LengthDist:
    """How one side's length (prompt or output) spreads around its mean."""

    kind: str = "fixed"
    stddev: float = 0.0
    low: int = 0
    high: int = 0

    def describe(self, mean: int) -> str:
        if self.kind == "fixed":
            return f"{mean}"
        if self.kind == "uniform":
            return f"uniform {self.low}-{self.high}"
        return f"{self.kind} (mean {mean}, sd {self.stddev:g})"

    def draw(self, mean: int, shift: int, rng: random.Random) -> int:
        """One length around `mean` (`shift`: a class's offset for the uniform range)."""
        if self.kind == "normal":
            value = rng.gauss(mean, self.stddev)
        elif self.kind == "uniform":
            value = rng.uniform(self.low + shift, self.high + shift)
        elif self.kind == "lognormal" and self.stddev > 0:
            sigma2 = math.log1p((self.stddev / mean) ** 2)
            value = rng.lognormvariate(math.log(mean) - sigma2 / 2, math.sqrt(sigma2))
        else:
            value = mean
        return max(1, round(value))


@dataclass(frozen=True, slots=True)
class RequestClass:
    name: str
    share: float
    input_tokens: int
    output_tokens: int


def parse_dist(flag: str, kind: str, stddev: float | None, span: str | None) -> LengthDist:
    """`--input-dist KIND` with `--input-stddev` or `--input-range LOW:HIGH`, checked."""
    if kind not in DISTRIBUTIONS:
        raise LengthSpecError(f"--{flag}-dist: expected one of {', '.join(DISTRIBUTIONS)}")
    if kind in ("normal", "lognormal"):
        if stddev is None or not math.isfinite(stddev) or stddev < 0:
            raise LengthSpecError(f"--{flag}-dist {kind} needs --{flag}-stddev S (S >= 0)")
        return LengthDist(kind, stddev=stddev)
    if kind == "uniform":
        low, high = _range(flag, span)
        return LengthDist(kind, low=low, high=high)
    if stddev is not None or span is not None:
        raise LengthSpecError(f"--{flag}-stddev and --{flag}-range need --{flag}-dist")
    return LengthDist()


def _range(flag: str, span: str | None) -> tuple[int, int]:
    if not span:
        raise LengthSpecError(f"--{flag}-dist uniform needs --{flag}-range LOW:HIGH")
    try:
        low, high = (int(part) for part in span.split(":"))
    except ValueError:
        raise LengthSpecError(f"--{flag}-range expects LOW:HIGH tokens, got {span!r}") from None
    if not 1 <= low <= high:
        raise LengthSpecError(f"--{flag}-range needs 1 <= LOW <= HIGH, got {span!r}")
    return low, high


def parse_mix(text: str) -> tuple[RequestClass, ...]:
    """`chat:0.8:512/256,rag:0.2:8192/256` as classes; () for an empty text."""
    classes: list[RequestClass] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        try:
            name, share, sizes = item.split(":")
            prompt, output = sizes.split("/")
            found = RequestClass(name.strip(), float(share), int(prompt), int(output))
        except ValueError:
            raise LengthSpecError(
                f"--mix: {item!r} is not NAME:SHARE:IN/OUT (e.g. chat:0.8:512/256)"
            ) from None
        if not found.name or not math.isfinite(found.share) or found.share <= 0:
            raise LengthSpecError(f"--mix: {item!r} needs a name and a positive share")
        if found.input_tokens < 1 or found.output_tokens < 1:
            raise LengthSpecError(f"--mix: {item!r} needs at least 1 input and output token")
        if found.name in {c.name for c in classes}:
            raise LengthSpecError(f"--mix: class {found.name!r} is named twice")
        classes.append(found)
    if text.strip() and not classes:
        raise LengthSpecError("--mix: no class given")
    return tuple(classes)


def class_counts(classes: tuple[RequestClass, ...], count: int) -> list[int]:
    """Requests per class: each its share of `count`, remainders to the largest fractions."""
    total = sum(c.share for c in classes)
    exact = [count * c.share / total for c in classes]
    counts = [math.floor(x) for x in exact]
    order = sorted(range(len(classes)), key=lambda i: counts[i] - exact[i])
    for i in order[: count - sum(counts)]:
        counts[i] += 1
    return counts


@dataclass(frozen=True, slots=True)
class Lengths:
    """Everything that decides a request's lengths; travels in the BenchSpec as plain fields."""

    input_tokens: int
    output_tokens: int
    input_dist: LengthDist = LengthDist()
    output_dist: LengthDist = LengthDist()
    mix: tuple[RequestClass, ...] = ()

    @property
    def varies(self) -> bool:
        return bool(self.mix) or (self.input_dist.kind, self.output_dist.kind) != ("fixed", "fixed")

    def describe(self) -> str:
        sides = (
            f"input {self.input_dist.describe(self.input_tokens)}, "
            f"output {self.output_dist.describe(self.output_tokens)}"
        )
        if not self.mix:
            return sides
        total = sum(c.share for c in self.mix)
        classes = ", ".join(
            f"{c.name} {100 * c.share / total:.0f}% {c.input_tokens}/{c.output_tokens}"
            for c in self.mix
        )
        spread = (self.input_dist.kind, self.output_dist.kind) != ("fixed", "fixed")
        return f"mix {classes}; {sides}" if spread else f"mix {classes}"

    def draw(self, count: int, seed: int) -> list[tuple[int, int, str]]:
        """(input tokens, output tokens, class name) of `count` requests, reproducibly."""
        rng = random.Random(seed ^ 0x1E9)
        if self.mix:
            picks = [
                c
                for c, n in zip(self.mix, class_counts(self.mix, count), strict=True)
                for _ in range(n)
            ]
            rng.shuffle(picks)
        else:
            picks = [RequestClass("", 1.0, self.input_tokens, self.output_tokens)] * count
        return [
            (
                self.input_dist.draw(c.input_tokens, c.input_tokens - self.input_tokens, rng),
                self.output_dist.draw(c.output_tokens, c.output_tokens - self.output_tokens, rng),
                c.name,
            )
            for c in picks
        ]
