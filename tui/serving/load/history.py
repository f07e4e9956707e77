"""This host's history of explained loads (loads.jsonl in the data dir): one JSON line a
load, for the next prediction, the summary's last load and the restart guard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tui.core import paths
from tui.serving.load.explain import LoadExplain


def history_path() -> Path:
    return paths.data_dir() / "loads.jsonl"


def earlier_loads(host: str, model: str, path: Path | None = None) -> list[dict[str, Any]]:
    """This host's earlier loads of the model, oldest first; unreadable lines skipped."""
    path = path or history_path()
    found = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("host") == host and record.get("model") == model:
            found.append(record)
    return found


def record_load(host: str, model: str, explain: LoadExplain, path: Path | None = None) -> None:
    path = path or history_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "host": host,
        "model": model,
        "wall_s": explain.wall_s,
        "cache_resident_before_pct": explain.cache_resident_before_pct,
        "predicted_next_load_s": explain.predicted_next_load_s,
        "previous_prediction_error_s": explain.previous_prediction_error_s,
        "phases": explain.as_json()["phases"],
        "waterfall": [
            {
                "name": step.name,
                "start_s": round(step.start_s, 3),
                "wall_s": round(step.wall_s, 3),
                "logged": step.logged,
                "stated_s": step.stated_s,
            }
            for step in explain.waterfall
        ],
        "diagnosis": explain.diagnosis,
    }
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
