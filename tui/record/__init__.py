"""The flight recorder: GPU samples, serving metrics and events of one host in one SQLite file.

No Textual here: the console, `servedeck record` and tests all use these modules.
"""
