"""Host facts for the simulator: the seed deployment's software stack and model folder.

The demo's summary must read like the real box's, so the versions inside the
"serving venv" and the disk where the model lives are stated here, next to
the rest of the seed's numbers (tui.sim.spec), instead of being read from
this machine (which has no vLLM).
"""

from __future__ import annotations

from importlib import resources

from tui.hostfacts.facts import DiskFacts, SoftwareVersions
from tui.plan.build import ModelFacts, model_from_config
from tui.plan.inventory import GIB
from tui.sim import spec

SIM_INTERPRETER = "/opt/vllm/.venv/bin/python"
SIM_PACKAGES = {
    "vllm": spec.VLLM_VERSION,
    "torch": "2.10.0",
    "triton": "3.6.0",
    "transformers": "4.57.6",
    "flashinfer-python": "0.6.4",
}
SIM_MODEL_PATH = "/models/Kimi-K2.5-INT4"
SIM_DISK_TOTAL_BYTES = 3_840 * 1000**3
SIM_DISK_FREE_BYTES = 2_912 * 1000**3
CONFIG_RESOURCE = "kimi-k2.5-config.json"


def simulated_model_facts() -> ModelFacts:
    """The simulated model: its packaged config.json and the simulated checkpoint's size."""
    gib_size = spec.MODEL_WEIGHTS_BYTES / GIB
    return model_from_config(simulated_config_text(), "Kimi-K2.5.json", gib_size)


def simulated_config_text() -> str:
    """The Kimi-K2.5 config.json the simulated box serves (packaged with servedeck)."""
    return resources.files("tui.sim").joinpath("data", CONFIG_RESOURCE).read_text()


def simulated_software() -> SoftwareVersions:
    """The serving venv's versions as collect_versions would find them on the seed box."""
    return SoftwareVersions(SIM_INTERPRETER, "3.12.3", dict(SIM_PACKAGES))


def simulated_disk(model_path: str | None) -> DiskFacts:
    """The model folder's disk as collect_disk would find it on the seed box."""
    return DiskFacts(
        path=model_path or SIM_MODEL_PATH,
        disk_total_bytes=SIM_DISK_TOTAL_BYTES,
        disk_free_bytes=SIM_DISK_FREE_BYTES,
        mount_point="/models",
        model_bytes=spec.MODEL_WEIGHTS_BYTES,
        shard_count=spec.MODEL_SHARDS,
    )
