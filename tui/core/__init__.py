"""The profile core: profiles and their store, paths, errors, the audit log, redaction, the key table, human formatting."""
