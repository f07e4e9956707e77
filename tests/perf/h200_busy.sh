#!/usr/bin/env bash
# The busy-GPU measurements on a machine with NVIDIA GPUs; everything lands in OUT_DIR.
#   bash tests/perf/h200_busy.sh OUT_DIR      (wheels for missing packages in .whl/, optional)
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
  echo "== machine"; nvidia-smi -L; python3 --version; nproc
  echo "== 8 simulated GPUs, every field changing each tick: event-loop time per tick"
  python3 tests/perf/gpu_pane_ticks.py --seconds 30 --interval 1 --json "$out/gpu_pane_ticks.json"
  python3 tests/perf/gpu_pane_ticks.py --seconds 20 --interval 1 --profile
  echo "== this machine's GPUs under tests/perf/gpu_load.py: the console's tick, and its profile"
  python3 tests/perf/gpu_load.py --seconds 150 > /tmp/gpu_load.out &
  load_pid=$!
  until grep -q ready /tmp/gpu_load.out 2>/dev/null || ! kill -0 $load_pid 2>/dev/null; do sleep 1; done
  python3 tests/perf/gpu_pane_ticks.py --local --seconds 30 --interval 1 \
    --json "$out/gpu_pane_ticks_local_busy.json"
  python3 tests/perf/gpu_pane_ticks.py --local --seconds 20 --interval 1 --profile
  kill $load_pid; wait $load_pid
  echo "== whole-app CPU, servedeck console vs nvitop, idle then busy GPUs, 3 x 30 s at 1 s"
  python3 tests/perf/app_vs_nvitop.py --load --seconds 30 --interval 1 --rounds 3 \
    --json "$out/app_vs_nvitop_busy.json" ${PREVIOUS:+--previous "$PREVIOUS"}
} 2>&1 | tee "$out/h200_busy_log.txt"
