"""The systemd unit that runs the server: its state and actions, and what keeps it from looping.

service.py: the unit's state from `systemctl show`, and start/stop/restart with consent, audited
restart_guard.py: the guard's pure verdict, no start or restart while leftovers are in the way (`assess`)
restart_loop.py: the restart-loop detector, NRestarts rising while the log shows one cause
lint.py: the unit lint, what in the unit file lets leftovers and restart loops happen
lint_run.py: `servedeck doctor --unit`, the unit read through a Host and linted
"""
