"""The host's facts: the overview (OS, CPU, NUMA, RAM, GPUs), facts for the plan, the doctor."""
