"""The simulator's histograms as vLLM's metrics declare them: the bucket bounds copied from
vLLM (so the simulated and real histograms compare) and a cumulative count that takes n
equal observations at once.
"""

from __future__ import annotations


class Histogram:
    """Cumulative-bucket histogram that can take n equal observations at once."""

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0
        self.count = 0

    def observe(self, value: float, times: int = 1) -> None:
        index = len(self.bounds)
        for position, bound in enumerate(self.bounds):
            if value <= bound:
                index = position
                break
        self.counts[index] += times
        self.total += value * times
        self.count += times

    def cumulative(self) -> list[tuple[str, int]]:
        running = 0
        out: list[tuple[str, int]] = []
        for bound, count in zip((*self.bounds, float("inf")), self.counts, strict=True):
            running += count
            out.append(("+Inf" if bound == float("inf") else repr(float(bound)), running))
        return out


# Bucket bounds copied from vLLM's metrics, so histograms compare.
LATENCY_BUCKETS = (
    0.3,
    0.5,
    0.8,
    1.0,
    1.5,
    2.0,
    2.5,
    5.0,
    10.0,
    15.0,
    20.0,
    30.0,
    40.0,
    50.0,
    60.0,
    120.0,
    240.0,
    480.0,
    960.0,
    1920.0,
    7680.0,
)
TTFT_BUCKETS = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
    160.0,
    640.0,
    2560.0,
)
ITL_BUCKETS = (
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
)
TOKEN_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
HISTOGRAM_BUCKETS: dict[str, tuple[float, ...]] = {
    "time_to_first_token_seconds": TTFT_BUCKETS,
    "inter_token_latency_seconds": ITL_BUCKETS,
    "request_time_per_output_token_seconds": ITL_BUCKETS,
    "e2e_request_latency_seconds": LATENCY_BUCKETS,
    "request_queue_time_seconds": LATENCY_BUCKETS,
    "request_inference_time_seconds": LATENCY_BUCKETS,
    "request_prefill_time_seconds": LATENCY_BUCKETS,
    "request_decode_time_seconds": LATENCY_BUCKETS,
    "request_prompt_tokens": TOKEN_BUCKETS,
    "request_generation_tokens": TOKEN_BUCKETS,
    "request_params_max_tokens": TOKEN_BUCKETS,
    "iteration_tokens_total": TOKEN_BUCKETS,
}
