"""servedeck: a terminal operations console for LLM serving on multi-GPU servers.

__main__.py: `python -m tui` runs the servedeck CLI
alerts/: Alerts: rules over the recorded signals, with hysteresis, mute/ack, and delivery
app/: The console app: ServedeckApp, its parts (console_*.py), its messages and terminal driver
bench/: One-key benchmarks: a load generator in its own process, vLLM-compatible metrics
cli.py: The `servedeck` command line: the console by default, subcommands for each source
commands/: The `servedeck` subcommands, one module each; tui/cli.py parses and dispatches to them
compose.py: The composition root: the one place a profile becomes a Deck (a real host's, or the demo's)
core/: The ground floor: profiles, paths, errors, the audit log, redaction, the key table, formatting
deck.py: A Deck: every source of one profile, opened once and shared by the console and the CLI
exporter/: `servedeck exporter`: what only servedeck knows about a box, as Prometheus metrics
fleet/: Many boxes on one screen: the fleet's rows, whatever source they come from
gpu/: GPU sources and their snapshot types (no Textual here)
health/: Hardware health: GPU health counters and badges; the interconnect doctor, the probe and XIDs as packages
hints.py: What to tell an operator whose console has nothing to watch (no profile, no service)
hostfacts/: The host's facts: the overview (OS, CPU, NUMA, RAM, GPUs), facts for the plan, the doctor
hosts/: Hosts: where commands run. Sources take a Host and never care which kind
logs/: Service logs: journald and file followers that yield LogLine, plus level and ANSI helpers
mcp/: `servedeck mcp`: servedeck's knowledge as MCP tools for agents (the official MCP SDK)
offered.py: Which console actions can be done now, and which keys belong where the operator is
open_console.py: Opening the console from the command line (kept out of cli.py so `--version` stays fast)
ops/: Operations over a whole Deck: the floor above it, below the console, CLI and fleet
plan/: Deployment preflight: will this model fit, and which TP/EP layouts are valid
procs/: GPU processes: find them, classify them, and kill leftovers safely (docs/DESIGN.md section 7)
record/: The flight recorder: GPU samples, serving metrics and events of one host in one SQLite file
screens/: Screens and dialogs only: each pushed over the console, Fleet or replay app; every dialog subclasses dialog.py's Dialog
serving/: The service and its load: readiness, /metrics, load progress and its ETA, the load explainer, the unit
sim/: The built-in simulator: a GPU box serving a model, for the demo, CI and benchmarks
source_health.py: Source health: is a pane's data fresh, or stale since its source failed, and when is the retry
summary/: The Markdown state summary of one deployment (no Textual here)
tune/: `servedeck tune`: the deployment experiment, each configuration started, measured and undone
web/: `servedeck serve`: the console in a browser, one console process per visit
"""

import warnings

__version__ = "0.1.0"

# asyncssh still names DSA keys in its type hints; cryptography >= 47 warns at each such
# line when asyncssh is imported, which printed five warnings before every command's own
# output (and broke one-line errors). servedeck never offers DSA keys: the warning says
# nothing to its user.
warnings.filterwarnings("ignore", message="DSA is deprecated", module=r"asyncssh(\.|$)")
