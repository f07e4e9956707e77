#!/usr/bin/env bash
# One verification pass on a machine with NVIDIA GPUs; everything lands in OUT_DIR. Re-run it
# before resolving any change to GPU code or to the console's periodic work.
#   bash tests/perf/h200_run.sh OUT_DIR     (wheels for missing packages in .whl/, optional)
#   PREVIOUS=DIR also runs an older servedeck checkout in the CPU comparison (before/after).
#   QUICK=1 runs only the whole-tree comparison and the cold start.
set -u
out="${1:-h200-out}"
mkdir -p "$out"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site PATH="/tmp/site/bin:$PATH"
fi
export PYTHONUNBUFFERED=1
{
  echo "== nvidia-smi"; nvidia-smi
  echo "== commit"; git log --oneline -1 2>/dev/null || true
  if [ -z "${QUICK:-}" ]; then
    echo "== GPU sources agree (NVML vs nvidia-smi), fixtures, gpus --json, pane SVG, tick costs"
    python3 tests/perf/h200_verify.py "$out"
    echo "== leftover killer on a real CUDA process"
    python3 tests/perf/h200_procs.py "$out"
    echo "== the stall verdict's GPU-side signals: a simulated engine hung, a torch spinner"
    python3 tests/perf/gpu_stall_proof.py | tee "$out/gpu_stall_proof.txt"
  fi
  echo "== whole-tree CPU, servedeck console vs nvitop, idle then busy GPUs, 3 x 30 s at 1 s,"
  echo "   with each round's breakdown by process and thread (py-spy names the threads)"
  python3 tests/perf/app_vs_nvitop.py --load --seconds 30 --interval 1 --rounds 3 \
    --json "$out/app_vs_nvitop_busy.json" ${PREVIOUS:+--previous "$PREVIOUS"}
  echo "== cold start, 10 runs"
  python3 tests/perf/startup.py --runs 10
} 2>&1 | tee "$out/h200_log.txt"
