"""Profiles: TOML in (tomllib), validated frozen dataclasses out.

Every problem becomes one line naming the file, the key path and what was
expected; unknown keys are errors, so a typo never passes silently. The package's
public names are here: `from tui.core.config import Profile, load_profile_file`.

alert_tables.py: A profile's alerting tables read and checked: `[[alerts]]`, `[alerting]`, `[record]`
load.py: A profile from TOML: the file read safely, parsed, every table checked, one line a problem
schema.py: A profile's schema: one frozen dataclass per TOML table, with its defaults
sections.py: The profile's tables read and checked: host, service, model, GPU, benchmark, handoff, keys
table.py: `TomlTable`: reads one TOML table, remembering which keys were used and every problem met
"""

from tui.core.config.load import (
    PROFILE_MAX_BYTES,
    PROFILE_READ_TIMEOUT_S,
    demo_profile,
    load_profile_file,
    parse_toml,
    profile_from_data,
    profile_problems,
    read_profile_bytes,
)
from tui.core.config.schema import (
    ARRIVALS,
    DEFAULT_PERCENTILES,
    ENDPOINTS,
    ENGINES,
    HOST_KINDS,
    BenchmarkConfig,
    BenchmarkPreset,
    BenchmarkSlo,
    DeploymentConfig,
    GpuConfig,
    HandoffNotes,
    HostConfig,
    JumpHost,
    ModelConfig,
    Profile,
    ServiceConfig,
    default_presets,
    percentiles_problem,
)
from tui.core.config.sections import keys_from
from tui.core.config.table import TomlTable

__all__ = [
    "ARRIVALS",
    "DEFAULT_PERCENTILES",
    "ENDPOINTS",
    "ENGINES",
    "HOST_KINDS",
    "PROFILE_MAX_BYTES",
    "PROFILE_READ_TIMEOUT_S",
    "BenchmarkConfig",
    "BenchmarkPreset",
    "BenchmarkSlo",
    "DeploymentConfig",
    "GpuConfig",
    "HandoffNotes",
    "HostConfig",
    "JumpHost",
    "ModelConfig",
    "Profile",
    "ServiceConfig",
    "TomlTable",
    "default_presets",
    "demo_profile",
    "keys_from",
    "load_profile_file",
    "parse_toml",
    "percentiles_problem",
    "profile_from_data",
    "profile_problems",
    "read_profile_bytes",
]
