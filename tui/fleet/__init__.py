"""Many boxes on one screen: the fleet's rows, whatever source they come from.

actions.py: Fleet actions on one host: restart or stop its unit, clean up its leftover GPU processes
bench_action.py: The quick benchmark on one fleet host: planned, confirmed, audited, refused in read-only
collector.py: Polling many hosts at once: one Deck (one SSH connection) per host, none waiting on another
deck_probe.py: One host's row through its Deck: unit, log tail, readiness, /metrics, GPUs, leftovers
deployments.py: Multi-node deployments: one group row over its hosts, degraded when a member is down
demo.py: `servedeck fleet --demo N`: N light simulated boxes on this machine, no process per box
feed.py: The Fleet pane's rows from every source it was given: an SSH group, a Prometheus server, or both
groups.py: Host groups: a `[fleet]` file naming the profiles of several boxes, each with a label
history.py: A host's recent history as the Fleet pane's sparklines draw it (frozen, no I/O)
light_box.py: One light simulated box of `fleet --demo N`: a real log file, unit, GPU sample, no process
model.py: One row per host of a fleet: the shape every fleet source fills and `fleet --json` prints
prom_access.py: How the fleet reaches a Prometheus behind a gateway: extra headers, mTLS, OAuth2
prom_answer.py: The shape of a Prometheus API answer, checked before any of it is believed
prom_body.py: A Prometheus answer's body, read with a cap on its decoded size
prom_history.py: A host's recent history from Prometheus (`/api/v1/query_range`), for the Fleet pane's sparklines
prom_query.py: What the fleet asks a Prometheus server: its settings, the column table, the one query
prometheus.py: The fleet from a Prometheus server: FleetRows from dcgm-exporter, vLLM and servedeck series
rows.py: Turning one host's source snapshots into its FleetRow (pure: no I/O, easy to test)
ssh_import.py: `servedeck profiles import-ssh [PATTERN]`: profiles and a group from ~/.ssh/config's Host entries
status_loop.py: A fleet host's unit state and log through one long-lived remote shell, not a session per poll
summary.py: One Markdown summary of a whole fleet: a table of hosts, then a short section per host
view.py: What the Fleet pane shows about rows, decided once: state word, filter, sort, summary line
"""
