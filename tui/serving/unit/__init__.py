"""The systemd unit that runs the server: its state and actions, and what keeps it from looping.

exec_start.py: The unit's command line: its effective ExecStart= as words, read one way by every reader
lint.py: Unit lint: what in the serving unit lets leftovers and restart loops happen
lint_run.py: `servedeck doctor --unit`: read the profile's unit through its Host and lint it
restart_guard.py: The restart guard: no start or restart while the last run's leftovers are in the way
restart_loop.py: The restart-loop detector: systemd restarting a unit that fails the same way each time
service.py: The systemd unit that runs the server: its state, and start/stop/restart with consent
"""
