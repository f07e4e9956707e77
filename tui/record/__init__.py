"""The flight recorder: GPU samples, serving metrics and events of one host in one SQLite file.

No Textual here: the console, `servedeck record` and tests all use these modules.

attempts.py: From the timeline: the summary's incidents and its "Deployment attempts" table
execinfo.py: What a service start ran: the main process's argv and its serving-relevant environment
feed.py: Turns the sources' snapshots into recorder rows and timeline events
file_events.py: The events for what the console's files tell: an audited action, a benchmark, a capacity search
headless.py: `servedeck record`: the Deck's sources polled without a console, fed to a Recorder
lock.py: One recorder per recording: an exclusive flock on `<db>.lock` that names its holder
model.py: What the recorder stores: timeline events, and GPU ticks packed into one small blob
query.py: Reading a recording: the merged timeline, and the recorded state at any instant
retention.py: Keeping a recording inside its budget: drop days past retention, thin old GPU ticks
schema.py: The recording's SQLite schema: numbered migrations, applied in order on open
session.py: The console's recording: a Recorder, its feed and the alert monitor, opened together
timeparse.py: Instants on the command line: `2026-11-30 03:12`, ISO 8601, `03:12` (today), `2h` (ago), epoch
where.py: Which recording a profile writes to: one SQLite file per host in the data dir
writer.py: The recorder: callers enqueue, one thread writes, at most one commit per second
"""
