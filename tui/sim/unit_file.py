"""The simulated service's unit file, in the seed deployment's shape (what `systemctl cat` shows).

`servedeck doctor --unit --demo` lints this text, so the demo shows the findings the
seed's real unit would get: default KillMode and TimeoutStopSec, Restart=always with a
short RestartSec and no StartLimitBurst, limits not raised.
"""

from __future__ import annotations

from tui.sim.spec import UNIT_NAME

UNIT_PATH = f"/etc/systemd/system/{UNIT_NAME}"

UNIT_TEXT = f"""# {UNIT_PATH}
[Unit]
Description=vLLM Kimi-K2.5 INT4 (TP=8) on port 8000
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
User=root
WorkingDirectory=/opt/vllm
Environment=CUDA_HOME=/usr/local/cuda-12.8
Environment=HF_HUB_OFFLINE=1
EnvironmentFile=-/etc/vllm/kimi.env
ExecStart=/opt/vllm/venv/bin/vllm serve /models/Kimi-K2.5-INT4 \\
    --served-model-name kimi-k2.5 --tensor-parallel-size 8 \\
    --max-model-len 131072 --trust-remote-code --host 0.0.0.0 --port 8000
Restart=always
RestartSec=10

[Install]
WantedBy=multi-user.target
"""
