"""The `servedeck` subcommands, one module each; tui/cli.py parses and dispatches to them.

_target.py: Turn `--profile` / `--demo` / `--read-only` into a Profile or an opened Deck, for every subcommand
_width.py: Plain CLI output that fits an 80-column terminal (the narrowest an operator's SSH gives)
bench_cmd.py: `servedeck bench`: run a benchmark preset against a profile's server, a URL or the demo
bench_output.py: `servedeck bench`'s text output: a run's levels as a table, its headline and warnings
bench_spec.py: A benchmark's spec from `servedeck bench`'s arguments, checked (the capacity search's too)
capacity_cmd.py: `servedeck bench --capacity`: how many users the server holds under an SLO, in one sentence
compare_cmd.py: `servedeck bench compare A B`: the configuration diff and each metric's change with its noise
demo_cmd.py: `servedeck demo`: the console on the built-in simulator, with the model load already started
doctor_cmd.py: `servedeck doctor`: is everything the console needs there? One verdict per line
exporter_cmd.py: `servedeck exporter`: serve the `servedeck_*` metrics of a profile's box on a port
fleet_cmd.py: `servedeck fleet -g GROUP` / `--demo N`: every host of a group on one screen, or as JSON
fleet_prom_cmd.py: `servedeck fleet --prometheus URL`: the fleet as a Prometheus server sees it
gpus_cmd.py: `servedeck gpus`: the GPUs of a host as a table or JSON, once or every few seconds
health_cmd.py: `servedeck health`: per-GPU badge, XID events and health counters; `--follow` for new XIDs
hosts_cmd.py: `servedeck hosts trust`: accept a host's SSH key after the operator checked it
interconnect_cmd.py: `servedeck doctor --interconnect`: P2P, ACS, IOMMU, BAR1, links, NUMA; read-only
kill_cmd.py: `servedeck kill`: end leftover GPU processes (or named pids) with every safety check
logs.py: `servedeck logs`: the service log (journal of the unit, or the log file), optionally followed
mcp_cmd.py: `servedeck mcp`: servedeck's knowledge as MCP tools for agents, over stdio or HTTP
plan_cmd.py: `servedeck plan`: will this model fit, and which TP/EP layouts are valid, before a long load
probe_cmd.py: `servedeck probe`: P2P matrix and all-reduce sweep on idle GPUs, after a confirmation
procs_cmd.py: `servedeck procs`: every process holding GPU memory on the host, classified
profiles_cmd.py: `servedeck profiles list|check|init`
progress_now.py: `servedeck status`'s progress verdict: scrapes until stall_after_s confirms or clears a stall
record_cmd.py: `servedeck record`: record a profile's host headless (tmux, cron @reboot, a systemd --user unit)
replay_cmd.py: `servedeck replay`: the Deck as recorded at an instant, stepped through time (no host contacted)
serve_cmd.py: `servedeck serve`: the console in a browser, one console process per visit
service_cmd.py: `servedeck service start|restart|stop`: the unit, with consent and the restart guard
sim_cmd.py: `servedeck sim`: run the simulated GPU box in the foreground
stacks_cmd.py: `servedeck stacks`: the engine's stacks per rank (py-spy, read-only), saved to the data dir
status.py: `servedeck status`: unit state, load phase, readiness and metrics in one look
summary_cmd.py: `servedeck summary`: the Markdown state summary of a profile's deployment, written to a file
timeline_cmd.py: `servedeck timeline`: the recorded events of a host, oldest first, as text or JSON lines
tune_cmd.py: `servedeck tune`: a space of serving configurations tried on the unit, measured, ranked and restored
unit_lint_out.py: `servedeck doctor --unit`: print the unit lint's findings (text or JSON)
"""
