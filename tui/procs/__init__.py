"""GPU processes: find them, classify them, and kill leftovers safely (docs/DESIGN.md section 7).

No Textual here: the CLI, the app's workers and tests all call these directly.

helper.py: The process helper: list, classify and kill GPU processes on the machine it runs on
kill.py: Killing GPU processes safely: checks, the helper's pidfd kill, freed memory, audit
listing.py: Listing GPU processes: NVML pid hints in, verified and classified GpuProcess out
model.py: What the process helper reports, as frozen dataclasses the rest of servedeck reads
order.py: How the Processes pane orders and filters its rows (no Textual: tested on its own)
remote.py: Running the process helper on a host: in-process here, one long-lived helper per SSH host
text.py: Plain-text and JSON renderings of listings and kill reports (CLI output, no Textual)
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
