"""GPU processes: find them, classify them, and kill leftovers safely (DESIGN.md section 7).

No Textual here: the CLI, the app's workers and tests all call these directly.
"""

from tui.procs.kill import (
    DEFAULT_TIMEOUT_S,
    ReadOnlyError,
    check_targets,
    kill_processes,
    leftovers,
)
from tui.procs.listing import (
    ENGINE_PATTERNS,
    ClassifyContext,
    context_for,
    list_gpu_processes,
    unit_is_active,
)
from tui.procs.model import (
    CLASSES,
    GpuMemoryShare,
    GpuProcess,
    KillOutcome,
    KillReport,
    ProcIdentity,
    ProcListing,
)
from tui.procs.remote import helper_source, run_helper

__all__ = [
    "CLASSES",
    "DEFAULT_TIMEOUT_S",
    "ENGINE_PATTERNS",
    "ClassifyContext",
    "GpuMemoryShare",
    "GpuProcess",
    "KillOutcome",
    "KillReport",
    "ProcIdentity",
    "ProcListing",
    "ReadOnlyError",
    "check_targets",
    "context_for",
    "helper_source",
    "kill_processes",
    "leftovers",
    "list_gpu_processes",
    "run_helper",
    "unit_is_active",
]
