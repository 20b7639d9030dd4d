#!/usr/bin/env bash
# The training-speed checks that need a GPU, in one script (about 8 minutes on one H200
# with 16 cores): the CUDA paths of the tests, the PPO update on the GPU (coupled,
# decoupled per group, decoupled stacked), quad-hover to a return of 474 with the learner
# on the GPU, and the training-throughput table of g1-pull at 2, 4, 8 and 16 threads with
# the learner on the GPU and on the CPU. Every step writes its output under OUT and goes
# on if one fails, so a partial run still reports what it measured (OUT/log.txt and the
# JSON files of the tables).
#
#     OUT=results/bench/gpu bash bench/gpu_checks.sh
#
# Run it from the repository root of an installed checkout (pip install -e .) on a machine
# where `torch.cuda.is_available()`.
set -uo pipefail
OUT=${OUT:-results/bench/gpu}
mkdir -p "$OUT"
export MUJOCO_GL=${MUJOCO_GL:-egl} PYOPENGL_PLATFORM=${PYOPENGL_PLATFORM:-egl} PYTHONUNBUFFERED=1
export CYCLONEDDS_URI=${CYCLONEDDS_URI:-file://$PWD/dds/loopback.xml}
py=${PYTHON:-python3}

step() {  # step NAME COMMAND...: run, append its output to OUT/log.txt, note its exit status
  local name=$1
  shift
  echo "== $name: $* ($(date -u +%T))" | tee -a "$OUT/log.txt"
  "$@" 2>&1 | tee -a "$OUT/log.txt"
  echo "== $name: exit ${PIPESTATUS[0]} ($(date -u +%T))" | tee -a "$OUT/log.txt"
}

{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  echo "cpus: $(nproc)"
  $py -c "import torch, mujoco; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'mujoco', mujoco.__version__)"
} 2>&1 | tee "$OUT/log.txt"

step tests $py -m pytest -q -p no:cacheprovider \
  tests/test_policies.py tests/test_distributed.py -k "device or stack or placement or gpu"
step decoupled_update_131k $py bench/decoupled_update.py --device cuda --samples 131072 --threads 16
step decoupled_update_32k $py bench/decoupled_update.py --device cuda --samples 32768 --threads 16
step scale_g1_pull_cuda $py bench/scale.py --training --task g1-pull --device cuda \
  --threads 2 4 8 16 --envs-per-thread 64 --iterations 3 --json "$OUT/scale_g1_pull_cuda.json"
step quad_hover_cuda $py bench/quad_hover_training.py --seeds 0 1 2 --minutes 1 \
  --out /tmp/qh --json "$OUT/quad_hover_cuda.json" --device cuda
step scale_g1_pull_cpu $py bench/scale.py --training --task g1-pull --device cpu \
  --threads 2 16 --envs-per-thread 64 --iterations 3 --json "$OUT/scale_g1_pull_cpu.json"
step engine_overhead_g1_force $py bench/engine_overhead.py --task g1-force --envs 1024 --steps 100 --rounds 3
