#!/usr/bin/env bash
# One verification pass on a machine with NVIDIA GPUs; everything lands in an archive.
#   bash tests/perf/h200_run.sh OUT_DIR     (wheels for missing packages in .whl/, optional)
#   PREVIOUS=DIR also runs an older servedeck checkout in the CPU comparison (before/after).
set -u
out="${1:-h200-out}"
mkdir -p "$out"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONUNBUFFERED=1
{
  echo "== nvidia-smi"; nvidia-smi
  echo "== GPU sources agree (NVML vs nvidia-smi), fixtures, gpus --json, pane SVG, tick costs"
  python3 tests/perf/h200_verify.py "$out"
  echo "== leftover killer on a real CUDA process"
  python3 tests/perf/h200_procs.py "$out"
  echo "== whole-app CPU, servedeck console vs nvitop, 3 x 60 s at 1 s"
  python3 tests/perf/app_vs_nvitop.py --seconds 60 --interval 1 --rounds 3 \
    ${PREVIOUS:+--previous "$PREVIOUS"}
} 2>&1 | tee "$out/h200_log.txt"
