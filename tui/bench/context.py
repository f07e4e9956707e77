"""What a run is recorded against: profile, host, TP/EP and a hash of the serving config."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

from tui.bench.model import RunContext
from tui.core.config import Profile


def config_hash(profile: Profile) -> str:
    """A short, stable hash of the serving config (service and model sections).

    Two runs with the same hash measured the same deployment; the hash holds
    no secret (the profile stores only the NAME of the API-key variable).
    """
    serving = {"service": asdict(profile.service), "model": asdict(profile.model)}
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
