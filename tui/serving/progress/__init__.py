"""Is the engine making progress? The verdict (`judge.py`) from /metrics, GPUs, ranks and the log."""
