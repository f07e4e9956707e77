"""The seed deployment the simulator models, and the server's settings.

One place for the numbers: 8x RTX PRO 6000 Blackwell Server Edition on two
NUMA nodes over PCIe Gen5 (no NVLink), serving Kimi-K2.5 INT4 with TP=8.
"""

from __future__ import annotations

from dataclasses import dataclass, field

GIB = 1024**3
MIB = 1024**2

GPU_NAME = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
GPU_COUNT = 8
# What the driver reports for this 96 GB board (nvidia-smi: 97887MiB).
GPU_MEMORY_TOTAL_BYTES = 97_887 * MIB
GPU_COMPUTE_CAPABILITY = "12.0"
GPU_POWER_LIMIT_W = 600.0
GPU_NUMA_NODES = (0, 0, 0, 0, 1, 1, 1, 1)
# The CPUs of each NUMA node (the EPYC pair's 128 cores), as `nvidia-smi topo -m` states a
# GPU's CPU affinity: a real box answers `0-63` for a GPU on node 0.
NUMA_CPU_AFFINITY = {0: "0-63", 1: "64-127"}
# PCIe bus numbers spread over the root complexes of a two-socket EPYC board.
GPU_BUS_IDS = tuple(f"00000000:{bus:02X}:00.0" for bus in (1, 33, 65, 97, 129, 161, 193, 225))
DRIVER_VERSION = "580.95.05"
CUDA_VERSION = "13.0"
VLLM_VERSION = "0.33.0"

UNIT_NAME = "vllm-kimi-k25-int4.service"
MODEL_NAME = "moonshotai/Kimi-K2.5"
SERVED_MODEL_NAME = "kimi-k2.5-int4"
MODEL_WEIGHTS_BYTES = 547 * 1000**3
MODEL_SHARDS = 64
TENSOR_PARALLEL = 8
MAX_MODEL_LEN = 262_144
# MLA cache per token: 61 layers x (512 latent + 64 rope) x 2 bytes, replicated per rank.
KV_BYTES_PER_TOKEN = 61 * (512 + 64) * 2
CUDA_CONTEXT_BYTES = 600 * MIB
CUDA_GRAPHS_BYTES = int(0.62 * GIB)
GPU_MEMORY_UTILIZATION = 0.90

# Share of the load each phase takes, from a ~30 minute real load.
LOAD_PHASE_SHARES: dict[str, float] = {
    "starting": 0.04,
    "weights": 0.78,
    "compile": 0.08,
    "kv_cache": 0.03,
    "cuda_graphs": 0.05,
    "api": 0.02,
}


def topology_matrix(numa_nodes: tuple[int, ...] = GPU_NUMA_NODES) -> tuple[tuple[str, ...], ...]:
    """`nvidia-smi topo -m` for PCIe-only GPUs: NODE within a NUMA node, SYS across."""
    return tuple(
        tuple(
            "X" if i == j else ("NODE" if numa_nodes[i] == numa_nodes[j] else "SYS")
            for j in range(len(numa_nodes))
        )
        for i in range(len(numa_nodes))
    )


def default_weights_bytes_per_gpu(tp: int = TENSOR_PARALLEL) -> int:
    return MODEL_WEIGHTS_BYTES // tp


def default_kv_bytes_per_gpu(tp: int = TENSOR_PARALLEL) -> int:
    """What vLLM would find for the KV cache under gpu_memory_utilization=0.9."""
    budget = int(GPU_MEMORY_TOTAL_BYTES * GPU_MEMORY_UTILIZATION)
    activations = 2 * GIB
    return max(budget - default_weights_bytes_per_gpu(tp) - CUDA_CONTEXT_BYTES - activations, GIB)


@dataclass(frozen=True, slots=True)
class ServerFaults:
    """Faults fixed at start (runtime ones are set over POST /_sim/fault)."""

    fail_at_shard: int | None = None
    orphans_on_stop: int = 0
    stubborn_orphans: bool = False
    defunct_worker: bool = False
    # One rank whose weights arrive at a third of the others' pace (a slow disk path,
    # a busy NUMA node): its GPU memory lags theirs through the weights phase.
    lagging_rank: int | None = None


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """Everything `python -m tui.sim.server` takes on its command line."""

    state_dir: str
    port: int
    model: str = MODEL_NAME
    served_model_name: str = SERVED_MODEL_NAME
    load_seconds: float = 45.0
    # When the load began (epoch s), if before this process: the load resumes there, its
    # past lines stamped as they were (a fleet row opened mid-load, tui.fleet.demo).
    load_started_s: float | None = None
    shards: int = MODEL_SHARDS
    tp: int = TENSOR_PARALLEL
    seed: int = 0
    weights_bytes_per_gpu: int = field(default_factory=default_weights_bytes_per_gpu)
    kv_bytes_per_gpu: int = field(default_factory=default_kv_bytes_per_gpu)
    kv_bytes_per_token: int = KV_BYTES_PER_TOKEN
    max_model_len: int = MAX_MODEL_LEN
    # ~82 tok/s single stream, as measured on the seed box.
    prefill_tok_s: float = 3000.0
    decode_step_s: float = 0.0122
    decode_alpha: float = 0.066
    max_batch: int = 256
    # vLLM's per-step token budget (its default for the OpenAI server on large GPUs).
    max_num_batched_tokens: int = 8192
    log_interval_s: float = 10.0
    # Simulated seconds per real second: a step of d simulated seconds lasts d / time_scale.
    time_scale: float = 1.0
    # vLLM's --enable-prefix-caching (tui.sim.prefix_cache); off keeps every prefill whole.
    prefix_caching: bool = False
    # vLLM's --data-parallel-size: this many engines, each labelled `engine="<rank>"` in
    # /metrics; `starved_engine` is a rank the front end never routes to (a DP imbalance).
    data_parallel_size: int = 1
    starved_engine: int | None = None
    # vLLM's speculative decoding (--speculative-config num_speculative_tokens): 0 is off;
    # each draft position is accepted with `spec_acceptance` (tui.sim.spec_decode).
    num_speculative_tokens: int = 0
    # vLLM's --enable-sleep-mode with VLLM_SERVER_DEV_MODE=1: /sleep, /wake_up, /is_sleeping.
    sleep_mode: bool = False
    spec_acceptance: float = 0.7
    # vLLM's --enable-lora --lora-modules name=path ... --max-loras (tui.sim.lora).
    lora_modules: tuple[tuple[str, str], ...] = ()
    max_loras: int = 1
    # vLLM's --kv-transfer-config kv_role and a P/D fault to show (tui.sim.pd).
    kv_role: str | None = None
    kv_transfer_fault: str | None = None
    faults: ServerFaults = field(default_factory=ServerFaults)
    shard_dir: str | None = None
    disk_bytes_per_s: float | None = None

    @property
    def kv_cache_tokens(self) -> int:
        return max(self.kv_bytes_per_gpu // max(self.kv_bytes_per_token, 1), 1)

    def step_s(self, decoding: int) -> float:
        """Duration of one decode step with `decoding` requests in the batch."""
        return self.decode_step_s * (1.0 + self.decode_alpha * max(decoding - 1, 0))

    def batch_step_s(self, decoding: int, prefill_tokens: int) -> float:
        """Simulated duration of one engine step: the ground truth of its timing.

        The decode part when any request decodes, plus the step's prompt chunks at
        `prefill_tok_s`. The server's engine, the capacity replay and the tests that
        check either all read this one formula.
        """
        decode_s = self.step_s(decoding) if decoding else 0.0
        return decode_s + prefill_tokens / self.prefill_tok_s
