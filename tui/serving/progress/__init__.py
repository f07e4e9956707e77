"""Is the engine making progress? The verdict from /metrics, GPUs, ranks and the log.

incident.py: StallIncidents: entering and leaving `stalled` as a Timeline event, the engine-stalled alert, an audit record; a stack dump attached
judge.py: ProgressJudge (pure): idle, serving, stalled or unknown, and the stall's kind with its evidence
logwords.py: The log's own words for a hang (NCCL watchdog, execute_model timeout, a fatal EngineCore error) and its generation requests' access lines
model.py: The frozen verdict and the readings it is judged from
ranks.py: The engine's ranks under the unit's main pid, read through the process helper's `ranks` op
stack_model.py: The engine's stacks at one moment (frozen): py-spy's JSON read, the per-rank summary, the saved text
stacks.py: The engine's stacks over the Host's run(): py-spy dump --nonblocking per process, /proc wchan and kernel stack
watch.py: ProgressWatch: one refresh's readings (metrics, GPUs, ranks, log) into the judge
"""
