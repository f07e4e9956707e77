"""What a run is recorded against: profile, host, TP/EP and a hash of the serving config."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

from tui.bench.model import RunContext
from tui.core.config import Profile

# What changes how the server behaves; the URL, port, unit and log names do not (the
# demo's simulator listens on a new port every session, the same deployment all along).
_MODEL_FIELDS = ("name", "path", "tp", "ep", "dp", "pp", "max_model_len")


def config_hash(profile: Profile) -> str:
    """A short, stable hash of the deployment: engine, serving venv and the model's layout.

    Two runs with the same hash measured the same deployment (the GPUs and the engine
    version are compared beside it, in the run's context). Runs recorded before the
    hash left the URL out keep their old hash and read as their own configuration.
    """
    model = asdict(profile.model)
    serving = {
        "engine": profile.service.engine,
        "python": profile.service.python,
        "model": {name: model[name] for name in _MODEL_FIELDS},
    }
    blob = json.dumps(serving, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


def context_for_profile(profile: Profile, gpus: str = "") -> RunContext:
    """The RunContext of a profile; `gpus` is the GPU set when the caller knows it."""
    return RunContext(
        profile=profile.name,
        host=profile.host.route if profile.host.kind == "ssh" else profile.host.kind,
        base_url=profile.service.base_url,
        model=profile.model.name,
        engine=profile.service.engine,
        gpus=gpus,
        tp=profile.model.tp,
        ep=profile.model.ep,
        config_hash=config_hash(profile),
    )
