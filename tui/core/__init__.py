"""The profile core: profiles and their store, paths, errors, the audit log, redaction, the key table, human formatting.

alert_rules.py: Alert rules as a profile's `[[alerts]]` tables describe them, and the defaults
audit.py: The audit log: every destructive request and its outcome, one JSON object per line
config/: Profiles: TOML in (tomllib), validated frozen dataclasses out (schema, tables, loading)
errors.py: User-facing errors: each one prints as a single line, never as a traceback
formatting.py: Human text for sizes and durations: the one formatting module of the panes, commands and summary
keymap.py: One command table drives every key binding, the help screen, the footer and the palette
keynames.py: Key names a profile's [keys] table may use, checked without importing Textual
paths.py: Where servedeck keeps its files (platformdirs), overridable for tests
profile_store.py: Finding, listing and creating profiles: explicit path, ./profiles/, then the user config dir
redact/: Secret redaction for everything servedeck writes or prints: names, shapes, values, text, lines, data
tasks.py: Ending background tasks so that closing a source or a fleet can never hang
"""
