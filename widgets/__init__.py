"""The panes' widgets: each draws a snapshot it is given and never fetches or writes (contract widgets-draw-only).

bench_view.py: The Benchmark pane: live progress, a table per level, a chart, and past runs compared
capacity_view.py: The capacity search on the Bench pane: the one-sentence answer and every level measured
fleet_history.py: The selected host's recent history under the Fleet table: one sparkline per series
fleet_table.py: The Fleet pane's table: one row per host, the columns that fit the pane's width
footer.py: The key footer, without the keys of its past redraws
gpu_format.py: Text for the GPU pane's cells: bars, sparklines, sizes and durations
gpu_pane.py: GpuPane: one row per GPU, grouped by NUMA node, with the selected GPU's processes
gpu_rows.py: The GPU pane's table contents: its columns at each width and each row's cells
gpu_table.py: GpuTable: a keyed table that repaints only the rows whose text changed
header_bar.py: The top line: profile, host route, connection state, and SIMULATED / READ-ONLY / browser badges
health_view.py: HealthView: the interconnect doctor's findings and each GPU's health, as text
host_overview.py: The Host overview pane: what machine this is, drawn from a HostOverview snapshot
keys.py: Bindings built from the one command table (tui.core.keymap), so `?` and the keys agree
line_repaint.py: Repaint a few lines of a widget without Textual's message round trip
line_static.py: LineStatic: a Static whose markup is drawn line by line, each line kept as Strips
load_strip.py: One or two lines above the log: load phase, shard k/N, a bar, ETA; then live metrics
load_why.py: One line under the load strip: why the load is slow right now, then its diagnosis
log_buffer.py: The log pane's buffer: each line kept as a plain tuple of its fields, read as LogLines
log_highlight.py: The log's highlighter: each level's words coloured, the search term marked
log_pane.py: The service log pane: a bounded, filterable, searchable view over Textual's `Log`
plain_lines.py: Lines of a plain box handed to the line filters as they are, without Textual's styling pass
plan_view.py: PlanView: the plan as a table, the chosen layout marked, the selected row's math below
procs_pane.py: The GPU processes pane: a DataTable of classified processes, keyed by identity
quiet_update.py: Update a Static's text without a screen-wide layout when its size cannot change
service_line.py: One line about the service: unit state, main pid, since when, restarts, readiness
summary_view.py: SummaryView: the Markdown state summary, drawn by Textual's Markdown widget
sure_timer.py: A one-shot timer that always fires, however late the event loop runs it
table_cells.py: Table cells as (text, style) pieces: what a row is drawn from, built once per value; a table's columns and rows
textual_log_copy.py: A copy of Textual's Log (the pinned version) with a flood's write and a row's drawing made cheap
timeline_view.py: The Timeline's views: the event table and the recorded state at the selected event
tune_view.py: TuneView: a running tune from its snapshot: each configuration's state, the run's words, the result
"""
