"""NVML's v1 and v2 memory info of GPU 0 against nvidia-smi's, on a machine with a GPU.

    python tests/perf/nvml_memory.py

v1 counts the driver's reserve as used; v2 states it apart, as nvidia-smi does (the GPU
source reads v2: tui/gpu/nvml.py). Output of one run: tests/perf/results/nvml_memory_*.txt.
"""

import subprocess

import pynvml

pynvml.nvmlInit()
handle = pynvml.nvmlDeviceGetHandleByIndex(0)
v1 = pynvml.nvmlDeviceGetMemoryInfo(handle)
print("v1 total used free", v1.total, v1.used, v1.free)
try:
    v2 = pynvml.nvmlDeviceGetMemoryInfo(handle, version=pynvml.nvmlMemory_v2)
    print("v2 total reserved used free", v2.total, v2.reserved, v2.used, v2.free)
except Exception as error:
    print("v2 failed", repr(error))
fields = "memory.total,memory.reserved,memory.used,memory.free"
print(
    subprocess.run(
        ["nvidia-smi", f"--query-gpu={fields}", "--format=csv"], capture_output=True, text=True
    ).stdout
)
