"""Service logs: journald and file followers that yield LogLine, plus level and ANSI helpers.

classify.py: A log line's severity read from its text, then the journal priority (LevelClassifier)
export.py: Write log lines to a file with secrets redacted (the log pane's export)
journal.py: Follow a unit's journal through any Host, resuming after the last cursor
journal_entry.py: One journal entry read: its JSON, message, time and priority; a flood's entries as columns
line.py: One log line as every follower yields it: the line, a read's batch as columns, the bounded queue
redacted.py: The service log redacted where it enters: every pane, export and recording reads it after this
tail.py: Follow a log file with `tail -F` semantics: survive truncation and rotation
"""
