"""Read everything the interconnect doctor needs from a host in one round trip.

A fixed script goes on stdin to `/bin/sh -s` (never an inline quoted one-liner),
prints named sections, and only reads: no GPU work, nothing written. Each tool
that is missing or slow leaves its section empty; the analysis says so.
"""

from __future__ import annotations

import time

from tui.core.config import Profile
from tui.health.interconnect.parse import LINK_FIELDS, SECTION_MARK, split_sections
from tui.hosts.base import Host

# $1: systemd unit (may be empty), $2: log file (may be empty).
COLLECT_SCRIPT = r"""m() { echo "@@M:$1"; }
t() { if command -v timeout >/dev/null 2>&1; then timeout 4 "$@"; else "$@"; fi; }
d=$(mktemp -d 2>/dev/null || echo "/tmp/servedeck-ic-$$"); mkdir -p "$d"
trap 'rm -rf "$d"' EXIT
# The slow tools run side by side (nvidia-smi takes ~0.5 s a call on 8 GPUs).
if command -v nvidia-smi >/dev/null 2>&1; then
  t nvidia-smi topo -p2p r >"$d/p2p_r" 2>&1 &
  t nvidia-smi topo -p2p w >"$d/p2p_w" 2>&1 &
  t nvidia-smi topo -m >"$d/topo" 2>&1 &
  t nvidia-smi --query-gpu=@@FIELDS --format=csv,noheader,nounits >"$d/links" 2>&1 &
  t nvidia-smi -q -d MEMORY >"$d/memory" 2>&1 &
  t nvidia-smi --query-compute-apps=pid,gpu_bus_id --format=csv,noheader >"$d/apps" 2>/dev/null &
fi
if command -v lspci >/dev/null 2>&1; then
  t lspci -D -vvv >"$d/lspci" 2>&1 &
else
  echo "lspci: not found" >"$d/lspci"
fi
pat='Custom allreduce is disabled|NCCL INFO Channel .* via |NCCL INFO .*(P2P|SHM|NET)/'
if [ -n "$1" ] && command -v journalctl >/dev/null 2>&1; then
  (t journalctl -u "$1" -o cat --no-pager -n 20000 2>/dev/null | grep -E "$pat" | tail -n 40) >"$d/log" &
elif [ -n "$2" ] && [ -r "$2" ]; then
  (tail -n 20000 "$2" | grep -E "$pat" | tail -n 40) >"$d/log" &
fi
m uid; id -u
m paths
for g in /sys/bus/pci/drivers/nvidia/????:*; do
  [ -e "$g" ] && echo "${g##*/} $(readlink -f "$g")"
done
m iommu_type
for g in /sys/bus/pci/drivers/nvidia/????:*; do
  [ -r "$g/iommu_group/type" ] && echo "${g##*/} $(cat "$g/iommu_group/type")"
done
m iommu_groups; ls /sys/kernel/iommu_groups 2>/dev/null | wc -l
m cmdline; cat /proc/cmdline
m uvm; cat /sys/module/nvidia_uvm/parameters/uvm_disable_hmm 2>/dev/null
m aspm; cat /sys/module/pcie_aspm/parameters/policy 2>/dev/null
wait
m cpus
if [ -s "$d/apps" ]; then
  for p in $(cut -d, -f1 "$d/apps" | sort -u); do
    echo "$p $(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "/proc/$p/status" 2>/dev/null)"
  done
fi
for s in p2p_r p2p_w topo links memory apps lspci log; do
  m "$s"
  if [ -r "$d/$s" ]; then cat "$d/$s"; fi
done
exit 0
""".replace("@@M:", SECTION_MARK).replace("@@FIELDS", ",".join(LINK_FIELDS))


async def collect_interconnect(
    host: Host, profile: Profile | None = None, timeout_s: float = 20.0
) -> tuple[dict[str, str], float]:
    """(sections, seconds taken) from one run of COLLECT_SCRIPT on the host."""
    unit = profile.service.unit or "" if profile is not None else ""
    log_file = profile.service.log_file or "" if profile is not None else ""
    started = time.monotonic()
    result = await host.run(
        ["/bin/sh", "-s", unit, log_file], timeout_s=timeout_s, stdin_text=COLLECT_SCRIPT
    )
    return split_sections(result.stdout), time.monotonic() - started
