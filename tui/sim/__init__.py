"""The built-in simulator: a GPU box serving a model, for the demo, CI and benchmarks.

`tui.sim.server` is a real HTTP server process that behaves like vLLM (load log,
OpenAI API, Prometheus metrics, worker processes holding "GPU memory");
`tui.sim.box.SimBox` drives it like a systemd unit on an 8-GPU machine and
models the GPUs. Everything it produces is marked simulated.
"""
