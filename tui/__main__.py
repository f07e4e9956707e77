"""`python -m tui` runs the servedeck CLI."""

from tui.cli import main

raise SystemExit(main())
