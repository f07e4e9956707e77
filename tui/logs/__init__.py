"""Service logs: journald and file followers that yield LogLine, plus level and ANSI helpers."""
