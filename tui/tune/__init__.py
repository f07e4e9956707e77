"""`servedeck tune`: the deployment experiment, each configuration started, measured and undone.

No Textual here: the CLI (and a console view) drive these modules over one Deck.

driver.py: The run: each configuration's drop-in, leftovers, guarded start, load, benchmark, stop, restore
dropin.py: Each configuration as a systemd drop-in (never the unit file), the restore marker, audited commands
progress.py: A running tune as a board: each configuration's state and ETA, for the console's Tune view
session.py: One tune from a crashed tune's undo to the recorded result: the CLI's and the console's path
record.py: The tune in the flight recording: each start a Deployment attempt, the result a Timeline event
figures.py: A capacity search's result as the tune's figures: single stream, at capacity, intervals
preflight.py: Every configuration through the Plan: the invalid and too big skipped, the rest by load time
results.py: The ranked table, the Pareto front, the winner's margin, and the results file --resume reads
table.py: The result table fitted to a width: abbreviated, the least telling columns dropped
space.py: tune.toml: the configurations to try, the objective, the budget and each deadline
"""
