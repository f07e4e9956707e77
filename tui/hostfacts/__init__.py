"""The host's facts: the overview (OS, CPU, NUMA, RAM, GPUs), facts for the plan, the doctor.

doctor.py: `servedeck doctor`: one verdict line per thing the console depends on
facts.py: Host facts for the state summary: hardware once per connect, software inside the serving venv
hostinfo.py: The Host overview: who this machine is, collected by one fixed script sent on stdin
"""
